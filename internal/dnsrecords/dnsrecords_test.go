package dnsrecords_test

import (
	"bytes"
	"context"
	"crypto/rand"
	"net/netip"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgtype"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/miekg/dns"
	"github.com/stretchr/testify/require"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/dynamic"

	"github.com/kubebyon/kubebyon/internal/adminauth"
	"github.com/kubebyon/kubebyon/internal/audit"
	"github.com/kubebyon/kubebyon/internal/checks"
	"github.com/kubebyon/kubebyon/internal/dnsrecords"
	"github.com/kubebyon/kubebyon/internal/input"
	"github.com/kubebyon/kubebyon/internal/passwords"
	"github.com/kubebyon/kubebyon/internal/secrets"
	"github.com/kubebyon/kubebyon/internal/settings"
	"github.com/kubebyon/kubebyon/internal/testenv"
	"github.com/kubebyon/kubebyon/queries"
)

func TestMain(m *testing.M) { testenv.Main(m) }

const zone = "clusters.test"

func addrs(s ...string) []netip.Addr {
	out := make([]netip.Addr, len(s))
	for i, a := range s {
		out[i] = netip.MustParseAddr(a)
	}
	return out
}

func rfc2136Of(srv *testenv.DNSServer) *dnsrecords.RFC2136 {
	return &dnsrecords.RFC2136{Server: srv.Addr, Zone: srv.Zone, KeyName: srv.KeyName, Algorithm: srv.KeyAlgorithm, Secret: srv.KeySecret, TTL: 60}
}

// TestRFC2136 writes, rewrites and removes a name's records on a real
// Knot server, reading them back from it with plain queries; a wrong key
// and a server that is not the zone's primary are errors that say so.
func TestRFC2136(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	srv := testenv.Knot(t, zone)
	w := rfc2136Of(srv)
	name := "a1b2.clusters.test"

	require.NoError(t, w.Check(ctx))
	got, err := w.Lookup(ctx, name)
	require.NoError(t, err)
	require.Empty(t, got)

	require.NoError(t, w.Set(ctx, name, addrs("203.0.113.10", "2001:db8::10", "198.51.100.1")))
	require.ElementsMatch(t, []string{"198.51.100.1", "203.0.113.10"}, srv.Lookup(t, name, dns.TypeA))
	require.Equal(t, []string{"2001:db8::10"}, srv.Lookup(t, name, dns.TypeAAAA))
	got, err = w.Lookup(ctx, name)
	require.NoError(t, err)
	require.Equal(t, addrs("198.51.100.1", "203.0.113.10", "2001:db8::10"), got)

	// An address change replaces the sets whole.
	require.NoError(t, w.Set(ctx, name, addrs("203.0.113.11")))
	require.Equal(t, []string{"203.0.113.11"}, srv.Lookup(t, name, dns.TypeA))
	require.Empty(t, srv.Lookup(t, name, dns.TypeAAAA))

	require.NoError(t, w.Remove(ctx, name))
	require.Empty(t, srv.Lookup(t, name, dns.TypeA))
	require.NoError(t, w.Remove(ctx, name), "removing what is gone")

	bad := *w
	bad.Secret = "d3JvbmcgLSBub3QgdGhlIGtleQ=="
	err = bad.Set(ctx, name, addrs("203.0.113.12"))
	require.Error(t, err)
	require.Contains(t, err.Error(), srv.Addr)
	require.Empty(t, srv.Lookup(t, name, dns.TypeA), "a wrongly signed update changes nothing")

	other := *w
	other.Zone = "elsewhere.test"
	err = other.Check(ctx)
	require.Error(t, err)
	require.Contains(t, err.Error(), "elsewhere.test")
}

