package clusters_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/riverqueue/river"
	"github.com/riverqueue/river/riverdriver/riverpgxv5"
	"github.com/riverqueue/river/rivertest"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

	"github.com/kubebyon/kubebyon/internal/audit"
	"github.com/kubebyon/kubebyon/internal/clusters"
	"github.com/kubebyon/kubebyon/internal/entitlements"
	"github.com/kubebyon/kubebyon/internal/orgs"
	"github.com/kubebyon/kubebyon/internal/secrets"
	"github.com/kubebyon/kubebyon/internal/settings"
	"github.com/kubebyon/kubebyon/internal/testenv"
	"github.com/kubebyon/kubebyon/queries"
)

type svcBundle struct {
	pool *pgxpool.Pool
	box  *secrets.Box
	svc  *clusters.Service
}

// setupService gives a service on a database of the test's own whose host cluster
// is the shared test apiserver, named by a kubeconfig file as
// KUBEBYON_KUBECONFIG would. Jobs are inserted, never worked.
func setupService(t *testing.T) *svcBundle {
	t.Helper()
	ctx := context.Background()
	pool := testenv.DB(t)
	box, err := secrets.New(bytes.Repeat([]byte{9}, 32))
	require.NoError(t, err)
	path := filepath.Join(t.TempDir(), "host.kubeconfig")
	require.NoError(t, os.WriteFile(path, testenv.HostKube(t).Kubeconfig(t), 0o600))
	rt := settings.Defaults()
	rt.NodePortMin, rt.NodePortMax = testenv.NodePorts()
	rt.APIBaseDomain = "clusters.test"
	require.NoError(t, settings.Save(ctx, queries.New(pool), box, rt))
	return &svcBundle{pool: pool, box: box, svc: newService(t, pool, box, path)}
}

func newService(t *testing.T, pool *pgxpool.Pool, box *secrets.Box, kubeconfigPath string) *clusters.Service {
	t.Helper()
	rc, err := river.NewClient(riverpgxv5.New(pool), &river.Config{})
	require.NoError(t, err)
	return &clusters.Service{Pool: pool, River: rc, Box: box, KubeconfigPath: kubeconfigPath}
}

func (b *svcBundle) user(t *testing.T, email string) (queries.User, audit.Actor) {
	t.Helper()
	u, err := queries.New(b.pool).UserCreate(context.Background(), queries.UserCreateParams{Email: email, Name: email, Role: "user"})
	require.NoError(t, err)
	return u, audit.Actor{UserID: u.ID, Email: u.Email}
}

func (b *svcBundle) count(t *testing.T, query string, args ...any) int {
	t.Helper()
	var n int
	require.NoError(t, b.pool.QueryRow(context.Background(), query, args...).Scan(&n))
	return n
}

// insert makes a cluster row directly, past the plan's cap.
func (b *svcBundle) insert(t *testing.T, ownerID int64, name string) queries.Cluster {
	t.Helper()
	c, err := queries.New(b.pool).ClusterCreate(context.Background(), queries.ClusterCreateParams{
		OwnerID: ownerID, Name: name, Slug: name + "-slug",
		KubernetesVersion: "v1.34.0", PublicAccessMode: settings.AccessLoadBalancer,
	})
	require.NoError(t, err)
	return c
}

