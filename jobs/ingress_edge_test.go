package jobs_test

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/miekg/dns"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"

	"github.com/kubebyon/kubebyon/internal/audit"
	"github.com/kubebyon/kubebyon/internal/checks"
	"github.com/kubebyon/kubebyon/internal/clusters"
	"github.com/kubebyon/kubebyon/internal/dnsrecords"
	"github.com/kubebyon/kubebyon/internal/ingress"
	"github.com/kubebyon/kubebyon/internal/settings"
	"github.com/kubebyon/kubebyon/internal/testenv"
	"github.com/kubebyon/kubebyon/queries"
)

// controllerPod makes (or changes) a pod of the managed ingress
// controller's DaemonSet in the virtual cluster, Ready or not, at ip.
func (b *ingressBundle) controllerPod(t *testing.T, name, ip string, ready bool) {
	t.Helper()
	ctx := context.Background()
	pods := b.vclient.CoreV1().Pods(ingress.Namespace)
	p, err := pods.Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		// No controller manager makes the namespace's default
		// ServiceAccount here, which a pod needs.
		sa := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "default"}}
		if _, err := b.vclient.CoreV1().ServiceAccounts(ingress.Namespace).Create(ctx, sa, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
			require.NoError(t, err)
		}
		p, err = pods.Create(ctx, &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Name: name, OwnerReferences: []metav1.OwnerReference{{
				APIVersion: "apps/v1", Kind: "DaemonSet", Name: "kubebyon-ingress", UID: "0b1d6d0e-0000-4000-8000-000000000001",
			}}},
			Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "controller", Image: "traefik:v3"}}},
		}, metav1.CreateOptions{})
		require.NoError(t, err)
	}
	status := corev1.ConditionFalse
	if ready {
		status = corev1.ConditionTrue
	}
	p.Status = corev1.PodStatus{
		Phase: corev1.PodRunning, PodIP: ip, PodIPs: []corev1.PodIP{{IP: ip}},
		Conditions: []corev1.PodCondition{{Type: corev1.PodReady, Status: status}},
	}
	_, err = pods.UpdateStatus(ctx, p, metav1.UpdateOptions{})
	require.NoError(t, err)
}

// edgeBundle is a cluster whose managed ingress is on, through the
// platform edge, its controller rolled out, with RFC 2136 DNS (Knot) and
// the Gateway API and cert-manager CRDs on the host.
type edgeBundle struct {
	*ingressBundle
	svc    *ingress.Service
	srv    *testenv.DNSServer
	host   dynamic.Interface
	ns     string
	actor  audit.Actor
	target string
}

func setupEdge(t *testing.T) *edgeBundle {
	t.Helper()
	b := setupIngress(t)
	ctx := context.Background()
	q := queries.New(b.pool)
	testenv.GatewayAPICRDs(t, b.host.Config)
	srv := testenv.Knot(t, "clusters.test")
	require.NoError(t, dnsrecords.Store(ctx, q, b.box, dnsrecords.Settings{
		Mode: dnsrecords.ModeRFC2136, Addresses: []string{"192.0.2.1"}, Server: srv.Addr, Zone: srv.Zone,
		KeyName: srv.KeyName, KeyAlgorithm: srv.KeyAlgorithm, KeySecret: srv.KeySecret, TTL: 60,
	}))
	rt, err := settings.Load(ctx, q, b.box)
	require.NoError(t, err)
	rt.APIBaseDomain = "k8s.clusters.test"
	require.NoError(t, settings.Save(ctx, q, b.box, rt))
	st, err := ingress.LoadSettings(ctx, q)
	require.NoError(t, err)
	st.GatewayClass, st.AppsBaseDomain = "eg", "apps.clusters.test"
	require.NoError(t, ingress.SaveSettings(ctx, q, st))
	target := b.c.Slug + ".apps.clusters.test"
	svc := &ingress.Service{
		Pool: b.pool, River: b.reconcileBundle.svc.River, Box: b.box, KubeconfigPath: b.kubecfg,
		DNS: &dnsrecords.Service{Pool: b.pool, Box: b.box, KubeconfigPath: b.kubecfg}, Virtual: b.reconcileBundle.svc.VirtualConfig,
	}
	actor := audit.Actor{UserID: b.owner.ID}
	host := dynamic.NewForConfigOrDie(b.host.Config)
	ns := clusters.Namespace(b.c)
	e := &edgeBundle{ingressBundle: b, svc: svc, srv: srv, host: host, ns: ns, actor: actor, target: target}

	_, err = svc.SetMode(ctx, b.c, ingress.ModeEdge, actor)
	require.NoError(t, err)
	require.True(t, e.edgeDue(t), "choosing the edge makes the check due")
	b.switchTo(t, true)
	next, err := svc.SyncEdge(ctx, b.c.ID)
	require.NoError(t, err)
	require.True(t, next.IsZero(), "nothing to route before the controller is ready")
	w := b.worker(t, time.Hour, nil)
	_, err = b.work(t, w)
	require.NoError(t, err)
	b.playRollout(t, 2, 2)
	_, err = b.work(t, w)
	require.NoError(t, err)
	require.Equal(t, ingress.StatusReady, b.state(t).Status)
	require.True(t, e.edgeDue(t), "the controller ready makes the check due")
	return e
}