// TestExternalDNS writes DNSEndpoint objects into the real apiserver
// (with external-dns's own CRD): the namespace is made on first use, an
// object is updated in place and deleted.
func TestExternalDNS(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	kube := testenv.HostKube(t)
	testenv.ExternalDNSCRD(t, kube.Config)
	client, err := dynamic.NewForConfig(kube.Config)
	require.NoError(t, err)
	ns := "dns-" + randSuffix(t)
	w := &dnsrecords.ExternalDNS{Client: client, Namespace: ns, TTL: 60}
	name := "e1.clusters.test"

	require.NoError(t, w.Check(ctx))
	got, err := w.Lookup(ctx, name)
	require.NoError(t, err)
	require.Empty(t, got)

	require.NoError(t, w.Set(ctx, name, addrs("203.0.113.20", "2001:db8::20")))
	obj, err := client.Resource(dnsrecords.DNSEndpoints).Namespace(ns).Get(ctx, name, metav1.GetOptions{})
	require.NoError(t, err)
	require.Equal(t, "kubebyon", obj.GetLabels()[dnsrecords.ManagedByLabel])
	eps := obj.Object["spec"].(map[string]any)["endpoints"].([]any)
	require.Len(t, eps, 2)
	require.Equal(t, map[string]any{"dnsName": name, "recordType": "A", "targets": []any{"203.0.113.20"}, "recordTTL": int64(60)}, eps[0])
	got, err = w.Lookup(ctx, name)
	require.NoError(t, err)
	require.Equal(t, addrs("203.0.113.20", "2001:db8::20"), got)

	require.NoError(t, w.Set(ctx, name, addrs("203.0.113.21")))
	got, err = w.Lookup(ctx, name)
	require.NoError(t, err)
	require.Equal(t, addrs("203.0.113.21"), got)

	require.NoError(t, w.Remove(ctx, name))
	_, err = client.Resource(dnsrecords.DNSEndpoints).Namespace(ns).Get(ctx, name, metav1.GetOptions{})
	require.Error(t, err)
	require.NoError(t, w.Remove(ctx, name))

	// Credentials that may only read there: the check says what is missing.
	admin := kube.Client(t)
	_, err = admin.RbacV1().Roles(ns).Create(ctx, &rbacv1.Role{
		ObjectMeta: metav1.ObjectMeta{Name: "dns-reader"},
		Rules:      []rbacv1.PolicyRule{{APIGroups: []string{"externaldns.k8s.io"}, Resources: []string{"dnsendpoints"}, Verbs: []string{"get", "list"}}},
	}, metav1.CreateOptions{})
	require.NoError(t, err)
	_, err = admin.RbacV1().RoleBindings(ns).Create(ctx, &rbacv1.RoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: "dns-reader"},
		RoleRef:    rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "Role", Name: "dns-reader"},
		Subjects:   []rbacv1.Subject{{Kind: "User", Name: "dns-reader-" + ns}},
	}, metav1.CreateOptions{})
	require.NoError(t, err)
	readerClient, err := dynamic.NewForConfig(kube.UserConfig(t, "dns-reader-"+ns))
	require.NoError(t, err)
	reader := &dnsrecords.ExternalDNS{Client: readerClient, Namespace: ns, TTL: 60}
	require.Eventually(t, func() bool { _, err := reader.Lookup(ctx, name); return err == nil }, 10*time.Second, 100*time.Millisecond, "RBAC takes the binding")
	err = reader.Check(ctx)
	require.Error(t, err)
	require.Contains(t, err.Error(), "may not create, update, delete DNSEndpoint objects in namespace "+ns)
}

func randSuffix(t *testing.T) string {
	t.Helper()
	return strings.ToLower(rand.Text()[:8])
}

func testBox(t *testing.T) *secrets.Box {
	box, err := secrets.New(bytes.Repeat([]byte{7}, 32))
	require.NoError(t, err)
	return box
}

// fixture is a database with an admin, the API base domain set, and a
// cluster.
type fixture struct {
	pool  *pgxpool.Pool
	box   *secrets.Box
	admin audit.Actor
	svc   *dnsrecords.Service
}

const adminPassword = "correct horse battery"

func newFixture(t *testing.T, kubeconfig string) fixture {
	t.Helper()
	ctx := context.Background()
	pool := testenv.DB(t)
	box := testBox(t)
	q := queries.New(pool)
	hash, err := passwords.Hash(adminPassword)
	require.NoError(t, err)
	admin, err := q.UserCreate(ctx, queries.UserCreateParams{Email: "admin@example.com", Name: "admin", Role: "admin", PasswordHash: pgtype.Text{String: hash, Valid: true}})
	require.NoError(t, err)
	rt := settings.Defaults()
	rt.APIBaseDomain = zone
	require.NoError(t, settings.Save(ctx, q, box, rt))
	return fixture{pool: pool, box: box, admin: audit.Actor{UserID: admin.ID, Email: admin.Email}, svc: &dnsrecords.Service{Pool: pool, Box: box, KubeconfigPath: kubeconfig}}
}