func TestCreate(t *testing.T) {
	t.Parallel()
	b := setupService(t)
	ctx := context.Background()
	u, a := b.user(t, "creator@example.com")

	c, err := b.svc.Create(ctx, actingAs(t, b.svc.Pool, u.ID), clusters.Input{Name: " web ", Description: "front end"}, a)
	require.NoError(t, err)
	require.Equal(t, "web", c.Name)
	require.True(t, strings.HasPrefix(c.Slug, "web-"), c.Slug)
	require.Equal(t, clusters.StatusPending, c.Status)
	require.Equal(t, "v1.34.0", c.KubernetesVersion, "the first allowed version is the default")
	require.Equal(t, settings.AccessNodePort, c.PublicAccessMode, "the admin's default access mode")
	require.True(t, c.NodePort.Valid)

	job := rivertest.RequireInserted(ctx, t, riverpgxv5.New(b.pool), clusters.ReconcileArgs{}, &rivertest.RequireInsertedOpts{Queue: clusters.Queue})
	require.Equal(t, c.ID, job.Args.ClusterID)
	_, events, err := b.svc.Timeline(ctx, actingAs(t, b.svc.Pool, u.ID), c.ID)
	require.NoError(t, err)
	require.Len(t, events, 1)
	require.Equal(t, "Created", events[0].Reason)
	require.Equal(t, 1, b.count(t, "SELECT count(*) FROM audit_events WHERE action = 'cluster.create' AND actor_id = $1", u.ID))
}

func TestCreateRejects(t *testing.T) {
	t.Parallel()
	b := setupService(t)
	ctx := context.Background()
	u, a := b.user(t, "picky@example.com")
	_, err := b.svc.Create(ctx, actingAs(t, b.svc.Pool, u.ID), clusters.Input{Name: "taken"}, a)
	require.NoError(t, err)

	tests := []struct {
		name  string
		in    clusters.Input
		field string
		msg   string
	}{
		{"empty name", clusters.Input{Name: "  "}, "name", "ErrClusterNameRequired"},
		{"uppercase", clusters.Input{Name: "Web"}, "name", "ErrClusterNameInvalid"},
		{"leading hyphen", clusters.Input{Name: "-web"}, "name", "ErrClusterNameInvalid"},
		{"dot", clusters.Input{Name: "web.app"}, "name", "ErrClusterNameInvalid"},
		{"too long", clusters.Input{Name: strings.Repeat("a", clusters.MaxNameLength+1)}, "name", "ErrClusterNameTooLong"},
		{"taken", clusters.Input{Name: "taken"}, "name", "ErrClusterNameTaken"},
		{"unknown version", clusters.Input{Name: "v", KubernetesVersion: "v1.20.0"}, "kubernetes_version", "ErrClusterVersion"},
		{"unknown access mode", clusters.Input{Name: "m", PublicAccessMode: "ingress"}, "public_access_mode", "ErrClusterAccessMode"},
		{"long description", clusters.Input{Name: "d", Description: strings.Repeat("é", clusters.MaxDescriptionLength+1)}, "description", "ErrClusterDescriptionInvalid"},
	}
	for _, tt := range tests {
		_, err := b.svc.Create(ctx, actingAs(t, b.svc.Pool, u.ID), tt.in, a)
		var fe clusters.FieldErrors
		require.ErrorAs(t, err, &fe, tt.name)
		require.Equal(t, tt.msg, fe[tt.field], tt.name)
	}
	require.Equal(t, 1, b.count(t, "SELECT count(*) FROM clusters"), "nothing written for a bad input")
	require.Equal(t, 1, b.count(t, "SELECT count(*) FROM river_job WHERE kind = 'cluster_reconcile'"))

	// The longest name fits.
	_, err = b.svc.Create(ctx, actingAs(t, b.svc.Pool, u.ID), clusters.Input{Name: strings.Repeat("a", clusters.MaxNameLength)}, a)
	require.NoError(t, err)
	// Another user may use the same name.
	other, oa := b.user(t, "other@example.com")
	_, err = b.svc.Create(ctx, actingAs(t, b.svc.Pool, other.ID), clusters.Input{Name: "taken"}, oa)
	require.NoError(t, err)
}