// podAddrs are the addresses the cluster's EndpointSlices hold.
func (e *edgeBundle) podAddrs(t *testing.T) []string {
	t.Helper()
	list, err := e.host.Resource(schema.GroupVersionResource{Group: "discovery.k8s.io", Version: "v1", Resource: "endpointslices"}).Namespace(e.ns).
		List(context.Background(), metav1.ListOptions{LabelSelector: "kubernetes.io/service-name=" + ingress.EdgeService})
	require.NoError(t, err)
	var out []string
	for _, s := range list.Items {
		eps, _, _ := unstructured.NestedSlice(s.Object, "endpoints")
		for _, e := range eps {
			a, _, _ := unstructured.NestedStringSlice(e.(map[string]any), "addresses")
			out = append(out, a...)
		}
	}
	return out
}

// edgeDue reports whether the cluster's edge check is due.
func (e *edgeBundle) edgeDue(t *testing.T) bool {
	t.Helper()
	var due bool
	require.NoError(t, e.pool.QueryRow(context.Background(), `SELECT coalesce(bool_or(due_at <= now()), false) FROM cluster_checks WHERE cluster_id = $1 AND kind = $2`, e.c.ID, string(checks.IngressEdge)).Scan(&due))
	return due
}

// TestIngressEdge: a cluster whose managed ingress goes through the
// platform edge gets, on the real host apiserver, the shared Gateway and
// in its host namespace the routes of its host names and the
// EndpointSlices of its controller's Ready pods, which follow the pods
// created, changed and deleted in the virtual apiserver; what the
// Gateway's implementation says of the routes is recorded per host name;
// going back to direct takes it all out.
func TestIngressEdge(t *testing.T) {
	t.Parallel()
	e := setupEdge(t)
	b, svc, srv, host, ns, actor, target := e.ingressBundle, e.svc, e.srv, e.host, e.ns, e.actor, e.target
	ctx := context.Background()
	q := queries.New(b.pool)
	httpRoutes := host.Resource(schema.GroupVersionResource{Group: "gateway.networking.k8s.io", Version: "v1", Resource: "httproutes"}).Namespace(ns)
	podAddrs := func() []string { t.Helper(); return e.podAddrs(t) }

	b.controllerPod(t, "kubebyon-ingress-a", "10.128.0.10", true)
	b.controllerPod(t, "kubebyon-ingress-b", "10.128.1.10", true)
	b.controllerPod(t, "kubebyon-ingress-c", "10.128.2.10", false)
	_, err := svc.AddHostname(ctx, b.c, "shop.apps.clusters.test", actor)
	require.NoError(t, err)
	_, err = svc.AddHostname(ctx, b.c, "www.example.org", actor)
	require.NoError(t, err)
	next, err := svc.SyncEdge(ctx, b.c.ID)
	require.NoError(t, err)
	require.WithinDuration(t, time.Now().Add(ingress.EdgeInterval), next, 5*time.Second)
	require.Equal(t, []string{"10.128.0.10", "10.128.1.10"}, podAddrs(), "the Ready pods only")
	routes, err := httpRoutes.List(ctx, metav1.ListOptions{})
	require.NoError(t, err)
	require.Len(t, routes.Items, 2)
	row, err := q.IngressGet(ctx, b.c.ID)
	require.NoError(t, err)
	require.Equal(t, ingress.EdgePending, row.EdgeState)
	require.Contains(t, row.EdgeMessage, "not accepted by the Gateway yet")
	require.Contains(t, row.EdgeMessage, "wildcard certificate *.apps.clusters.test: issuing")
	// The wildcard certificate, from cert-manager on the host: DNS-01
	// through the DNS settings' RFC 2136 server and key.
	issuer, err := host.Resource(schema.GroupVersionResource{Group: "cert-manager.io", Version: "v1", Resource: "issuers"}).Namespace(ingress.EdgeNamespace).Get(ctx, ingress.EdgeIssuer, metav1.GetOptions{})
	require.NoError(t, err)
	solvers, _, _ := unstructured.NestedSlice(issuer.Object, "spec", "acme", "solvers")
	require.Len(t, solvers, 1)
	nameserver, _, _ := unstructured.NestedString(solvers[0].(map[string]any), "dns01", "rfc2136", "nameserver")
	require.Equal(t, srv.Addr, nameserver)
	alg, _, _ := unstructured.NestedString(solvers[0].(map[string]any), "dns01", "rfc2136", "tsigAlgorithm")
	require.Equal(t, "HMACSHA256", alg)
	certsRes := host.Resource(schema.GroupVersionResource{Group: "cert-manager.io", Version: "v1", Resource: "certificates"}).Namespace(ingress.EdgeNamespace)
	wildcard, err := certsRes.Get(ctx, ingress.WildcardSecret, metav1.GetOptions{})
	require.NoError(t, err)
	dnsNames, _, _ := unstructured.NestedStringSlice(wildcard.Object, "spec", "dnsNames")
	require.Equal(t, []string{"*.apps.clusters.test"}, dnsNames)
	wildcard.Object["status"] = map[string]any{"notAfter": time.Now().UTC().Add(90 * 24 * time.Hour).Format(time.RFC3339), "conditions": []any{
		map[string]any{"type": "Ready", "status": "True", "reason": "Ready", "message": "Certificate is up to date and has not expired", "lastTransitionTime": "2026-12-02T00:00:00Z"},
	}}
	_, err = certsRes.UpdateStatus(ctx, wildcard, metav1.UpdateOptions{})
	require.NoError(t, err)
	require.Equal(t, "IngressEdgeChanged", lastOf(b.reasons(t, b.c.ID)))

	// The Gateway's implementation accepts every route.
	for _, gvr := range []schema.GroupVersionResource{
		{Group: "gateway.networking.k8s.io", Version: "v1", Resource: "httproutes"},
		{Group: "gateway.networking.k8s.io", Version: "v1", Resource: "tlsroutes"},
	} {
		list, err := host.Resource(gvr).Namespace(ns).List(ctx, metav1.ListOptions{})
		require.NoError(t, err)
		for _, r := range list.Items {
			r.Object["status"] = map[string]any{"parents": []any{map[string]any{
				"parentRef":      map[string]any{"group": "gateway.networking.k8s.io", "kind": "Gateway", "namespace": ingress.EdgeNamespace, "name": ingress.GatewayName},
				"controllerName": "gateway.envoyproxy.io/gatewayclass-controller",
				"conditions": []any{
					map[string]any{"type": "Accepted", "status": "True", "reason": "Accepted", "message": "", "lastTransitionTime": "2026-12-02T00:00:00Z"},
					map[string]any{"type": "ResolvedRefs", "status": "True", "reason": "ResolvedRefs", "message": "", "lastTransitionTime": "2026-12-02T00:00:00Z"},
				},
			}}}
			_, err = host.Resource(gvr).Namespace(ns).UpdateStatus(ctx, &r, metav1.UpdateOptions{})
			require.NoError(t, err)
		}
	}
	// And the Gateway (its status starts as the CRD's default: Accepted
	// and Programmed Unknown, "Waiting for controller").
	gwRes := host.Resource(schema.GroupVersionResource{Group: "gateway.networking.k8s.io", Version: "v1", Resource: "gateways"}).Namespace(ingress.EdgeNamespace)
	gw, err := gwRes.Get(ctx, ingress.GatewayName, metav1.GetOptions{})
	require.NoError(t, err)
	gatewayConds := []any{
		map[string]any{"type": "Accepted", "status": "True", "reason": "Accepted", "message": "", "lastTransitionTime": "2026-12-02T00:00:00Z"},
		map[string]any{"type": "Programmed", "status": "True", "reason": "Programmed", "message": "", "lastTransitionTime": "2026-12-02T00:00:00Z"},
	}
	gw.Object["status"] = map[string]any{"conditions": gatewayConds}
	_, err = gwRes.UpdateStatus(ctx, gw, metav1.UpdateOptions{})
	require.NoError(t, err)
	// The shared Gateway and certificate are read again after a minute.
	expireShared := func() {
		t.Helper()
		_, err := b.pool.Exec(ctx, `UPDATE settings SET value = jsonb_set(value, '{checked}', '"2000-01-01T00:00:00Z"') WHERE key = 'edge_shared'`)
		require.NoError(t, err)
	}
	expireShared()
	// A pod goes, another becomes Ready.
	require.NoError(t, b.vclient.CoreV1().Pods(ingress.Namespace).Delete(ctx, "kubebyon-ingress-a", metav1.DeleteOptions{}))
	b.controllerPod(t, "kubebyon-ingress-c", "10.128.2.10", true)
	_, err = svc.SyncEdge(ctx, b.c.ID)
	require.NoError(t, err)
	require.Equal(t, []string{"10.128.1.10", "10.128.2.10"}, podAddrs())
	row, err = q.IngressGet(ctx, b.c.ID)
	require.NoError(t, err)
	require.Equal(t, ingress.EdgeRouted, row.EdgeState, row.EdgeMessage)
	require.Empty(t, row.EdgeMessage, "the wildcard certificate is ready")
	require.Equal(t, []string{"10.128.1.10", "10.128.2.10"}, row.EdgePods)
	names, err := q.HostnameListByCluster(ctx, b.c.ID)
	require.NoError(t, err)
	for _, n := range names {
		require.Equal(t, "ok", n.EdgeStatus, n.Name)
	}

	// The Gateway gets its address: the CNAME target's records hold it.
	gw, err = gwRes.Get(ctx, ingress.GatewayName, metav1.GetOptions{})
	require.NoError(t, err)
	// Its https listener is not programmed yet: the name under the apps
	// base domain says so; the other (its TLS passed through) is routed.
	listener := func(name, programmed string) any {
		return map[string]any{"name": name, "attachedRoutes": int64(1), "supportedKinds": []any{map[string]any{"kind": "HTTPRoute"}}, "conditions": []any{
			map[string]any{"type": "Programmed", "status": programmed, "reason": "Pending", "message": "waiting for the data plane", "lastTransitionTime": "2026-12-02T00:00:00Z"},
		}}
	}
	gw.Object["status"] = map[string]any{
		"addresses":  []any{map[string]any{"type": "IPAddress", "value": "198.51.100.10"}},
		"conditions": gatewayConds,
		"listeners":  []any{listener("http", "True"), listener("https", "False"), listener("tls", "True")},
	}
	gw, err = gwRes.UpdateStatus(ctx, gw, metav1.UpdateOptions{})
	require.NoError(t, err)
	_, err = b.pool.Exec(ctx, `UPDATE cluster_checks SET due_at = now() + interval '1 hour' WHERE cluster_id = $1 AND kind = $2`, b.c.ID, string(checks.IngressDNS))
	require.NoError(t, err)
	_, err = svc.SyncEdge(ctx, b.c.ID)
	require.NoError(t, err)
	row, err = q.IngressGet(ctx, b.c.ID)
	require.NoError(t, err)
	require.Empty(t, row.EdgeGateway, "within a minute, the shared state read last stands")
	expireShared()
	_, err = svc.SyncEdge(ctx, b.c.ID)
	require.NoError(t, err)
	var dnsDue bool
	require.NoError(t, b.pool.QueryRow(ctx, `SELECT due_at <= now() FROM cluster_checks WHERE cluster_id = $1 AND kind = $2`, b.c.ID, string(checks.IngressDNS)).Scan(&dnsDue))
	require.True(t, dnsDue, "a new Gateway address makes the DNS check due")
	_, err = svc.SyncDNS(ctx, b.c.ID)
	require.NoError(t, err)
	require.Equal(t, []string{"198.51.100.10"}, srv.Lookup(t, target, dns.TypeA))
	row, err = q.IngressGet(ctx, b.c.ID)
	require.NoError(t, err)
	require.Equal(t, ingress.EdgePending, row.EdgeState)
	require.Equal(t, "shop.apps.clusters.test: Gateway listener https Programmed: Pending (waiting for the data plane)", row.EdgeMessage)
	names, err = q.HostnameListByCluster(ctx, b.c.ID)
	require.NoError(t, err)
	edgeStatus := map[string]string{}
	for _, n := range names {
		edgeStatus[n.Name] = n.EdgeStatus
	}
	require.Equal(t, map[string]string{
		"shop.apps.clusters.test": "Gateway listener https Programmed: Pending (waiting for the data plane)",
		"www.example.org":         "ok",
	}, edgeStatus)
	gw.Object["status"].(map[string]any)["listeners"].([]any)[1] = listener("https", "True")
	_, err = gwRes.UpdateStatus(ctx, gw, metav1.UpdateOptions{})
	require.NoError(t, err)
	expireShared()
	_, err = svc.SyncEdge(ctx, b.c.ID)
	require.NoError(t, err)
	row, err = q.IngressGet(ctx, b.c.ID)
	require.NoError(t, err)
	require.Equal(t, ingress.EdgeRouted, row.EdgeState, row.EdgeMessage)

	// A new rollout of the controller (its nodes changed) or an upgrade
	// of the cluster keeps the pods that serve routed.
	_, err = b.pool.Exec(ctx, `UPDATE cluster_ingress SET status = 'installing' WHERE cluster_id = $1`, b.c.ID)
	require.NoError(t, err)
	_, err = b.pool.Exec(ctx, `UPDATE clusters SET status = 'updating' WHERE id = $1`, b.c.ID)
	require.NoError(t, err)
	_, err = svc.SyncEdge(ctx, b.c.ID)
	require.NoError(t, err)
	require.Equal(t, []string{"10.128.1.10", "10.128.2.10"}, podAddrs())
	_, err = b.pool.Exec(ctx, `UPDATE clusters SET status = 'ready' WHERE id = $1`, b.c.ID)
	require.NoError(t, err)

	// The host cannot be reached: said once in the history, recorded,
	// and backed off; the next good run routes again.
	broken := *svc
	broken.KubeconfigPath = filepath.Join(t.TempDir(), "missing.kubeconfig")
	for range 2 {
		_, err = broken.SyncEdge(ctx, b.c.ID)
		var unreachable *checks.UnreachableError
		require.ErrorAs(t, err, &unreachable)
	}
	row, err = q.IngressGet(ctx, b.c.ID)
	require.NoError(t, err)
	require.Equal(t, ingress.EdgeError, row.EdgeState)
	require.Contains(t, row.EdgeMessage, "reach the host cluster")
	reasons := b.reasons(t, b.c.ID)
	require.Len(t, slices.DeleteFunc(slices.Clone(reasons), func(r string) bool { return r != "IngressEdgeError" }), 1, "once")
	// The owner retries now: the check runs at once, routes again, and
	// its backoff starts over.
	var failures int
	require.NoError(t, b.pool.QueryRow(ctx, `SELECT failures FROM cluster_checks WHERE cluster_id = $1 AND kind = $2`, b.c.ID, string(checks.IngressEdge)).Scan(&failures))
	require.Zero(t, failures, "SyncEdge alone does not count failures")
	_, err = b.pool.Exec(ctx, `UPDATE cluster_checks SET failures = 3, due_at = now() + interval '8 minutes' WHERE cluster_id = $1 AND kind = $2`, b.c.ID, string(checks.IngressEdge))
	require.NoError(t, err)
	written, err := svc.RetryEdge(ctx, b.c, actor)
	require.NoError(t, err)
	require.True(t, written)
	row, err = q.IngressGet(ctx, b.c.ID)
	require.NoError(t, err)
	require.Equal(t, ingress.EdgeRouted, row.EdgeState)
	var dueIn time.Duration
	require.NoError(t, b.pool.QueryRow(ctx, `SELECT failures, extract(epoch FROM due_at - now())::bigint * interval '1 second' FROM cluster_checks WHERE cluster_id = $1 AND kind = $2`, b.c.ID, string(checks.IngressEdge)).Scan(&failures, &dueIn))
	require.Zero(t, failures)
	require.LessOrEqual(t, dueIn, ingress.EdgeInterval)
	require.Contains(t, b.reasons(t, b.c.ID), "IngressEdgeRetried")
	var audited int
	require.NoError(t, b.pool.QueryRow(ctx, `SELECT count(*) FROM audit_events WHERE action = 'cluster.managed_ingress_edge_retry' AND target_id = $1`, fmt.Sprint(b.c.ID)).Scan(&audited))
	require.Equal(t, 1, audited)
	_, err = svc.RetryEdge(ctx, b.c, actor)
	require.ErrorIs(t, err, ingress.ErrEdgeNotFailed, "routed: nothing to retry")

	// Back to direct: none of it stays.
	_, err = svc.SetMode(ctx, b.c, ingress.ModeDirect, actor)
	require.NoError(t, err)
	next, err = svc.SyncEdge(ctx, b.c.ID)
	require.NoError(t, err)
	require.True(t, next.IsZero())
	require.Empty(t, podAddrs())
	routes, err = httpRoutes.List(ctx, metav1.ListOptions{})
	require.NoError(t, err)
	require.Empty(t, routes.Items, fmt.Sprint(routes.Items))
	row, err = q.IngressGet(ctx, b.c.ID)
	require.NoError(t, err)
	require.Empty(t, row.EdgeState)
	require.Equal(t, "IngressEdgeRemoved", lastOf(b.reasons(t, b.c.ID)))
	// Direct again: the records follow the nodes (none Ready here).
	_, err = svc.SyncDNS(ctx, b.c.ID)
	require.NoError(t, err)
	require.Empty(t, srv.Lookup(t, target, dns.TypeA))
}

