package nodes

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubebyon/kubebyon/internal/clusters"
	"github.com/kubebyon/kubebyon/internal/orgs"
	"github.com/kubebyon/kubebyon/internal/testenv"
	"github.com/kubebyon/kubebyon/queries"
)

// TestListReadsWhatTheRowsSay checks that the nodes page (Service.Page), which reads the
// status and addresses PostgreSQL works out from a row's conditions and
// addresses (migration 023), shows each node as the node itself reads
// (summarize) and as its row reads in Go (fromRow).
func TestListReadsWhatTheRowsSay(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool := testenv.DB(t)
	q := queries.New(pool)
	var clusterID, ownerID int64
	require.NoError(t, pool.QueryRow(ctx, `INSERT INTO users (email, name) VALUES ('list@example.com', 'List') RETURNING id`).Scan(&ownerID))
	require.NoError(t, pool.QueryRow(ctx, `
		INSERT INTO clusters (owner_id, name, slug, kubernetes_version, public_access_mode, status)
		VALUES ($1, 'list', 'list-nodes', 'v1.34.0', 'nodeport', 'ready') RETURNING id`, ownerID).Scan(&clusterID))
	svc := &Service{Pool: pool}
	owner := actingAs(t, svc.Pool, ownerID)
	ownPage := func(userID int64) (Page, error) {
		return svc.Page(ctx, orgs.Acting{OrgID: owner.OrgID, UserID: userID}, clusterID)
	}
	// Before any node: the cluster, without nodes.
	page, err := ownPage(ownerID)
	require.NoError(t, err)
	require.Equal(t, "list", page.Cluster.Name)
	require.Equal(t, "ready", page.Cluster.Status)
	require.Empty(t, page.Nodes)
	require.True(t, page.Fresh.Updated.IsZero(), "never recorded")
	// Nobody else's.
	_, err = ownPage(ownerID + 1000)
	require.ErrorIs(t, err, clusters.ErrNotFound)

	at := metav1.NewTime(time.Date(2026, 11, 30, 8, 0, 0, 0, time.UTC))
	cond := func(t corev1.NodeConditionType, s corev1.ConditionStatus) corev1.NodeCondition {
		return corev1.NodeCondition{Type: t, Status: s, LastTransitionTime: at, Reason: "R", Message: "m"}
	}
	addr := func(t corev1.NodeAddressType, a string) corev1.NodeAddress {
		return corev1.NodeAddress{Type: t, Address: a}
	}
	node := func(name string, conds []corev1.NodeCondition, addrs []corev1.NodeAddress) *corev1.Node {
		n := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, CreationTimestamp: at, Labels: map[string]string{roleLabelPrefix + "worker": ""}}}
		n.Status.Conditions, n.Status.Addresses = conds, addrs
		n.Status.NodeInfo = corev1.NodeSystemInfo{KubeletVersion: "v1.34.1", OperatingSystem: "linux", Architecture: "arm64"}
		return n
	}
	tests := []*corev1.Node{
		node("ready", []corev1.NodeCondition{cond(corev1.NodeMemoryPressure, corev1.ConditionFalse), cond(corev1.NodeReady, corev1.ConditionTrue)},
			[]corev1.NodeAddress{addr(corev1.NodeHostName, "ready"), addr(corev1.NodeInternalIP, "10.0.0.1"), addr(corev1.NodeInternalIP, "10.0.0.2"), addr(corev1.NodeExternalIP, "203.0.113.1")}),
		node("not-ready", []corev1.NodeCondition{cond(corev1.NodeReady, corev1.ConditionFalse)}, []corev1.NodeAddress{addr(corev1.NodeInternalIP, "10.0.0.3")}),
		node("unknown", []corev1.NodeCondition{cond(corev1.NodeReady, corev1.ConditionUnknown)}, nil),
		node("no-ready-condition", []corev1.NodeCondition{cond(corev1.NodeDiskPressure, corev1.ConditionFalse)}, []corev1.NodeAddress{addr(corev1.NodeExternalIP, "2001:db8::1")}),
		node("no-conditions", nil, nil),
	}
	for _, n := range tests {
		p, err := Row(clusterID, n, time.Now())
		require.NoError(t, err)
		require.NoError(t, q.NodeUpsert(ctx, p))
	}
	cordoned := tests[1].DeepCopy()
	cordoned.Spec.Unschedulable = true
	p, err := Row(clusterID, cordoned, time.Now())
	require.NoError(t, err)
	require.NoError(t, q.NodeUpsert(ctx, p))
	tests[1] = cordoned
	// A row written without conditions but ready (as the console records
	// a node it acted on before the health job saw it) reads as ready.
	require.NoError(t, q.NodeUpsert(ctx, queries.NodeUpsertParams{ClusterID: clusterID, Name: "bare", Ready: true, Conditions: []byte("[]"), Addresses: []byte("[]"), Roles: []string{}}))

	page, err = ownPage(ownerID)
	require.NoError(t, err)
	require.Equal(t, "list", page.Cluster.Name)
	require.False(t, page.Fresh.Updated.IsZero(), "recorded when the newest row was")
	require.True(t, slices.IsSortedFunc(page.Nodes, func(a, b Listed) int { return strings.Compare(a.Name, b.Name) }), "by name")
	byName := map[string]Summary{}
	for _, l := range page.Nodes {
		byName[l.Name] = l.Summary
	}
	require.Len(t, byName, len(tests)+1)
	// Times compare as instants; when the row was last seen is the
	// database's.
	plain := func(s Summary) Summary {
		s.Created, s.LastSeen = s.Created.UTC(), time.Time{}
		return s
	}
	for _, n := range tests {
		got := byName[n.Name]
		require.False(t, got.LastSeen.IsZero(), n.Name)
		require.Equal(t, plain(summarize(n)), plain(got), n.Name)
		row, err := q.NodeGet(ctx, queries.NodeGetParams{ClusterID: clusterID, Name: n.Name})
		require.NoError(t, err)
		fromGo, _, err := fromRow(row)
		require.NoError(t, err)
		require.Equal(t, plain(fromGo), plain(got), n.Name)
	}
	require.Equal(t, Ready, byName["bare"].Status)
	require.Equal(t, []string{"Ready", "NotReady", "Unknown", "Unknown", "Unknown"},
		[]string{byName["ready"].Status, byName["not-ready"].Status, byName["unknown"].Status, byName["no-ready-condition"].Status, byName["no-conditions"].Status})
}