func TestCreatePlanLimit(t *testing.T) {
	t.Parallel()
	b := setupService(t)
	ctx := context.Background()
	u, a := b.user(t, "greedy@example.com")
	for _, name := range []string{"one", "two", "three"} {
		_, err := b.svc.Create(ctx, actingAs(t, b.svc.Pool, u.ID), clusters.Input{Name: name}, a)
		require.NoError(t, err)
	}
	_, err := b.svc.Create(ctx, actingAs(t, b.svc.Pool, u.ID), clusters.Input{Name: "four"}, a)
	require.ErrorIs(t, err, entitlements.ErrLimit)
	require.Equal(t, 3, b.count(t, "SELECT count(*) FROM clusters WHERE owner_id = $1", u.ID))

	// A deleted cluster no longer counts.
	var first int64
	require.NoError(t, b.pool.QueryRow(ctx, "SELECT id FROM clusters WHERE owner_id = $1 AND name = 'one'", u.ID).Scan(&first))
	require.NoError(t, queries.New(b.pool).ClusterMarkDeleted(ctx, first))
	_, err = b.svc.Create(ctx, actingAs(t, b.svc.Pool, u.ID), clusters.Input{Name: "four"}, a)
	require.NoError(t, err)
}

func TestCreateNeedsHostCluster(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool := testenv.DB(t)
	box, err := secrets.New(bytes.Repeat([]byte{9}, 32))
	require.NoError(t, err)
	b := &svcBundle{pool: pool, box: box, svc: newService(t, pool, box, "")}
	u, a := b.user(t, "early@example.com")

	// No KUBEBYON_KUBECONFIG, no settings, not in a cluster.
	_, err = b.svc.Create(ctx, actingAs(t, b.svc.Pool, u.ID), clusters.Input{Name: "first"}, a)
	require.ErrorIs(t, err, clusters.ErrNoHostCluster)
	require.Equal(t, "ErrClusterNoHost", err.Error())

	// A kubeconfig file that is not there names no usable host either.
	b.svc.KubeconfigPath = filepath.Join(t.TempDir(), "missing")
	_, err = b.svc.Create(ctx, actingAs(t, b.svc.Pool, u.ID), clusters.Input{Name: "first"}, a)
	require.ErrorIs(t, err, clusters.ErrNoHostCluster)

	// A host but no API base domain.
	b.svc.KubeconfigPath = ""
	rt := settings.Defaults()
	rt.NodePortMin, rt.NodePortMax = testenv.NodePorts()
	rt.HostKubeconfig = string(testenv.HostKube(t).Kubeconfig(t))
	require.NoError(t, settings.Save(ctx, queries.New(pool), box, rt))
	_, err = b.svc.Create(ctx, actingAs(t, b.svc.Pool, u.ID), clusters.Input{Name: "first"}, a)
	require.ErrorIs(t, err, clusters.ErrNoBaseDomain)
	require.Zero(t, b.count(t, "SELECT count(*) FROM clusters"))
	require.Zero(t, b.count(t, "SELECT count(*) FROM river_job"))
}

func TestList(t *testing.T) {
	t.Parallel()
	b := setupService(t)
	ctx := context.Background()
	u, _ := b.user(t, "lister@example.com")
	o, _ := b.user(t, "someone@example.com")
	var want []int64
	for _, name := range []string{"a", "b", "c", "d", "e"} {
		want = append([]int64{b.insert(t, u.ID, name).ID}, want...)
	}
	b.insert(t, o.ID, "theirs")
	gone := b.insert(t, u.ID, "gone")
	require.NoError(t, queries.New(b.pool).ClusterMarkDeleted(ctx, gone.ID))

	var got []int64
	var before int64
	for pages := 0; ; pages++ {
		require.Less(t, pages, 3)
		p, err := b.svc.List(ctx, actingAs(t, b.svc.Pool, u.ID), before, 2)
		require.NoError(t, err)
		for _, c := range p.Clusters {
			got = append(got, c.ID)
		}
		// The pages' own list, of fewer columns, pages the same way.
		s, err := b.svc.ListSummaries(ctx, actingAs(t, b.svc.Pool, u.ID), before, 2)
		require.NoError(t, err)
		require.Equal(t, p.NextBefore, s.NextBefore)
		require.Len(t, s.Clusters, len(p.Clusters))
		for i, c := range s.Clusters {
			full := p.Clusters[i]
			require.Equal(t, []any{full.ID, full.Name, full.Status, full.KubernetesVersion, full.PublicAccessMode, full.Endpoint, full.CreatedAt},
				[]any{c.ID, c.Name, c.Status, c.KubernetesVersion, c.PublicAccessMode, c.Endpoint, c.CreatedAt})
		}
		if p.NextBefore == 0 {
			break
		}
		before = p.NextBefore
	}
	require.Equal(t, want, got, "newest first, each once, the user's own, deleted ones left out")
	// The overview's newest few come with the count of all.
	for _, limit := range []int{2, 10} {
		o, err := b.svc.Overview(ctx, actingAs(t, b.svc.Pool, u.ID), limit)
		require.NoError(t, err)
		require.EqualValues(t, 5, o.Figures.Clusters)
		require.Len(t, o.Clusters, min(limit, 5))
		for i, c := range o.Clusters {
			require.Equal(t, want[i], c.ID)
		}
	}
	none, err := b.svc.Overview(ctx, orgs.Acting{OrgID: -1, UserID: -1}, 10)
	require.NoError(t, err)
	require.Zero(t, none.Figures.Clusters, "a user without clusters has none")
	require.Empty(t, none.Clusters)
}