func (f fixture) cluster(t *testing.T, slug string) queries.Cluster {
	t.Helper()
	ctx := context.Background()
	q := queries.New(f.pool)
	u, err := q.UserCreate(ctx, queries.UserCreateParams{Email: slug + "@example.com", Name: slug, Role: "user"})
	require.NoError(t, err)
	c, err := q.ClusterCreate(ctx, queries.ClusterCreateParams{
		OwnerID: u.ID, Name: slug, Slug: slug, KubernetesVersion: "v1.34.0", PublicAccessMode: settings.AccessLoadBalancer,
	})
	require.NoError(t, err)
	require.NoError(t, dnsrecords.Schedule(ctx, q, c.ID))
	return c
}

func (f fixture) events(t *testing.T, clusterID int64) []string {
	t.Helper()
	evs, err := queries.New(f.pool).ClusterEventListByCluster(context.Background(), queries.ClusterEventListByClusterParams{ClusterID: clusterID, RowLimit: 100})
	require.NoError(t, err)
	var out []string
	for _, e := range evs {
		out = append(out, e.Reason)
	}
	return out
}

func (f fixture) due(t *testing.T, clusterID int64) pgtype.Timestamptz {
	t.Helper()
	var due pgtype.Timestamptz
	require.NoError(t, f.pool.QueryRow(context.Background(),
		"SELECT due_at FROM cluster_checks WHERE cluster_id = $1 AND kind = $2", clusterID, string(checks.DNSRecord)).Scan(&due))
	return due
}

