package edge_test

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgtype"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/kubebyon/kubebyon/internal/edge"
	"github.com/kubebyon/kubebyon/internal/edgewire"
	"github.com/kubebyon/kubebyon/internal/secrets"
	"github.com/kubebyon/kubebyon/internal/settings"
	"github.com/kubebyon/kubebyon/internal/testenv"
	"github.com/kubebyon/kubebyon/queries"
)

func TestMain(m *testing.M) { testenv.Main(m) }

func testBox(t *testing.T) *secrets.Box {
	box, err := secrets.New(bytes.Repeat([]byte{7}, 32))
	require.NoError(t, err)
	return box
}

// newCluster adds a cluster of a new user, in the access mode given, with
// NodePorts (nodeport mode) or a load balancer address (lbAddress).
func newCluster(t *testing.T, pool *pgxpool.Pool, slug, mode string, apiPort, konnPort int32, lbAddress string) queries.Cluster {
	t.Helper()
	ctx := context.Background()
	q := queries.New(pool)
	u, err := q.UserCreate(ctx, queries.UserCreateParams{Email: slug + "@example.com", Name: slug, Role: "user"})
	require.NoError(t, err)
	c, err := q.ClusterCreate(ctx, queries.ClusterCreateParams{
		OwnerID: u.ID, Name: slug, Slug: slug, KubernetesVersion: "v1.34.0", PublicAccessMode: mode,
		NodePort:             pgtype.Int4{Int32: apiPort, Valid: apiPort != 0},
		KonnectivityNodePort: pgtype.Int4{Int32: konnPort, Valid: konnPort != 0},
	})
	require.NoError(t, err)
	if lbAddress != "" {
		n, err := q.ClusterSetLBAddress(ctx, queries.ClusterSetLBAddressParams{ID: c.ID, LbAddress: lbAddress})
		require.NoError(t, err)
		require.EqualValues(t, 1, n)
	}
	return c
}

func saveSettings(t *testing.T, pool *pgxpool.Pool, box *secrets.Box, change func(*settings.Runtime)) {
	t.Helper()
	rt := settings.Defaults()
	change(&rt)
	require.NoError(t, settings.Save(context.Background(), queries.New(pool), box, rt))
}

// TestDesiredRoutes checks what each cluster is routed to: NodePort
// clusters to the Ready host nodes' addresses of the admin's type, at
// their NodePorts; LoadBalancer clusters to their Service's address;
// clusters without either to nothing (known, but with no servers);
// deleted clusters not at all; nothing without an API base domain. The
// version changes with the routes, and only then.
func TestDesiredRoutes(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool := testenv.DB(t)
	q := queries.New(pool)

	np := newCluster(t, pool, "np", settings.AccessNodePort, 30001, 30002, "")
	lb := newCluster(t, pool, "lb", settings.AccessLoadBalancer, 0, 0, "203.0.113.7")
	pending := newCluster(t, pool, "pending", settings.AccessLoadBalancer, 0, 0, "")
	gone := newCluster(t, pool, "gone", settings.AccessNodePort, 30003, 30004, "")
	_, err := pool.Exec(ctx, "UPDATE clusters SET status = 'deleted' WHERE id = $1", gone.ID)
	require.NoError(t, err)
	// Failed before it was ever ready: nothing of it serves, no route. One
	// that failed after it was ready keeps its route (its nodes may still
	// talk to its control plane).
	neverUp := newCluster(t, pool, "never-up", settings.AccessNodePort, 30005, 30006, "")
	_, err = pool.Exec(ctx, "UPDATE clusters SET status = 'failed' WHERE id = $1", neverUp.ID)
	require.NoError(t, err)
	wasUp := newCluster(t, pool, "was-up", settings.AccessLoadBalancer, 0, 0, "203.0.113.9")
	_, err = pool.Exec(ctx, "UPDATE clusters SET status = 'failed', ready_at = now() WHERE id = $1", wasUp.ID)
	require.NoError(t, err)
	for _, h := range []queries.HostNodeUpsertParams{
		{Name: "host-a", InternalIp: "10.0.0.1", ExternalIp: "198.51.100.1", Ready: true},
		{Name: "host-b", InternalIp: "10.0.0.2", Ready: true}, // no external address
		{Name: "host-c", InternalIp: "10.0.0.3", ExternalIp: "198.51.100.3", Ready: false},
	} {
		require.NoError(t, q.HostNodeUpsert(ctx, h))
	}

	// No API base domain: no host names, nothing routed.
	st, err := edge.Desired(ctx, q, settings.Defaults())
	require.NoError(t, err)
	require.Empty(t, st.Routes)
	require.NotEmpty(t, st.Version)

	rt := settings.Defaults()
	rt.APIBaseDomain = "k8s.example.com"
	internal, err := edge.Desired(ctx, q, rt)
	require.NoError(t, err)
	require.Equal(t, []edgewire.Route{
		{ClusterID: np.ID, Host: "np.k8s.example.com",
			API:          []edgewire.Server{{Address: "10.0.0.1", Port: 30001}, {Address: "10.0.0.2", Port: 30001}},
			Konnectivity: []edgewire.Server{{Address: "10.0.0.1", Port: 30002}, {Address: "10.0.0.2", Port: 30002}}},
		{ClusterID: lb.ID, Host: "lb.k8s.example.com",
			API:          []edgewire.Server{{Address: "203.0.113.7", Port: 443}},
			Konnectivity: []edgewire.Server{{Address: "203.0.113.7", Port: 8132}}},
		{ClusterID: pending.ID, Host: "pending.k8s.example.com", API: []edgewire.Server{}, Konnectivity: []edgewire.Server{}},
		{ClusterID: wasUp.ID, Host: "was-up.k8s.example.com",
			API:          []edgewire.Server{{Address: "203.0.113.9", Port: 443}},
			Konnectivity: []edgewire.Server{{Address: "203.0.113.9", Port: 8132}}},
	}, internal.Routes)
	require.NotEqual(t, st.Version, internal.Version)

	rt.EdgeAddressType = settings.AddressExternalIP
	external, err := edge.Desired(ctx, q, rt)
	require.NoError(t, err)
	require.Equal(t, []edgewire.Server{{Address: "198.51.100.1", Port: 30001}}, external.Routes[0].API, "host-b has no external address, host-c is not Ready")
	require.NotEqual(t, internal.Version, external.Version)

	// The same state has the same version; a host node that becomes
	// Ready changes it.
	again, err := edge.Desired(ctx, q, rt)
	require.NoError(t, err)
	require.Equal(t, external.Version, again.Version)
	require.NoError(t, q.HostNodeUpsert(ctx, queries.HostNodeUpsertParams{Name: "host-c", InternalIp: "10.0.0.3", ExternalIp: "198.51.100.3", Ready: true}))
	ready, err := edge.Desired(ctx, q, rt)
	require.NoError(t, err)
	require.Len(t, ready.Routes[0].API, 2)
	require.NotEqual(t, external.Version, ready.Version)

	// Host nodes the sync no longer sees are forgotten.
	n, err := q.HostNodesDeleteExcept(ctx, []string{"host-a"})
	require.NoError(t, err)
	require.EqualValues(t, 2, n)
	left, err := q.HostNodeList(ctx)
	require.NoError(t, err)
	require.Len(t, left, 1)
}