func TestTimeline(t *testing.T) {
	t.Parallel()
	b := setupService(t)
	ctx := context.Background()
	q := queries.New(b.pool)
	u, a := b.user(t, "watcher@example.com")
	o, _ := b.user(t, "snoop@example.com")
	c, err := b.svc.Create(ctx, actingAs(t, b.svc.Pool, u.ID), clusters.Input{Name: "watched"}, a)
	require.NoError(t, err)

	_, events, err := b.svc.Timeline(ctx, actingAs(t, b.svc.Pool, u.ID), c.ID)
	require.NoError(t, err)
	require.Len(t, events, 1)
	seen := events[0].ID

	up, err := b.svc.UpdatesAfter(ctx, actingAs(t, b.svc.Pool, u.ID), c.ID, seen)
	require.NoError(t, err)
	require.Empty(t, up.Events)
	require.False(t, up.Done, "a pending cluster is not settled")

	for _, reason := range []string{"Provisioning", "Installing"} {
		_, err := q.ClusterEventCreate(ctx, queries.ClusterEventCreateParams{ClusterID: c.ID, Level: "info", Reason: reason})
		require.NoError(t, err)
	}
	require.NoError(t, q.ClusterSetStatus(ctx, queries.ClusterSetStatusParams{ID: c.ID, Status: clusters.StatusProvisioning}))
	up, err = b.svc.UpdatesAfter(ctx, actingAs(t, b.svc.Pool, u.ID), c.ID, seen)
	require.NoError(t, err)
	require.Equal(t, []string{"Provisioning", "Installing"}, reasons(up.Events))
	require.Equal(t, clusters.StatusProvisioning, up.Cluster.Status)
	require.False(t, up.Done)

	_, err = q.ClusterEventCreate(ctx, queries.ClusterEventCreateParams{ClusterID: c.ID, Level: "info", Reason: "Ready"})
	require.NoError(t, err)
	_, markErr := q.ClusterMarkReady(ctx, queries.ClusterMarkReadyParams{ID: c.ID, Endpoint: c.Slug + ".clusters.test", Generation: c.Generation})
	require.NoError(t, markErr)
	up, err = b.svc.UpdatesAfter(ctx, actingAs(t, b.svc.Pool, u.ID), c.ID, up.Events[1].ID)
	require.NoError(t, err)
	require.Equal(t, []string{"Ready"}, reasons(up.Events))
	require.True(t, up.Done, "ready is settled")

	// A deleted cluster is still found by its page, to show the end.
	require.NoError(t, q.ClusterMarkDeleted(ctx, c.ID))
	_, err = b.svc.Get(ctx, actingAs(t, b.svc.Pool, u.ID), c.ID)
	require.ErrorIs(t, err, clusters.ErrNotFound)
	up, err = b.svc.UpdatesAfter(ctx, actingAs(t, b.svc.Pool, u.ID), c.ID, 0)
	require.NoError(t, err)
	require.True(t, up.Done)
	require.Len(t, up.Events, 4)

	// Nobody else's.
	_, _, err = b.svc.Timeline(ctx, actingAs(t, b.svc.Pool, o.ID), c.ID)
	require.ErrorIs(t, err, clusters.ErrNotFound)
	_, err = b.svc.UpdatesAfter(ctx, actingAs(t, b.svc.Pool, o.ID), c.ID, 0)
	require.ErrorIs(t, err, clusters.ErrNotFound)
}