// TestIngressEdgeFollowsPods: the edge pod watch, held by one of two
// processes, makes the cluster's edge check due within seconds of its
// controller's pods being created, changed and deleted in the virtual
// apiserver (and not for a change that leaves the Ready addresses as they
// are); the check then brings the EndpointSlices in step. When the
// watching process stops, the other takes over.
func TestIngressEdgeFollowsPods(t *testing.T) {
	t.Parallel()
	e := setupEdge(t)
	ctx := context.Background()
	notDue := func() {
		t.Helper()
		_, err := e.pool.Exec(ctx, `UPDATE cluster_checks SET due_at = now() + interval '1 hour' WHERE cluster_id = $1 AND kind = $2`, e.c.ID, string(checks.IngressEdge))
		require.NoError(t, err)
	}
	sync := func(want ...string) {
		t.Helper()
		require.Eventually(t, func() bool { return e.edgeDue(t) }, 10*time.Second, 20*time.Millisecond, "the watch makes the check due")
		notDue()
		_, err := e.svc.SyncEdge(ctx, e.c.ID)
		require.NoError(t, err)
		require.Equal(t, want, e.podAddrs(t))
	}
	// The shared Gateway and Issuer are the host's, which TestIngressEdge
	// writes at the same time with its own DNS server: here their state
	// stands as read (fresh for an hour), and this test leaves them alone.
	_, err := e.pool.Exec(ctx, `INSERT INTO settings (key, value) VALUES ('edge_shared', $1)
		ON CONFLICT (key) DO UPDATE SET value = EXCLUDED.value`,
		fmt.Sprintf(`{"class":"eg","domain":"apps.clusters.test","gateway":{"addresses":[]},"wildcard":{"state":"ready"},"checked":%q}`,
			time.Now().Add(time.Hour).UTC().Format(time.RFC3339)))
	require.NoError(t, err)
	e.controllerPod(t, "kubebyon-ingress-a", "10.128.0.10", true)
	_, err = e.svc.SyncEdge(ctx, e.c.ID)
	require.NoError(t, err)
	require.Equal(t, []string{"10.128.0.10"}, e.podAddrs(t))
	notDue()

	logger := slog.New(slog.NewTextHandler(io.Discard, nil))
	firstCtx, stopFirst := context.WithCancel(ctx)
	first := &ingress.PodWatch{Pool: e.pool, Virtual: e.svc.Virtual, Logger: logger, Refresh: 100 * time.Millisecond}
	firstDone := make(chan struct{})
	go func() { defer close(firstDone); first.Run(firstCtx) }()
	t.Cleanup(func() { stopFirst(); <-firstDone })
	require.Eventually(t, func() bool { return slices.Equal(first.Watching(), []int64{e.c.ID}) }, 10*time.Second, 20*time.Millisecond)
	secondCtx, stopSecond := context.WithCancel(ctx)
	second := &ingress.PodWatch{Pool: e.pool, Virtual: e.svc.Virtual, Logger: logger, Refresh: 100 * time.Millisecond}
	secondDone := make(chan struct{})
	go func() { defer close(secondDone); second.Run(secondCtx) }()
	t.Cleanup(func() { stopSecond(); <-secondDone })

	// Created and Ready.
	e.controllerPod(t, "kubebyon-ingress-b", "10.128.1.10", true)
	sync("10.128.0.10", "10.128.1.10")
	// Changed: no longer Ready.
	e.controllerPod(t, "kubebyon-ingress-a", "10.128.0.10", false)
	sync("10.128.1.10")
	// A change that leaves the Ready addresses as they are.
	e.controllerPod(t, "kubebyon-ingress-a", "10.128.0.11", false)
	time.Sleep(500 * time.Millisecond)
	require.False(t, e.edgeDue(t), "the Ready pods are the same")
	// Deleted.
	require.NoError(t, e.vclient.CoreV1().Pods(ingress.Namespace).Delete(ctx, "kubebyon-ingress-b", metav1.DeleteOptions{}))
	sync()
	require.Empty(t, second.Watching(), "one process watches")

	// The watching process stops: the other takes over and follows.
	stopFirst()
	<-firstDone
	require.Eventually(t, func() bool { return slices.Equal(second.Watching(), []int64{e.c.ID}) }, 10*time.Second, 20*time.Millisecond)
	e.controllerPod(t, "kubebyon-ingress-a", "10.128.0.11", true)
	sync("10.128.0.11")

	// Back to direct: no longer watched.
	_, err = e.svc.SetMode(ctx, e.c, ingress.ModeDirect, e.actor)
	require.NoError(t, err)
	_, err = e.svc.SyncEdge(ctx, e.c.ID)
	require.NoError(t, err)
	require.Eventually(t, func() bool { return len(second.Watching()) == 0 }, 10*time.Second, 20*time.Millisecond)
}