// TestWatcherWakesOnChange checks that the watcher tells its waiters when
// what the edge routes changes (a cluster created, a host node's
// readiness, the settings), through PostgreSQL's notifications, and works
// the state out again then; a change the edge does not route (a
// cluster's description) wakes nobody.
func TestWatcherWakesOnChange(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool := testenv.DB(t)
	box := testBox(t)
	q := queries.New(pool)
	saveSettings(t, pool, box, func(rt *settings.Runtime) { rt.APIBaseDomain = "k8s.example.com" })
	w := edge.NewWatcher(pool, box, slog.New(slog.NewTextHandler(io.Discard, nil)))
	runCtx, stop := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() { w.Run(runCtx); close(done) }()
	t.Cleanup(func() { stop(); <-done })

	// Once the watcher listens, its state is worked out once and kept.
	require.Eventually(t, w.Listening, 10*time.Second, 20*time.Millisecond)
	st, changed, err := w.Current(ctx)
	require.NoError(t, err)
	again, changedAgain, err := w.Current(ctx)
	require.NoError(t, err)
	require.Equal(t, st.Version, again.Version)
	require.Equal(t, changed, changedAgain)

	woken := func(what string) {
		t.Helper()
		select {
		case <-changed:
		case <-time.After(10 * time.Second):
			t.Fatalf("%s did not wake the waiters", what)
		}
	}
	c := newCluster(t, pool, "first", settings.AccessNodePort, 30001, 30002, "")
	woken("a new cluster")
	next, ch, err := w.Current(ctx)
	require.NoError(t, err)
	require.NotEqual(t, st.Version, next.Version)
	require.Len(t, next.Routes, 1)
	require.Equal(t, c.ID, next.Routes[0].ClusterID)
	st, changed = next, ch

	_, err = pool.Exec(ctx, "UPDATE clusters SET description = 'not routed' WHERE id = $1", c.ID)
	require.NoError(t, err)
	select {
	case <-changed:
		t.Fatal("a change the edge does not route woke the waiters")
	case <-time.After(time.Second):
	}

	require.NoError(t, q.HostNodeUpsert(ctx, queries.HostNodeUpsertParams{Name: "host-a", InternalIp: "10.0.0.1", Ready: true}))
	woken("a Ready host node")
	next, changed, err = w.Current(ctx)
	require.NoError(t, err)
	require.Equal(t, []edgewire.Server{{Address: "10.0.0.1", Port: 30001}}, next.Routes[0].API)

	saveSettings(t, pool, box, func(rt *settings.Runtime) { rt.APIBaseDomain = "other.example.com" })
	woken("a new API base domain")
	next, _, err = w.Current(ctx)
	require.NoError(t, err)
	require.Equal(t, fmt.Sprintf("first.%s", "other.example.com"), next.Routes[0].Host)
}