func reasons(events []queries.ClusterEvent) []string {
	out := make([]string, len(events))
	for i, e := range events {
		out[i] = e.Reason
	}
	return out
}

func TestTimelineKeepsAskingWhileEventsRemain(t *testing.T) {
	t.Parallel()
	b := setupService(t)
	ctx := context.Background()
	q := queries.New(b.pool)
	u, a := b.user(t, "chatty@example.com")
	c, err := b.svc.Create(ctx, actingAs(t, b.svc.Pool, u.ID), clusters.Input{Name: "chatty"}, a)
	require.NoError(t, err)
	for range clusters.TimelineLength + 5 {
		_, err := q.ClusterEventCreate(ctx, queries.ClusterEventCreateParams{ClusterID: c.ID, Level: "warning", Reason: "HostUnreachable", Message: "dial tcp: timeout"})
		require.NoError(t, err)
	}
	require.NoError(t, q.ClusterMarkFailed(ctx, queries.ClusterMarkFailedParams{ID: c.ID, StatusMessage: "gave up"}))

	up, err := b.svc.UpdatesAfter(ctx, actingAs(t, b.svc.Pool, u.ID), c.ID, 0)
	require.NoError(t, err)
	require.Len(t, up.Events, clusters.TimelineLength)
	require.False(t, up.Done, "failed, but more events are to come")
	up, err = b.svc.UpdatesAfter(ctx, actingAs(t, b.svc.Pool, u.ID), c.ID, up.Events[len(up.Events)-1].ID)
	require.NoError(t, err)
	require.Len(t, up.Events, 6)
	require.True(t, up.Done)

	_, events, err := b.svc.Timeline(ctx, actingAs(t, b.svc.Pool, u.ID), c.ID)
	require.NoError(t, err)
	require.Len(t, events, clusters.TimelineLength, "the page shows the newest events")
	require.Less(t, events[0].ID, events[1].ID, "oldest first")
	require.Equal(t, up.Events[5].ID, events[len(events)-1].ID)
}

