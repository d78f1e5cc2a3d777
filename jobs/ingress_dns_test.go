package jobs_test

import (
	"context"
	"crypto/rand"
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/miekg/dns"
	"github.com/riverqueue/river"
	"github.com/riverqueue/river/riverdriver/riverpgxv5"
	"github.com/riverqueue/river/rivertest"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/dynamic"

	"github.com/kubebyon/kubebyon/internal/audit"
	"github.com/kubebyon/kubebyon/internal/checks"
	"github.com/kubebyon/kubebyon/internal/dnsrecords"
	"github.com/kubebyon/kubebyon/internal/ingress"
	"github.com/kubebyon/kubebyon/internal/nodes"
	"github.com/kubebyon/kubebyon/internal/settings"
	"github.com/kubebyon/kubebyon/internal/testenv"
	"github.com/kubebyon/kubebyon/jobs"
	"github.com/kubebyon/kubebyon/queries"
)

// ingressNode makes (or changes) a Node of the virtual cluster: Ready or
// not, with an ExternalIP when external is set.
func (b *ingressBundle) ingressNode(t *testing.T, name string, ready corev1.ConditionStatus, external string) {
	t.Helper()
	ctx := context.Background()
	kc := b.vclient
	n, err := kc.CoreV1().Nodes().Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		n, err = kc.CoreV1().Nodes().Create(ctx, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{})
		require.NoError(t, err)
	}
	n.Status = corev1.NodeStatus{
		Conditions: []corev1.NodeCondition{{Type: corev1.NodeReady, Status: ready, LastHeartbeatTime: metav1.Now(), LastTransitionTime: metav1.Now()}},
		Addresses:  []corev1.NodeAddress{{Type: corev1.NodeInternalIP, Address: "10.0.0.1"}},
	}
	if external != "" {
		n.Status.Addresses = append(n.Status.Addresses, corev1.NodeAddress{Type: corev1.NodeExternalIP, Address: external})
	}
	_, err = kc.CoreV1().Nodes().UpdateStatus(ctx, n, metav1.UpdateOptions{})
	require.NoError(t, err)
}