// TestSyncRFC2136 is a cluster's record through its life on a real DNS
// server: published when the settings ask, put back when it drifts (and
// the cluster's history says so), moved when the edge addresses change,
// removed when the cluster is deleted. A server that does not answer is
// an error shown on the cluster, backed off.
func TestSyncRFC2136(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	srv := testenv.Knot(t, zone)
	f := newFixture(t, "")
	c := f.cluster(t, "web-x1y2")
	name := "web-x1y2." + zone

	// No DNS mode: nothing to write, and the check goes idle.
	next, err := f.svc.Sync(ctx, c.ID)
	require.NoError(t, err)
	require.True(t, next.IsZero())
	st, err := f.svc.Status(ctx, c.ID, c.Slug)
	require.NoError(t, err)
	require.Equal(t, dnsrecords.ModeNone, st.State)

	set := dnsrecords.Settings{
		Mode: dnsrecords.ModeRFC2136, Addresses: []string{"203.0.113.30", " 2001:db8::30 "},
		Server: srv.Addr, Zone: srv.Zone, KeyName: srv.KeyName, KeyAlgorithm: srv.KeyAlgorithm, TTL: 60,
	}
	// The secret needs the admin's password.
	_, err = f.svc.Apply(ctx, dnsrecords.Change{Settings: set, KeySecret: srv.KeySecret}, f.admin)
	require.ErrorIs(t, err, dnsrecords.ErrPasswordRequired)
	_, err = f.svc.Apply(ctx, dnsrecords.Change{Settings: set, KeySecret: srv.KeySecret, Password: "wrong"}, f.admin)
	require.ErrorIs(t, err, adminauth.ErrWrongPassword)
	changed, err := f.svc.Apply(ctx, dnsrecords.Change{Settings: set, KeySecret: srv.KeySecret, Password: adminPassword}, f.admin)
	require.NoError(t, err)
	require.Contains(t, changed, "keySecret")
	require.True(t, f.due(t, c.ID).Valid, "a settings change makes every cluster's check due")
	// Saved again as it is: nothing changes, no password needed.
	changed, err = f.svc.Apply(ctx, dnsrecords.Change{Settings: set}, f.admin)
	require.NoError(t, err)
	require.Empty(t, changed)

	st, err = f.svc.Status(ctx, c.ID, c.Slug)
	require.NoError(t, err)
	require.Equal(t, dnsrecords.StatePending, st.State)
	next, err = f.svc.Sync(ctx, c.ID)
	require.NoError(t, err)
	require.WithinDuration(t, time.Now().Add(dnsrecords.Interval), next, time.Minute)
	require.Equal(t, []string{"203.0.113.30"}, srv.Lookup(t, name, dns.TypeA))
	require.Equal(t, []string{"2001:db8::30"}, srv.Lookup(t, name, dns.TypeAAAA))
	st, err = f.svc.Status(ctx, c.ID, c.Slug)
	require.NoError(t, err)
	require.Equal(t, dnsrecords.StatePublished, st.State)
	require.Equal(t, name, st.Name)
	require.Equal(t, []string{"DNSPublished"}, f.events(t, c.ID))

	// In step: a check writes nothing and says nothing.
	_, err = f.svc.Sync(ctx, c.ID)
	require.NoError(t, err)
	require.Len(t, f.events(t, c.ID), 1)

	// Someone changes the record behind the platform's back.
	require.NoError(t, rfc2136Of(srv).Set(ctx, name, addrs("192.0.2.66")))
	_, err = f.svc.Sync(ctx, c.ID)
	require.NoError(t, err)
	require.Equal(t, []string{"203.0.113.30"}, srv.Lookup(t, name, dns.TypeA))
	require.Equal(t, "DNSRestored", f.events(t, c.ID)[1])

	// The edge moves.
	set.Addresses = []string{"203.0.113.31"}
	_, err = f.svc.Apply(ctx, dnsrecords.Change{Settings: set}, f.admin)
	require.NoError(t, err)
	st, err = f.svc.Status(ctx, c.ID, c.Slug)
	require.NoError(t, err)
	require.Equal(t, dnsrecords.StatePending, st.State)
	_, err = f.svc.Sync(ctx, c.ID)
	require.NoError(t, err)
	require.Equal(t, []string{"203.0.113.31"}, srv.Lookup(t, name, dns.TypeA))
	require.Empty(t, srv.Lookup(t, name, dns.TypeAAAA))

	// The cluster is deleted: the record goes, and the check idles.
	_, err = f.pool.Exec(ctx, "UPDATE clusters SET status = 'deleted' WHERE id = $1", c.ID)
	require.NoError(t, err)
	next, err = f.svc.Sync(ctx, c.ID)
	require.NoError(t, err)
	require.True(t, next.IsZero())
	require.Empty(t, srv.Lookup(t, name, dns.TypeA))
	require.Equal(t, "DNSRemoved", f.events(t, c.ID)[len(f.events(t, c.ID))-1])

	// A server that does not answer: the error is on the cluster.
	c2 := f.cluster(t, "api-q9")
	set.Server = "127.0.0.1:1"
	_, err = f.svc.Apply(ctx, dnsrecords.Change{Settings: set}, f.admin)
	require.NoError(t, err)
	_, err = f.svc.Sync(ctx, c2.ID)
	require.Error(t, err)
	st, err = f.svc.Status(ctx, c2.ID, c2.Slug)
	require.NoError(t, err)
	require.Equal(t, dnsrecords.StateError, st.State)
	require.Contains(t, st.Error, "127.0.0.1:1")
	_, err = f.svc.Sync(ctx, c2.ID)
	require.Error(t, err)
	require.Equal(t, []string{"DNSError"}, f.events(t, c2.ID), "one event for a run of failures")
}