// TestEdit: an Edit's steps change the cluster in one transaction, under
// its lock: with a test of its entity tag, a change made over another
// state is ErrPreconditionFailed and changes nothing; a step refused
// takes back the steps before it; another owner's cluster is not found.
// Apply patches the fields given over the cluster's current ones.
func TestEdit(t *testing.T) {
	t.Parallel()
	b := setupService(t)
	ctx := context.Background()
	u, a := b.user(t, "patcher@example.com")
	rt := settings.Defaults()
	rt.NodePortMin, rt.NodePortMax = testenv.NodePorts()
	rt.APIBaseDomain = "clusters.test"
	rt.AllowedVersions = []string{"v1.34.0", "v1.33.4"}
	require.NoError(t, settings.Save(ctx, queries.New(b.pool), b.box, rt))
	c, err := b.svc.Create(ctx, actingAs(t, b.svc.Pool, u.ID), clusters.Input{Name: "patched", Description: "keep me", PublicAccessMode: settings.AccessLoadBalancer}, a)
	require.NoError(t, err)
	apply := func(p clusters.Patch) clusters.Step {
		return func(ctx context.Context, tx pgx.Tx, cur queries.Cluster) error {
			_, err := b.svc.Apply(ctx, tx, cur, p, a)
			return err
		}
	}
	is := func(tag string) func(string) bool { return func(etag string) bool { return etag == tag } }
	_, tag, err := b.svc.Tagged(ctx, actingAs(t, b.svc.Pool, u.ID), c.ID)
	require.NoError(t, err)

	version := "v1.33.4"
	got, changed, err := b.svc.Edit(ctx, actingAs(t, b.svc.Pool, u.ID), c.ID, is(tag), apply(clusters.Patch{KubernetesVersion: &version}))
	require.NoError(t, err)
	require.Equal(t, "v1.33.4", got.KubernetesVersion)
	require.Equal(t, "keep me", got.Description)
	require.Equal(t, settings.AccessLoadBalancer, got.PublicAccessMode)
	require.Equal(t, c.Generation+1, got.Generation)
	require.NotEqual(t, tag, changed)
	_, read, err := b.svc.Tagged(ctx, actingAs(t, b.svc.Pool, u.ID), c.ID)
	require.NoError(t, err)
	require.Equal(t, changed, read, "Edit answers the tag Tagged reads")

	lost := "lost"
	_, _, err = b.svc.Edit(ctx, actingAs(t, b.svc.Pool, u.ID), c.ID, is(tag), apply(clusters.Patch{Description: &lost}))
	require.ErrorIs(t, err, clusters.ErrPreconditionFailed)
	bad := "ingress"
	_, _, err = b.svc.Edit(ctx, actingAs(t, b.svc.Pool, u.ID), c.ID, nil, apply(clusters.Patch{Description: &lost}), apply(clusters.Patch{PublicAccessMode: &bad}))
	var fe clusters.FieldErrors
	require.ErrorAs(t, err, &fe)
	require.Equal(t, "ErrClusterAccessMode", fe["public_access_mode"])
	cur, err := b.svc.Get(ctx, actingAs(t, b.svc.Pool, u.ID), c.ID)
	require.NoError(t, err)
	require.Equal(t, "keep me", cur.Description, "neither the refused edit nor the rolled-back step changed it")
	_, unchanged, err := b.svc.Tagged(ctx, actingAs(t, b.svc.Pool, u.ID), c.ID)
	require.NoError(t, err)
	require.Equal(t, changed, unchanged)

	o, oa := b.user(t, "intruder@example.com")
	_, _, err = b.svc.Edit(ctx, actingAs(t, b.svc.Pool, o.ID), c.ID, nil, func(ctx context.Context, tx pgx.Tx, cur queries.Cluster) error {
		_, err := b.svc.Apply(ctx, tx, cur, clusters.Patch{KubernetesVersion: &version}, oa)
		return err
	})
	require.ErrorIs(t, err, clusters.ErrNotFound)
	_, _, err = b.svc.Tagged(ctx, actingAs(t, b.svc.Pool, o.ID), c.ID)
	require.ErrorIs(t, err, clusters.ErrNotFound)
}

// vclusterKubeconfig is a kubeconfig as vcluster writes it: for use inside
// the host cluster.
func vclusterKubeconfig(t *testing.T) []byte {
	t.Helper()
	cfg := clientcmdapi.NewConfig()
	cfg.Clusters["my-vcluster"] = &clientcmdapi.Cluster{Server: "https://localhost:8443", CertificateAuthorityData: []byte("ca")}
	cfg.AuthInfos["my-vcluster"] = &clientcmdapi.AuthInfo{ClientCertificateData: []byte("cert"), ClientKeyData: []byte("key")}
	cfg.Contexts["my-vcluster"] = &clientcmdapi.Context{Cluster: "my-vcluster", AuthInfo: "my-vcluster"}
	cfg.CurrentContext = "my-vcluster"
	b, err := clientcmd.Write(*cfg)
	require.NoError(t, err)
	return b
}

