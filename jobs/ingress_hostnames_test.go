package jobs_test

import (
	"context"
	"net/netip"
	"testing"
	"time"

	"github.com/miekg/dns"
	"github.com/riverqueue/river"
	"github.com/stretchr/testify/require"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"

	"github.com/kubebyon/kubebyon/internal/audit"
	"github.com/kubebyon/kubebyon/internal/clusters"
	"github.com/kubebyon/kubebyon/internal/dnsrecords"
	"github.com/kubebyon/kubebyon/internal/ingress"
	"github.com/kubebyon/kubebyon/internal/input"
	"github.com/kubebyon/kubebyon/internal/notify"
	"github.com/kubebyon/kubebyon/internal/settings"
	"github.com/kubebyon/kubebyon/internal/testenv"
	"github.com/kubebyon/kubebyon/queries"
)

// TestIngressHostnames binds host names on a real Knot server: a name
// under the apps base domain gets its CNAME from the platform, put back
// after a manual delete; an outside name is pending until the test
// publishes its CNAME, then verified, and wrong (saying where it points)
// when it points elsewhere; an apex name with the target's addresses is
// verified. A name is bound to one cluster on the platform; the names the
// platform uses are refused; a removed name's CNAME goes.
func TestIngressHostnames(t *testing.T) {
	t.Parallel()
	b := setupIngress(t)
	ctx := context.Background()
	q := queries.New(b.pool)
	srv := testenv.Knot(t, "clusters.test")
	require.NoError(t, dnsrecords.Store(ctx, q, b.box, dnsrecords.Settings{
		Mode: dnsrecords.ModeRFC2136, Addresses: []string{"192.0.2.1"}, Resolver: srv.Addr, Server: srv.Addr, Zone: srv.Zone,
		KeyName: srv.KeyName, KeyAlgorithm: srv.KeyAlgorithm, KeySecret: srv.KeySecret, TTL: 60,
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
	svc := &ingress.Service{Pool: b.pool, River: b.reconcileBundle.svc.River, Box: b.box, DNS: &dnsrecords.Service{Pool: b.pool, Box: b.box},
		PlatformHost: "kubebyon.clusters.test"}
	actor := audit.Actor{UserID: b.owner.ID}
	w := &dnsrecords.RFC2136{Server: srv.Addr, Zone: srv.Zone, KeyName: srv.KeyName, Algorithm: srv.KeyAlgorithm, Secret: srv.KeySecret, TTL: 60}
	check := func() map[string]ingress.Hostname {
		t.Helper()
		require.NoError(t, svc.RunHostnamesCheck(ctx, b.c.ID, nil))
		names, err := svc.Hostnames(ctx, b.c.ID)
		require.NoError(t, err)
		out := map[string]ingress.Hostname{}
		for _, n := range names {
			out[n.Name] = n
		}
		return out
	}
	field := func(err error) string {
		t.Helper()
		var fe input.Errors
		require.ErrorAs(t, err, &fe)
		return fe["name"]
	}

	_, err = svc.AddHostname(ctx, b.c, "shop.apps.clusters.test", actor)
	require.ErrorIs(t, err, ingress.ErrIngressOff, "managed ingress must be on")
	b.switchTo(t, true)

	// Under the apps base domain: the platform writes the CNAME.
	h, err := svc.AddHostname(ctx, b.c, " Shop.Apps.Clusters.Test. ", actor)
	require.NoError(t, err)
	require.Equal(t, "shop.apps.clusters.test", h.Name)
	require.True(t, h.Managed)
	require.Equal(t, ingress.HostnamePending, h.State)
	names := check()
	require.Equal(t, ingress.HostnameVerified, names["shop.apps.clusters.test"].State)
	require.Equal(t, []string{target + "."}, srv.Lookup(t, "shop.apps.clusters.test", dns.TypeCNAME))
	require.NoError(t, w.RemoveCNAME(ctx, "shop.apps.clusters.test"))
	check()
	require.Equal(t, []string{target + "."}, srv.Lookup(t, "shop.apps.clusters.test", dns.TypeCNAME), "repaired")
	require.Equal(t, "HostnameRecovered", lastOf(b.reasons(t, b.c.ID)))

	// Outside: pending, then verified once its CNAME is there.
	_, err = svc.AddHostname(ctx, b.c, "www.clusters.test", actor)
	require.NoError(t, err)
	names = check()
	require.Equal(t, ingress.HostnamePending, names["www.clusters.test"].State)
	require.False(t, names["www.clusters.test"].Managed)
	require.NoError(t, w.SetCNAME(ctx, "www.clusters.test", target))
	names = check()
	require.Equal(t, ingress.HostnameVerified, names["www.clusters.test"].State)
	require.NoError(t, w.SetCNAME(ctx, "www.clusters.test", "elsewhere.clusters.test"))
	names = check()
	require.Equal(t, ingress.HostnameWrong, names["www.clusters.test"].State)
	require.Contains(t, names["www.clusters.test"].Resolved, "elsewhere.clusters.test")
	require.Equal(t, "HostnameWrong", lastOf(b.reasons(t, b.c.ID)))
	told, _ := b.notices(t, notify.Hostname)
	require.Equal(t, []string{"shop.apps.clusters.test points at web", "www.clusters.test points at web", "www.clusters.test no longer points at web"}, told)

	// An apex name cannot have a CNAME: the target's addresses do.
	require.NoError(t, q.IngressDNSSave(ctx, queries.IngressDNSSaveParams{ClusterID: b.c.ID, Name: target, Addresses: []string{"203.0.113.5"}, State: ingress.DNSPublished}))
	_, err = svc.AddHostname(ctx, b.c, "apex.clusters.test", actor)
	require.NoError(t, err)
	require.NoError(t, w.Set(ctx, "apex.clusters.test", []netip.Addr{netip.MustParseAddr("203.0.113.5")}))
	names = check()
	require.Equal(t, ingress.HostnameVerified, names["apex.clusters.test"].State)

	// Refused: bad names, the platform's own names, a name bound already
	// (by another tenant too).
	// An IP literal is no host name.
	for _, name := range []string{"", "nodot", "bad_name.example.com", "*.example.com", "203.0.113.9", "10.0.0.1"} {
		_, err = svc.AddHostname(ctx, b.c, name, actor)
		require.Equal(t, ingress.ErrHostnameInvalid.Error(), field(err), name)
	}
	// The platform's own name (its base URL's host), and names under a
	// cluster's CNAME target (deeper under the apps base domain).
	for _, name := range []string{"x.k8s.clusters.test", "k8s.clusters.test", target, "apps.clusters.test",
		"kubebyon.clusters.test", "shop." + target, "a.b.apps.clusters.test"} {
		_, err = svc.AddHostname(ctx, b.c, name, actor)
		require.Equal(t, ingress.ErrHostnameReserved.Error(), field(err), name)
	}
	_, err = svc.AddHostname(ctx, b.c, "www.clusters.test", actor)
	require.Equal(t, ingress.ErrHostnameTaken.Error(), field(err))
	other, err := q.UserCreateUnverified(ctx, queries.UserCreateUnverifiedParams{Email: "other@example.com", Name: "Other"})
	require.NoError(t, err)
	theirs, err := b.reconcileBundle.svc.Create(ctx, actingAs(t, b.reconcileBundle.svc.Pool, other.ID), clusters.Input{Name: "theirs"}, audit.Actor{UserID: other.ID})
	require.NoError(t, err)
	_, err = svc.Switch(ctx, theirs, true, audit.Actor{UserID: other.ID})
	require.NoError(t, err)
	_, err = svc.AddHostname(ctx, theirs, "shop.apps.clusters.test", audit.Actor{UserID: other.ID})
	require.Equal(t, ingress.ErrHostnameTaken.Error(), field(err), "another tenant's name")

	// Removed: its CNAME goes, and the name is free again.
	require.NoError(t, svc.RemoveHostname(ctx, b.c, "shop.apps.clusters.test", actor))
	require.ErrorIs(t, svc.RemoveHostname(ctx, b.c, "shop.apps.clusters.test", actor), ingress.ErrHostnameNotFound)
	names = check()
	require.NotContains(t, names, "shop.apps.clusters.test")
	require.Empty(t, srv.Lookup(t, "shop.apps.clusters.test", dns.TypeCNAME))
	_, err = svc.AddHostname(ctx, theirs, "shop.apps.clusters.test", audit.Actor{UserID: other.ID})
	require.NoError(t, err)

	// The cluster is deleted: its names are released, their CNAMEs go.
	_, err = svc.AddHostname(ctx, b.c, "blog.apps.clusters.test", actor)
	require.NoError(t, err)
	check()
	require.Equal(t, []string{target + "."}, srv.Lookup(t, "blog.apps.clusters.test", dns.TypeCNAME))
	_, err = b.reconcileBundle.svc.Delete(ctx, actingAs(t, b.reconcileBundle.svc.Pool, b.owner.ID), b.c.ID, b.c.Name, actor)
	require.NoError(t, err)
	require.Empty(t, check(), "every name released")
	require.Empty(t, srv.Lookup(t, "blog.apps.clusters.test", dns.TypeCNAME))
	_, err = svc.AddHostname(ctx, theirs, "www.clusters.test", audit.Actor{UserID: other.ID})
	require.NoError(t, err, "a released name is free")
}

// TestIngressCertificates: once managed ingress is ready, each verified
// host name gets a cert-manager Certificate from the platform's
// ClusterIssuer, which the controller serves for any route of the name
// (listed in Traefik's default TLSStore; with ingress-nginx, the TLS
// section of an Ingress the platform keeps for the name); the check
// records what cert-manager says of it (issuing, failed with its message,
// ready with its expiry), and a removed name's Certificate goes, with
// what served it.
func TestIngressCertificates(t *testing.T) {
	t.Parallel()
	for _, controller := range []string{ingress.Traefik, ingress.IngressNGINX} {
		t.Run(controller, func(t *testing.T) {
			t.Parallel()
			testIngressCertificates(t, controller)
		})
	}
}

func testIngressCertificates(t *testing.T, controller string) {
	b := setupIngress(t)
	ctx := context.Background()
	q := queries.New(b.pool)
	srv := testenv.Knot(t, "clusters.test")
	require.NoError(t, dnsrecords.Store(ctx, q, b.box, dnsrecords.Settings{
		Mode: dnsrecords.ModeRFC2136, Addresses: []string{"192.0.2.1"}, Resolver: srv.Addr, Server: srv.Addr, Zone: srv.Zone,
		KeyName: srv.KeyName, KeyAlgorithm: srv.KeyAlgorithm, KeySecret: srv.KeySecret, TTL: 60,
	}))
	rt, err := settings.Load(ctx, q, b.box)
	require.NoError(t, err)
	rt.APIBaseDomain = "k8s.clusters.test"
	require.NoError(t, settings.Save(ctx, q, b.box, rt))
	st, err := ingress.LoadSettings(ctx, q)
	require.NoError(t, err)
	st.AppsBaseDomain = "apps.clusters.test"
	if controller == ingress.IngressNGINX {
		st.Controller, st.ChartPath = ingress.IngressNGINX, testenv.IngressNGINXChart(t)
	}
	require.NoError(t, ingress.SaveSettings(ctx, q, st))
	svc := &ingress.Service{Pool: b.pool, River: b.reconcileBundle.svc.River, Box: b.box, DNS: &dnsrecords.Service{Pool: b.pool, Box: b.box}, Virtual: b.reconcileBundle.svc.VirtualConfig}
	actor := audit.Actor{UserID: b.owner.ID}
	dyn := dynamic.NewForConfigOrDie(b.virt.Config)
	certs := dyn.Resource(schema.GroupVersionResource{Group: "cert-manager.io", Version: "v1", Resource: "certificates"}).Namespace(ingress.Namespace)
	hostname := func(name string) ingress.Hostname {
		t.Helper()
		require.NoError(t, svc.RunHostnamesCheck(ctx, b.c.ID, nil))
		names, err := svc.Hostnames(ctx, b.c.ID)
		require.NoError(t, err)
		for _, n := range names {
			if n.Name == name {
				return n
			}
		}
		t.Fatalf("%s is not bound", name)
		return ingress.Hostname{}
	}

	b.switchTo(t, true)
	w := b.worker(t, time.Hour, nil)
	_, err = b.work(t, w)
	require.NoError(t, err)
	b.playRollout(t, 1, 1)
	res, err := b.work(t, w)
	require.NoError(t, err)
	require.Equal(t, river.EventKindJobCompleted, res.EventKind)
	require.Equal(t, ingress.StatusReady, b.state(t).Status)

	_, err = svc.AddHostname(ctx, b.c, "shop.apps.clusters.test", actor)
	require.NoError(t, err)
	h := hostname("shop.apps.clusters.test")
	require.Equal(t, ingress.HostnameVerified, h.State)
	require.Equal(t, ingress.CertIssuing, h.Cert)
	certName := ingress.CertificateName("shop.apps.clusters.test")
	cert, err := certs.Get(ctx, certName, metav1.GetOptions{})
	require.NoError(t, err)
	dnsNames, _, _ := unstructured.NestedStringSlice(cert.Object, "spec", "dnsNames")
	require.Equal(t, []string{"shop.apps.clusters.test"}, dnsNames)
	issuer, _, _ := unstructured.NestedString(cert.Object, "spec", "issuerRef", "name")
	require.Equal(t, ingress.IssuerName, issuer)
	tlsIngresses := dyn.Resource(schema.GroupVersionResource{Group: "networking.k8s.io", Version: "v1", Resource: "ingresses"}).Namespace(ingress.Namespace)
	switch controller {
	case ingress.Traefik:
		store, err := dyn.Resource(schema.GroupVersionResource{Group: "traefik.io", Version: "v1alpha1", Resource: "tlsstores"}).Namespace(ingress.Namespace).Get(ctx, "default", metav1.GetOptions{})
		require.NoError(t, err)
		listed, _, _ := unstructured.NestedSlice(store.Object, "spec", "certificates")
		require.Equal(t, []any{map[string]any{"secretName": certName}}, listed)
	case ingress.IngressNGINX:
		ing, err := tlsIngresses.Get(ctx, certName, metav1.GetOptions{})
		require.NoError(t, err)
		class, _, _ := unstructured.NestedString(ing.Object, "spec", "ingressClassName")
		require.Equal(t, ingress.IngressNGINXClass, class)
		tls, _, _ := unstructured.NestedSlice(ing.Object, "spec", "tls")
		require.Equal(t, []any{map[string]any{"hosts": []any{"shop.apps.clusters.test"}, "secretName": certName}}, tls)
		rules, _, _ := unstructured.NestedSlice(ing.Object, "spec", "rules")
		require.Len(t, rules, 1)
		require.Equal(t, "shop.apps.clusters.test", rules[0].(map[string]any)["host"], "ingress-nginx reads the TLS section of a host with a rule")
	}

	// cert-manager fails to issue it, then issues it.
	setStatus := func(status map[string]any) {
		t.Helper()
		cert, err := certs.Get(ctx, certName, metav1.GetOptions{})
		require.NoError(t, err)
		cert.Object["status"] = status
		_, err = certs.UpdateStatus(ctx, cert, metav1.UpdateOptions{})
		require.NoError(t, err)
	}
	setStatus(map[string]any{
		"lastFailureTime": "2026-12-02T01:00:00Z",
		"conditions": []any{
			map[string]any{"type": "Ready", "status": "False", "reason": "DoesNotExist", "message": "Issuing certificate as Secret does not exist", "lastTransitionTime": "2026-12-02T01:00:00Z"},
			map[string]any{"type": "Issuing", "status": "False", "reason": "Failed", "message": "The certificate request has failed to complete and will be retried: 403 urn:ietf:params:acme:error:unauthorized", "lastTransitionTime": "2026-12-02T01:00:00Z"},
		},
	})
	h = hostname("shop.apps.clusters.test")
	require.Equal(t, ingress.CertError, h.Cert)
	require.Contains(t, h.CertError, "acme:error:unauthorized")
	require.Equal(t, "CertificateFailed", lastOf(b.reasons(t, b.c.ID)))
	// Valid for a while yet (relative to now: the check compares its
	// expiry with the clock, see the warning below).
	expiry := time.Now().Add(90 * 24 * time.Hour).UTC().Truncate(time.Second)
	setStatus(map[string]any{
		"notAfter": expiry.Format(time.RFC3339),
		"conditions": []any{
			map[string]any{"type": "Ready", "status": "True", "reason": "Ready", "message": "Certificate is up to date and has not expired", "lastTransitionTime": "2026-12-02T01:10:00Z"},
		},
	})
	h = hostname("shop.apps.clusters.test")
	require.Equal(t, ingress.CertReady, h.Cert)
	require.Empty(t, h.CertError)
	require.Equal(t, expiry, h.CertNotAfter.UTC())
	require.Equal(t, "CertificateReady", lastOf(b.reasons(t, b.c.ID)))
	// Ten days before its expiry and not renewed: told once.
	soon := time.Now().Add(10 * 24 * time.Hour).UTC().Truncate(time.Second)
	setStatus(map[string]any{
		"notAfter":   soon.Format(time.RFC3339),
		"conditions": []any{map[string]any{"type": "Ready", "status": "True", "reason": "Ready", "message": "Certificate is up to date and has not expired", "lastTransitionTime": "2026-12-02T01:10:00Z"}},
	})
	hostname("shop.apps.clusters.test")
	hostname("shop.apps.clusters.test")
	told, _ := b.notices(t, notify.Certificate)
	require.Equal(t, []string{"The certificate of shop.apps.clusters.test could not be issued", "The certificate of shop.apps.clusters.test expires soon"}, told)
	var emails int
	require.NoError(t, b.pool.QueryRow(ctx, "SELECT count(*) FROM river_job WHERE kind = 'email' AND args->>'template' LIKE 'Certificate%'").Scan(&emails))
	require.Equal(t, 2, emails, "by email too, as certificates are by default")

	// Another verified name keeps the store going while the first goes.
	_, err = svc.AddHostname(ctx, b.c, "blog.apps.clusters.test", actor)
	require.NoError(t, err)
	require.NoError(t, svc.RemoveHostname(ctx, b.c, "shop.apps.clusters.test", actor))
	require.Equal(t, ingress.CertIssuing, hostname("blog.apps.clusters.test").Cert)
	_, err = certs.Get(ctx, certName, metav1.GetOptions{})
	require.True(t, apierrors.IsNotFound(err), "the removed name's Certificate is gone: %v", err)
	if controller == ingress.IngressNGINX {
		list, err := tlsIngresses.List(ctx, metav1.ListOptions{})
		require.NoError(t, err)
		names := []string{}
		for _, ing := range list.Items {
			names = append(names, ing.GetName())
		}
		require.Equal(t, []string{ingress.CertificateName("blog.apps.clusters.test")}, names, "the removed name's Ingress is gone, the other's kept")
	}
}