// TestSyncExternalDNS moves a cluster's record from RFC 2136 to
// external-dns: the old record is removed from the DNS server, the
// DNSEndpoint written on the host cluster, and deleted with the cluster.
func TestSyncExternalDNS(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	srv := testenv.Knot(t, zone)
	kube := testenv.HostKube(t)
	testenv.ExternalDNSCRD(t, kube.Config)
	kubeconfig := t.TempDir() + "/host"
	require.NoError(t, os.WriteFile(kubeconfig, kube.Kubeconfig(t), 0o600))
	f := newFixture(t, kubeconfig)
	c := f.cluster(t, "shop-m3n4")
	name := "shop-m3n4." + zone

	set := dnsrecords.Settings{
		Mode: dnsrecords.ModeRFC2136, Addresses: []string{"203.0.113.40"},
		Server: srv.Addr, Zone: srv.Zone, KeyName: srv.KeyName, KeyAlgorithm: srv.KeyAlgorithm, TTL: 60,
		Namespace: "dns-" + randSuffix(t),
	}
	_, err := f.svc.Apply(ctx, dnsrecords.Change{Settings: set, KeySecret: srv.KeySecret, Password: adminPassword}, f.admin)
	require.NoError(t, err)
	_, err = f.svc.Sync(ctx, c.ID)
	require.NoError(t, err)
	require.Equal(t, []string{"203.0.113.40"}, srv.Lookup(t, name, dns.TypeA))

	set.Mode = dnsrecords.ModeExternalDNS
	_, err = f.svc.Apply(ctx, dnsrecords.Change{Settings: set}, f.admin)
	require.NoError(t, err)
	res, err := f.svc.Check(ctx, f.admin)
	require.NoError(t, err)
	require.True(t, res.OK, res.Err)
	_, err = f.svc.Sync(ctx, c.ID)
	require.NoError(t, err)
	require.Empty(t, srv.Lookup(t, name, dns.TypeA), "the old mode's record is removed")
	client, err := dynamic.NewForConfig(kube.Config)
	require.NoError(t, err)
	endpoints := client.Resource(dnsrecords.DNSEndpoints).Namespace(set.Namespace)
	obj, err := endpoints.Get(ctx, name, metav1.GetOptions{})
	require.NoError(t, err)
	require.Equal(t, name, obj.GetName())
	st, err := f.svc.Status(ctx, c.ID, c.Slug)
	require.NoError(t, err)
	require.Equal(t, dnsrecords.StatePublished, st.State)

	// Deleted behind the platform's back: put back.
	require.NoError(t, endpoints.Delete(ctx, name, metav1.DeleteOptions{}))
	_, err = f.svc.Sync(ctx, c.ID)
	require.NoError(t, err)
	_, err = endpoints.Get(ctx, name, metav1.GetOptions{})
	require.NoError(t, err)
	require.Contains(t, f.events(t, c.ID), "DNSRestored")

	_, err = f.pool.Exec(ctx, "UPDATE clusters SET status = 'deleted' WHERE id = $1", c.ID)
	require.NoError(t, err)
	_, err = f.svc.Sync(ctx, c.ID)
	require.NoError(t, err)
	_, err = endpoints.Get(ctx, name, metav1.GetOptions{})
	require.Error(t, err, "deleted with its cluster")
}

// TestCheckWildcard resolves a random name under the API base domain
// through a real DNS server: no wildcard, one to elsewhere, one to the
// edge.
func TestCheckWildcard(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	srv := testenv.Knot(t, zone)
	edgeAddrs := addrs("203.0.113.50")

	res := dnsrecords.CheckWildcard(ctx, srv.Addr, zone, edgeAddrs)
	require.False(t, res.OK)
	require.Contains(t, res.Err, "*."+zone)

	w := rfc2136Of(srv)
	require.NoError(t, w.Set(ctx, "*."+zone, addrs("192.0.2.1")))
	res = dnsrecords.CheckWildcard(ctx, srv.Addr, zone, edgeAddrs)
	require.False(t, res.OK)
	require.Contains(t, res.Err, "192.0.2.1")
	require.Equal(t, []string{"192.0.2.1"}, res.Found)

	require.NoError(t, w.Set(ctx, "*."+zone, edgeAddrs))
	res = dnsrecords.CheckWildcard(ctx, srv.Addr, zone, edgeAddrs)
	require.True(t, res.OK, res.Err)
	require.Contains(t, res.Name, "."+zone)
}