// putKubeconfigSecret writes vcluster's Secret for c on the host cluster.
func putKubeconfigSecret(t *testing.T, c queries.Cluster, kubeconfig []byte) {
	t.Helper()
	ctx := context.Background()
	kube := testenv.HostKube(t).Client(t)
	_, err := kube.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: clusters.Namespace(c)}}, metav1.CreateOptions{})
	require.NoError(t, err)
	t.Cleanup(func() {
		_ = kube.CoreV1().Namespaces().Delete(context.Background(), clusters.Namespace(c), metav1.DeleteOptions{})
	})
	_, err = kube.CoreV1().Secrets(clusters.Namespace(c)).Create(ctx, &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: clusters.KubeconfigSecretName(c)},
		Data:       map[string][]byte{"config": kubeconfig},
	}, metav1.CreateOptions{})
	require.NoError(t, err)
}

func TestKubeconfig(t *testing.T) {
	t.Parallel()
	b := setupService(t)
	ctx := context.Background()
	q := queries.New(b.pool)
	u, a := b.user(t, "kubectl@example.com")
	c, err := b.svc.Create(ctx, actingAs(t, b.svc.Pool, u.ID), clusters.Input{Name: "kc"}, a)
	require.NoError(t, err)
	downloads := func() int {
		return b.count(t, "SELECT count(*) FROM audit_events WHERE action = 'cluster.kubeconfig_download' AND target_id = $1", fmt.Sprint(c.ID))
	}

	_, _, err = b.svc.Kubeconfig(ctx, actingAs(t, b.svc.Pool, u.ID), c.ID, a)
	require.ErrorIs(t, err, clusters.ErrNotReady)

	endpoint := c.Slug + ".clusters.test"
	_, markErr := q.ClusterMarkReady(ctx, queries.ClusterMarkReadyParams{ID: c.ID, Endpoint: endpoint, Generation: c.Generation})
	require.NoError(t, markErr)
	_, _, err = b.svc.Kubeconfig(ctx, actingAs(t, b.svc.Pool, u.ID), c.ID, a)
	require.ErrorIs(t, err, clusters.ErrKubeconfigMissing, "ready, but the Secret is not there")

	putKubeconfigSecret(t, c, vclusterKubeconfig(t))
	got, raw, err := b.svc.Kubeconfig(ctx, actingAs(t, b.svc.Pool, u.ID), c.ID, a)
	require.NoError(t, err)
	require.Equal(t, c.ID, got.ID)
	cfg, err := clientcmd.Load(raw)
	require.NoError(t, err)
	require.Len(t, cfg.Clusters, 1)
	require.Equal(t, "https://"+endpoint, cfg.Clusters["my-vcluster"].Server)
	require.Equal(t, []byte("ca"), cfg.Clusters["my-vcluster"].CertificateAuthorityData)
	require.Equal(t, []byte("cert"), cfg.AuthInfos["my-vcluster"].ClientCertificateData)
	require.Equal(t, "my-vcluster", cfg.CurrentContext)
	require.Equal(t, 1, downloads())

	o, oa := b.user(t, "thief@example.com")
	_, _, err = b.svc.Kubeconfig(ctx, actingAs(t, b.svc.Pool, o.ID), c.ID, oa)
	require.ErrorIs(t, err, clusters.ErrNotFound)
	require.Equal(t, 1, downloads(), "only handing it out is recorded")
}