// TestIngressDNSFollowsNodes: the CNAME target's records, on a real Knot
// server, are the public addresses of the cluster's Ready ingress nodes
// (every Ready node when none is marked): they follow a node going
// NotReady and back through the health job, follow the nodes the user
// marks and the addresses the user gives them, are put back when changed
// behind the platform's back, and go when managed ingress is switched
// off; the cluster's history says each change.
func TestIngressDNSFollowsNodes(t *testing.T) {
	t.Parallel()
	b := setupIngress(t)
	ctx := context.Background()
	q := queries.New(b.pool)
	srv := testenv.Knot(t, "clusters.test")
	require.NoError(t, dnsrecords.Store(ctx, q, b.box, dnsrecords.Settings{
		Mode: dnsrecords.ModeRFC2136, Addresses: []string{"192.0.2.1"}, Server: srv.Addr, Zone: srv.Zone,
		KeyName: srv.KeyName, KeyAlgorithm: srv.KeyAlgorithm, KeySecret: srv.KeySecret, TTL: 60,
	}))
	st, err := ingress.LoadSettings(ctx, q)
	require.NoError(t, err)
	st.AppsBaseDomain = "apps.clusters.test"
	require.NoError(t, ingress.SaveSettings(ctx, q, st))
	name := b.c.Slug + ".apps.clusters.test"
	nodeSvc := &nodes.Service{Pool: b.pool, River: b.reconcileBundle.svc.River, Clusters: b.reconcileBundle.svc}
	due, checkHealth, syncDNS := b.dnsWorkers(t)
	records := func() []string {
		t.Helper()
		return append(srv.Lookup(t, name, dns.TypeA), srv.Lookup(t, name, dns.TypeAAAA)...)
	}

	b.ingressNode(t, "n1", corev1.ConditionTrue, "203.0.113.1")
	b.ingressNode(t, "n2", corev1.ConditionTrue, "203.0.113.2")
	b.ingressNode(t, "n3", corev1.ConditionFalse, "203.0.113.3")
	b.ingressNode(t, "n4", corev1.ConditionTrue, "")
	healthIn := func() time.Duration {
		t.Helper()
		var secs float64
		require.NoError(t, b.pool.QueryRow(ctx, `SELECT extract(epoch FROM due_at - now())::float8 FROM cluster_checks WHERE cluster_id = $1 AND kind = $2`, b.c.ID, string(checks.NodeHealth)).Scan(&secs))
		return time.Duration(secs * float64(time.Second))
	}
	checkHealth()
	require.InDelta(t, nodes.HealthInterval.Seconds(), healthIn().Seconds(), 5, "managed ingress off: the usual interval")
	b.switchTo(t, true)
	require.True(t, due(), "switching on publishes the CNAME target")
	checkHealth()
	// A node gone NotReady leaves the records within a minute: the nodes
	// are checked every 30 s while managed ingress is on, and the DNS
	// check that a change makes due runs at once.
	require.InDelta(t, nodes.IngressHealthInterval.Seconds(), healthIn().Seconds(), 5, "managed ingress on: the shorter interval")
	syncDNS()
	require.ElementsMatch(t, []string{"203.0.113.1", "203.0.113.2"}, records(), "every Ready node with a public address")
	s := b.state(t)
	require.Equal(t, ingress.DNSPublished, s.DNSState)
	require.Equal(t, []string{"203.0.113.1", "203.0.113.2"}, s.DNSAddresses)
	require.Equal(t, "IngressDNSChanged", lastOf(b.reasons(t, b.c.ID)))
	require.False(t, due())

	// n2 goes NotReady: the health job makes the check due, which takes
	// it out of the records.
	b.ingressNode(t, "n2", corev1.ConditionFalse, "203.0.113.2")
	checkHealth()
	require.True(t, due(), "the health job saw the change")
	syncDNS()
	require.Equal(t, []string{"203.0.113.1"}, records())
	// And back.
	b.ingressNode(t, "n2", corev1.ConditionTrue, "203.0.113.2")
	checkHealth()
	syncDNS()
	require.ElementsMatch(t, []string{"203.0.113.1", "203.0.113.2"}, records())
	// Nothing changed: the health job leaves the check alone.
	checkHealth()
	require.False(t, due())

	// The user marks n4, which has no ExternalIP, with a public address:
	// only it serves now, and the controller follows (a new generation).
	gen := b.generation(t)
	err = nodeSvc.SetIngress(ctx, b.c, "n4", true, "2001:db8::4", audit.Actor{UserID: b.owner.ID})
	require.NoError(t, err)
	require.Equal(t, gen+1, b.generation(t), "the controller moves to the marked nodes")
	require.True(t, due())
	syncDNS()
	require.Equal(t, []string{"2001:db8::4"}, records())
	err = nodeSvc.SetIngress(ctx, b.c, "n4", true, "not an address", audit.Actor{UserID: b.owner.ID})
	require.Error(t, err)
	// A second marked node changes the records, not the controller.
	err = nodeSvc.SetIngress(ctx, b.c, "n1", true, "", audit.Actor{UserID: b.owner.ID})
	require.NoError(t, err)
	require.Equal(t, gen+1, b.generation(t))
	syncDNS()
	require.ElementsMatch(t, []string{"203.0.113.1", "2001:db8::4"}, records())

	// Changed behind the platform's back: put back, and said so.
	w := &dnsrecords.RFC2136{Server: srv.Addr, Zone: srv.Zone, KeyName: srv.KeyName, Algorithm: srv.KeyAlgorithm, Secret: srv.KeySecret, TTL: 60}
	require.NoError(t, w.Set(ctx, name, []netip.Addr{netip.MustParseAddr("192.0.2.99")}))
	syncDNS()
	require.ElementsMatch(t, []string{"203.0.113.1", "2001:db8::4"}, records())
	require.Equal(t, "IngressDNSRestored", lastOf(b.reasons(t, b.c.ID)))

	// Off: the records go.
	b.switchTo(t, false)
	syncDNS()
	require.Empty(t, records())
	require.Equal(t, "IngressDNSRemoved", lastOf(b.reasons(t, b.c.ID)))
	require.Equal(t, ingress.DNSRemoved, b.state(t).DNSState)
}

// dnsWorkers returns whether the cluster's CNAME target check is due, and
// runs the node health job and the CNAME target's check on it, each in a
// transaction of its own.
func (b *ingressBundle) dnsWorkers(t *testing.T) (due func() bool, checkHealth, syncDNS func()) {
	ctx := context.Background()
	dnsSvc := &ingress.Service{Pool: b.pool, DNS: &dnsrecords.Service{Pool: b.pool, Box: b.box, KubeconfigPath: b.kubecfg}}
	health := rivertest.NewWorker(t, riverpgxv5.New(b.pool), &river.Config{}, &jobs.NodeHealthWorker{
		Pool: b.pool, Logger: b.logger, Box: b.box, Threshold: time.Hour, VirtualConfig: b.reconcileBundle.svc.VirtualConfig,
	})
	dnsWorker := rivertest.NewWorker(t, riverpgxv5.New(b.pool), &river.Config{}, &jobs.IngressDNSWorker{Ingress: dnsSvc})
	due = func() bool {
		t.Helper()
		var due bool
		require.NoError(t, b.pool.QueryRow(ctx, `SELECT coalesce(bool_or(due_at <= now()), false) FROM cluster_checks WHERE cluster_id = $1 AND kind = $2`, b.c.ID, string(checks.IngressDNS)).Scan(&due))
		return due
	}
	checkHealth = func() {
		t.Helper()
		tx, err := b.pool.Begin(ctx)
		require.NoError(t, err)
		_, err = health.Work(ctx, t, tx, nodes.HealthArgs{ClusterID: b.c.ID}, nil)
		require.NoError(t, err)
		require.NoError(t, tx.Commit(ctx))
	}
	syncDNS = func() {
		t.Helper()
		tx, err := b.pool.Begin(ctx)
		require.NoError(t, err)
		res, err := dnsWorker.Work(ctx, t, tx, ingress.DNSArgs{ClusterID: b.c.ID}, nil)
		require.NoError(t, err)
		require.Equal(t, river.EventKindJobCompleted, res.EventKind)
		require.NoError(t, tx.Commit(ctx))
	}
	return due, checkHealth, syncDNS
}