// TestValidate names the fields a mode needs.
func TestValidate(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		set  dnsrecords.Settings
		want input.Errors
	}{
		{"none needs nothing", dnsrecords.Settings{Mode: dnsrecords.ModeNone, TTL: 60}, nil},
		{"wildcard needs addresses", dnsrecords.Settings{Mode: dnsrecords.ModeWildcard, TTL: 60}, input.Errors{"addresses": "ErrDNSAddressesRequired"}},
		{"bad address", dnsrecords.Settings{Mode: dnsrecords.ModeWildcard, TTL: 60, Addresses: []string{"10.0.0.300"}}, input.Errors{"addresses": "ErrDNSAddresses"}},
		{"rfc2136 fields", dnsrecords.Settings{Mode: dnsrecords.ModeRFC2136, TTL: 60, Addresses: []string{"10.0.0.1"}, Server: "ns1", Zone: "other.test", KeyAlgorithm: "md5", KeySecret: "!"}, input.Errors{
			"server": "ErrDNSHostPort", "zone": "ErrDNSZoneOutside", "keyName": "ErrDNSKeyName", "keyAlgorithm": "ErrDNSKeyAlgorithm", "keySecret": "ErrDNSKeySecret",
		}},
		{"external-dns namespace", dnsrecords.Settings{Mode: dnsrecords.ModeExternalDNS, TTL: 0, Addresses: []string{"2001:db8::1"}, Namespace: "Bad_NS"}, input.Errors{"namespace": "ErrDNSNamespace", "ttl": "ErrDNSTTL"}},
		{"unknown mode", dnsrecords.Settings{Mode: "route53", TTL: 60, Addresses: []string{"10.0.0.1"}}, input.Errors{"mode": "ErrDNSMode"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			err := tc.set.Validate("k8s." + zone)
			if tc.want == nil {
				require.NoError(t, err)
				return
			}
			require.Equal(t, tc.want, err)
		})
	}
}

// TestCNAME aliases a name on both writers: set, moved to another target,
// turned into addresses (an alias has nothing beside it) and removed.
func TestCNAME(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	kube := testenv.HostKube(t)
	testenv.ExternalDNSCRD(t, kube.Config)
	client, err := dynamic.NewForConfig(kube.Config)
	require.NoError(t, err)
	srv := testenv.Knot(t, zone)
	for _, tc := range []struct {
		name string
		w    interface {
			dnsrecords.Writer
			dnsrecords.CNAMEWriter
		}
		served func(name string) []string // what the DNS serves, nil for external-dns
	}{
		{"rfc2136", rfc2136Of(srv), func(name string) []string { return srv.Lookup(t, name, dns.TypeCNAME) }},
		{"external-dns", &dnsrecords.ExternalDNS{Client: client, Namespace: "cname-" + randSuffix(t), TTL: 60}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			name := "shop." + zone
			got, err := tc.w.LookupCNAME(ctx, name)
			require.NoError(t, err)
			require.Empty(t, got)

			require.NoError(t, tc.w.SetCNAME(ctx, name, "web-1a2b."+zone))
			got, err = tc.w.LookupCNAME(ctx, name)
			require.NoError(t, err)
			require.Equal(t, "web-1a2b."+zone, got)
			if tc.served != nil {
				require.Equal(t, []string{"web-1a2b." + zone + "."}, tc.served(name))
			}

			require.NoError(t, tc.w.SetCNAME(ctx, name, "web-9z8y."+zone))
			got, err = tc.w.LookupCNAME(ctx, name)
			require.NoError(t, err)
			require.Equal(t, "web-9z8y."+zone, got)

			require.NoError(t, tc.w.Set(ctx, name, addrs("203.0.113.80")))
			got, err = tc.w.LookupCNAME(ctx, name)
			require.NoError(t, err)
			require.Empty(t, got, "addresses replace the alias")
			have, err := tc.w.Lookup(ctx, name)
			require.NoError(t, err)
			require.Equal(t, addrs("203.0.113.80"), have)

			require.NoError(t, tc.w.SetCNAME(ctx, name, "web-1a2b."+zone))
			have, err = tc.w.Lookup(ctx, name)
			require.NoError(t, err)
			require.Empty(t, have, "the alias replaces the addresses")
			require.NoError(t, tc.w.RemoveCNAME(ctx, name))
			got, err = tc.w.LookupCNAME(ctx, name)
			require.NoError(t, err)
			require.Empty(t, got)
			require.NoError(t, tc.w.RemoveCNAME(ctx, name), "removing what is gone")
		})
	}
}