// TestVirtualConfigSelfContained: a kubeconfig Secret that would make the
// platform run a program (or read a file) is refused, and nothing runs.
func TestVirtualConfigSelfContained(t *testing.T) {
	t.Parallel()
	b := setupService(t)
	ctx := context.Background()
	u, a := b.user(t, "exec@example.com")
	c, err := b.svc.Create(ctx, actingAs(t, b.svc.Pool, u.ID), clusters.Input{Name: "execs"}, a)
	require.NoError(t, err)
	_, err = queries.New(b.pool).ClusterMarkReady(ctx, queries.ClusterMarkReadyParams{ID: c.ID, Endpoint: c.Slug + ".clusters.test", Generation: c.Generation})
	require.NoError(t, err)
	c, err = b.svc.Get(ctx, actingAs(t, b.svc.Pool, u.ID), c.ID)
	require.NoError(t, err)
	pwned := filepath.Join(t.TempDir(), "pwned")
	putKubeconfigSecret(t, c, []byte(fmt.Sprintf(`apiVersion: v1
kind: Config
clusters: [{name: c, cluster: {server: "https://127.0.0.1:1"}}]
contexts: [{name: c, context: {cluster: c, user: u}}]
current-context: c
users: [{name: u, user: {exec: {apiVersion: client.authentication.k8s.io/v1, command: /bin/sh, args: ["-c", "touch %s"]}}}]
`, pwned)))

	cfg, err := b.svc.VirtualConfig(ctx, c)
	require.ErrorIs(t, err, clusters.ErrKubeconfigMissing)
	require.Nil(t, cfg)
	_, _, err = b.svc.Kubeconfig(ctx, actingAs(t, b.svc.Pool, u.ID), c.ID, a)
	require.ErrorIs(t, err, clusters.ErrKubeconfigMissing)
	require.NoFileExists(t, pwned)
}

// TestCreateRefusals: bad input and limits change nothing.
func TestCreateRefusals(t *testing.T) {
	t.Parallel()
	b := setupService(t)
	ctx := context.Background()
	owner, a := b.user(t, "owner@example.com")
	create := func(name string) {
		t.Helper()
		_, err := b.svc.Create(ctx, actingAs(t, b.svc.Pool, owner.ID), clusters.Input{Name: name}, a)
		require.NoError(t, err)
	}
	tests := []struct {
		name string
		in   clusters.Input
		want string
	}{
		{"uppercase", clusters.Input{Name: "Prod"}, "ErrClusterNameInvalid"},
		{"empty", clusters.Input{Name: " "}, "ErrClusterNameRequired"},
		{"too long", clusters.Input{Name: "a123456789012345678901234567890123456789x"}, "ErrClusterNameTooLong"},
		{"dots", clusters.Input{Name: "a.b"}, "ErrClusterNameInvalid"},
		{"unknown version", clusters.Input{Name: "ok", KubernetesVersion: "v1.20.0"}, "ErrClusterVersion"},
		{"bad access mode", clusters.Input{Name: "ok", PublicAccessMode: "hostport"}, "ErrClusterAccessMode"},
	}
	for _, tt := range tests {
		_, err := b.svc.Create(ctx, actingAs(t, b.svc.Pool, owner.ID), tt.in, a)
		var fe clusters.FieldErrors
		require.True(t, errors.As(err, &fe), tt.name)
		require.Contains(t, []string{fe["name"], fe["kubernetes_version"], fe["public_access_mode"]}, tt.want, tt.name)
	}

	create("one")
	_, err := b.svc.Create(ctx, actingAs(t, b.svc.Pool, owner.ID), clusters.Input{Name: "one"}, a)
	var fe clusters.FieldErrors
	require.True(t, errors.As(err, &fe))
	require.Equal(t, "ErrClusterNameTaken", fe["name"])

	create("two")
	create("three")
	_, err = b.svc.Create(ctx, actingAs(t, b.svc.Pool, owner.ID), clusters.Input{Name: "four"}, a)
	require.ErrorIs(t, err, entitlements.ErrLimit, "the default plan allows 3")

	noHost := &clusters.Service{Pool: b.pool, River: b.svc.River, Box: b.box}
	_, err = noHost.Create(ctx, actingAs(t, b.pool, owner.ID), clusters.Input{Name: "nohost"}, a)
	require.ErrorIs(t, err, clusters.ErrNoHostCluster)

	var n int
	require.NoError(t, b.pool.QueryRow(ctx, "SELECT count(*) FROM clusters").Scan(&n))
	require.Equal(t, 3, n)
	require.NoError(t, b.pool.QueryRow(ctx, "SELECT count(*) FROM river_job WHERE kind = 'cluster_reconcile'").Scan(&n))
	require.Equal(t, 3, n, "a job for each cluster written, none for the refused")
}