// TestIngressDNSExternalDNS: with the DNS settings in external-dns mode,
// the CNAME target is a DNSEndpoint on the host cluster whose A and AAAA
// endpoints follow the Ready ingress nodes, a host name under the apps
// base domain is a DNSEndpoint with its CNAME (put back after a delete
// behind the platform's back, "recovered"), and both go with the name and
// the switch.
func TestIngressDNSExternalDNS(t *testing.T) {
	t.Parallel()
	b := setupIngress(t)
	ctx := context.Background()
	q := queries.New(b.pool)
	testenv.ExternalDNSCRD(t, b.host.Config)
	ns := "dns-ingress-" + strings.ToLower(rand.Text()[:8])
	require.NoError(t, dnsrecords.Store(ctx, q, b.box, dnsrecords.Settings{
		Mode: dnsrecords.ModeExternalDNS, Addresses: []string{"192.0.2.1"}, Namespace: ns, TTL: 60,
	}))
	rt, err := settings.Load(ctx, q, b.box)
	require.NoError(t, err)
	rt.APIBaseDomain = "k8s.clusters.test"
	require.NoError(t, settings.Save(ctx, q, b.box, rt))
	st, err := ingress.LoadSettings(ctx, q)
	require.NoError(t, err)
	st.AppsBaseDomain = "apps.clusters.test"
	require.NoError(t, ingress.SaveSettings(ctx, q, st))
	target := b.c.Slug + ".apps.clusters.test"
	endpoints := dynamic.NewForConfigOrDie(b.host.Config).Resource(dnsrecords.DNSEndpoints).Namespace(ns)
	records := func(name string) map[string][]string {
		t.Helper()
		obj, err := endpoints.Get(ctx, name, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return nil
		}
		require.NoError(t, err)
		eps, _, _ := unstructured.NestedSlice(obj.Object, "spec", "endpoints")
		out := map[string][]string{}
		for _, raw := range eps {
			ep := raw.(map[string]any)
			require.Equal(t, name, ep["dnsName"])
			typ, _ := ep["recordType"].(string)
			targets, _, _ := unstructured.NestedStringSlice(ep, "targets")
			out[typ] = targets
		}
		return out
	}
	_, checkHealth, syncDNS := b.dnsWorkers(t)

	b.ingressNode(t, "n1", corev1.ConditionTrue, "203.0.113.1")
	b.ingressNode(t, "n2", corev1.ConditionTrue, "2001:db8::2")
	b.switchTo(t, true)
	checkHealth()
	syncDNS()
	require.Equal(t, map[string][]string{"A": {"203.0.113.1"}, "AAAA": {"2001:db8::2"}}, records(target))
	require.Equal(t, ingress.DNSPublished, b.state(t).DNSState)
	b.ingressNode(t, "n1", corev1.ConditionFalse, "203.0.113.1")
	checkHealth()
	syncDNS()
	require.Equal(t, map[string][]string{"AAAA": {"2001:db8::2"}}, records(target), "a NotReady node leaves the records")

	svc := &ingress.Service{Pool: b.pool, River: b.reconcileBundle.svc.River, Box: b.box, DNS: &dnsrecords.Service{Pool: b.pool, Box: b.box, KubeconfigPath: b.kubecfg}}
	actor := audit.Actor{UserID: b.owner.ID}
	_, err = svc.AddHostname(ctx, b.c, "shop.apps.clusters.test", actor)
	require.NoError(t, err)
	require.NoError(t, svc.RunHostnamesCheck(ctx, b.c.ID, nil))
	require.Equal(t, map[string][]string{"CNAME": {target}}, records("shop.apps.clusters.test"))
	names, err := svc.Hostnames(ctx, b.c.ID)
	require.NoError(t, err)
	require.Equal(t, ingress.HostnameVerified, names[0].State)
	require.NoError(t, endpoints.Delete(ctx, "shop.apps.clusters.test", metav1.DeleteOptions{}))
	require.NoError(t, svc.RunHostnamesCheck(ctx, b.c.ID, nil))
	require.Equal(t, map[string][]string{"CNAME": {target}}, records("shop.apps.clusters.test"), "put back")
	require.Contains(t, b.reasons(t, b.c.ID), "HostnameRecovered")

	require.NoError(t, svc.RemoveHostname(ctx, b.c, "shop.apps.clusters.test", actor))
	require.NoError(t, svc.RunHostnamesCheck(ctx, b.c.ID, nil))
	require.Nil(t, records("shop.apps.clusters.test"), "the removed name's record goes")
	b.switchTo(t, false)
	syncDNS()
	require.Nil(t, records(target), "switched off: the CNAME target goes")
}

func (b *ingressBundle) generation(t *testing.T) int64 {
	t.Helper()
	row, err := queries.New(b.pool).IngressGet(context.Background(), b.c.ID)
	require.NoError(t, err)
	return row.Generation
}