// TestRowsKeepTheNewestRead checks that a node's row is not overwritten
// with what was read before it: a health check that listed the nodes just
// before a cordon, and writes after it, leaves the cordon's row.
func TestRowsKeepTheNewestRead(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool := testenv.DB(t)
	q := queries.New(pool)
	var clusterID int64
	var ownerID int64
	require.NoError(t, pool.QueryRow(ctx, `INSERT INTO users (email, name) VALUES ('race@example.com', 'Race') RETURNING id`).Scan(&ownerID))
	require.NoError(t, pool.QueryRow(ctx, `
		INSERT INTO clusters (owner_id, name, slug, kubernetes_version, public_access_mode, status)
		VALUES ($1, 'race', 'race-nodes', 'v1.34.0', 'nodeport', 'ready') RETURNING id`, ownerID).Scan(&clusterID))
	n := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "worker"}}
	listed := time.Now()                  // the health check lists the nodes
	cordonedAt := listed.Add(time.Second) // the console cordons one and records it
	cordoned := n.DeepCopy()
	cordoned.Spec.Unschedulable = true
	upsert := func(n *corev1.Node, seen time.Time) {
		p, err := Row(clusterID, n, seen)
		require.NoError(t, err)
		require.NoError(t, q.NodeUpsert(ctx, p))
	}
	unschedulable := func() bool {
		row, err := q.NodeGet(ctx, queries.NodeGetParams{ClusterID: clusterID, Name: "worker"})
		require.NoError(t, err)
		return row.Unschedulable
	}
	upsert(cordoned, cordonedAt)
	upsert(n, listed) // the health check writes its older list
	require.True(t, unschedulable(), "the cordon's newer row stays")
	upsert(n, cordonedAt.Add(time.Minute)) // the next check: uncordoned since
	require.False(t, unschedulable(), "a newer read replaces it")
}
