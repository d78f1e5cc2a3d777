package jobs_test

import (
	"context"
	"io"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/riverqueue/river"
	"github.com/riverqueue/river/riverdriver/riverpgxv5"
	"github.com/riverqueue/river/rivertest"
	"github.com/riverqueue/river/rivertype"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/kubebyon/kubebyon/internal/audit"
	"github.com/kubebyon/kubebyon/internal/checks"
	"github.com/kubebyon/kubebyon/internal/clusters"
	"github.com/kubebyon/kubebyon/internal/helm"
	"github.com/kubebyon/kubebyon/internal/locale"
	"github.com/kubebyon/kubebyon/internal/notify"
	"github.com/kubebyon/kubebyon/internal/secrets"
	"github.com/kubebyon/kubebyon/internal/settings"
	"github.com/kubebyon/kubebyon/internal/testenv"
	"github.com/kubebyon/kubebyon/internal/vcluster"
	"github.com/kubebyon/kubebyon/jobs"
	"github.com/kubebyon/kubebyon/queries"
)

type reconcileBundle struct {
	pool    *pgxpool.Pool
	box     *secrets.Box
	host    *testenv.Kube
	client  kubernetes.Interface
	svc     *clusters.Service
	owner   queries.User
	kubecfg string
	logger  *slog.Logger
}

// setupReconcile gives a test its database, the shared host apiserver as the host
// cluster (through a KUBEBYON_KUBECONFIG file), settings that point at the
// real chart, and a user.
func setupReconcile(t *testing.T) *reconcileBundle {
	t.Helper()
	ctx := context.Background()
	pool := testenv.DB(t)
	box, err := testBox()
	require.NoError(t, err)
	host := testenv.HostKube(t)
	kubecfg := filepath.Join(t.TempDir(), "host.kubeconfig")
	require.NoError(t, os.WriteFile(kubecfg, host.Kubeconfig(t), 0o600))

	rt := settings.Defaults()
	rt.NodePortMin, rt.NodePortMax = testenv.NodePorts()
	rt.APIBaseDomain = "clusters.test"
	rt.ChartPath = testenv.VClusterChart(t)
	rt.AllowedVersions = []string{"v1.34.0", "v1.33.4"}
	require.NoError(t, settings.Save(ctx, queries.New(pool), box, rt))

	u, err := queries.New(pool).UserCreateUnverified(ctx, queries.UserCreateUnverifiedParams{Email: "owner@example.com", Name: "Owner"})
	require.NoError(t, err)

	// An insert-only client: tests work jobs themselves, step by step.
	rc, err := river.NewClient(riverpgxv5.New(pool), &river.Config{})
	require.NoError(t, err)
	return &reconcileBundle{
		pool: pool, box: box, host: host, client: host.Client(t), owner: u, kubecfg: kubecfg,
		svc:    &clusters.Service{Pool: pool, River: rc, Box: box, KubeconfigPath: kubecfg},
		logger: slog.New(slog.NewTextHandler(io.Discard, nil)),
	}
}

func (b *reconcileBundle) worker(t *testing.T, readyTimeout time.Duration) *rivertest.Worker[clusters.ReconcileArgs, pgx.Tx] {
	w := &jobs.ClusterReconcileWorker{
		Pool: b.pool, Logger: b.logger, Box: b.box, Charts: &vcluster.Charts{},
		KubeconfigPath: b.kubecfg, PollInterval: 10 * time.Millisecond, ReadyTimeout: readyTimeout,
	}
	return rivertest.NewWorker(t, riverpgxv5.New(b.pool), &river.Config{}, w)
}

// work runs one attempt of the reconcile job for a cluster.
func (b *reconcileBundle) work(t *testing.T, ctx context.Context, w *rivertest.Worker[clusters.ReconcileArgs, pgx.Tx], id int64) (*rivertest.WorkResult, error) {
	t.Helper()
	tx, err := b.pool.Begin(context.Background())
	require.NoError(t, err)
	defer tx.Rollback(context.Background()) //nolint:errcheck
	return w.Work(ctx, t, tx, clusters.ReconcileArgs{ClusterID: id}, nil)
}

// notices are the titles of the owner's in-app notifications of kind,
// oldest first, and how many emails are queued.
func (b *reconcileBundle) notices(t *testing.T, kind notify.Kind) ([]string, int) {
	t.Helper()
	ctx := context.Background()
	catalog, err := locale.New()
	require.NoError(t, err)
	rows, err := queries.New(b.pool).NotificationListByUser(ctx, queries.NotificationListByUserParams{UserID: b.owner.ID, RowLimit: 1000})
	require.NoError(t, err)
	titles := []string{}
	for _, n := range slices.Backward(rows) {
		if n.Kind == string(kind) {
			title, _ := notify.Word(catalog.For("en"), n)
			titles = append(titles, title)
		}
	}
	var emails int
	require.NoError(t, b.pool.QueryRow(ctx, "SELECT count(*) FROM river_job WHERE kind = 'email'").Scan(&emails))
	return titles, emails
}

func (b *reconcileBundle) cluster(t *testing.T, id int64) queries.Cluster {
	t.Helper()
	c, err := queries.New(b.pool).ClusterGetByID(context.Background(), id)
	require.NoError(t, err)
	return c
}

func (b *reconcileBundle) reasons(t *testing.T, id int64) []string {
	t.Helper()
	evs, err := queries.New(b.pool).ClusterEventListByCluster(context.Background(), queries.ClusterEventListByClusterParams{ClusterID: id, RowLimit: 1000})
	require.NoError(t, err)
	var out []string
	for _, e := range evs {
		out = append(out, e.Reason)
	}
	return out
}

// playControlPlane does what the vcluster pod would: the StatefulSet
// becomes ready and vc-<release> holds a kubeconfig, here for virt.
func (b *reconcileBundle) playControlPlane(t *testing.T, c queries.Cluster, virt *testenv.Kube) {
	t.Helper()
	ctx := context.Background()
	ns := vcluster.Namespace(c)
	sts, err := b.client.AppsV1().StatefulSets(ns).Get(ctx, vcluster.ReleaseName(c), metav1.GetOptions{})
	require.NoError(t, err)
	sts.Status.Replicas, sts.Status.ReadyReplicas, sts.Status.ObservedGeneration = 1, 1, sts.Generation
	_, err = b.client.AppsV1().StatefulSets(ns).UpdateStatus(ctx, sts, metav1.UpdateOptions{})
	require.NoError(t, err)
	secret := &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: vcluster.KubeconfigSecretName(c), Namespace: ns},
		Data:       map[string][]byte{"config": virt.Kubeconfig(t)},
	}
	_, err = b.client.CoreV1().Secrets(ns).Create(ctx, secret, metav1.CreateOptions{})
	if !apierrors.IsAlreadyExists(err) {
		require.NoError(t, err)
	}
}

// finalizeNamespace plays the namespace controller, which the test
// apiserver does not run: a terminating namespace loses its finalizer.
func (b *reconcileBundle) finalizeNamespace(t *testing.T, c queries.Cluster) {
	t.Helper()
	ctx := context.Background()
	ns, err := b.client.CoreV1().Namespaces().Get(ctx, vcluster.Namespace(c), metav1.GetOptions{})
	require.NoError(t, err)
	require.NotNil(t, ns.DeletionTimestamp, "the namespace was asked to go")
	ns.Spec.Finalizers = nil
	_, err = b.client.CoreV1().Namespaces().Finalize(ctx, ns, metav1.UpdateOptions{})
	require.NoError(t, err)
}

// roomyPlan lifts the owner's cluster cap above the default plan's 3.
func (b *reconcileBundle) roomyPlan(t *testing.T) {
	t.Helper()
	_, err := b.pool.Exec(context.Background(), `WITH p AS (INSERT INTO plans (name, max_clusters, max_nodes_per_cluster) VALUES ('roomy', 1000, 100) RETURNING id)
		UPDATE subscriptions SET plan_id = (SELECT id FROM p) WHERE org_id = (SELECT id FROM organizations WHERE personal_of = $1)`, b.owner.ID)
	require.NoError(t, err)
}

func (b *reconcileBundle) create(t *testing.T, name string) queries.Cluster {
	t.Helper()
	c, err := b.svc.Create(context.Background(), actingAs(t, b.svc.Pool, b.owner.ID), clusters.Input{Name: name}, audit.Actor{UserID: b.owner.ID})
	require.NoError(t, err)
	return c
}

// TestLifecycle: create, provision, ready with a working kubeconfig,
// upgrade, delete, through the real worker, Helm, chart and apiserver.
func TestLifecycle(t *testing.T) {
	t.Parallel()
	b := setupReconcile(t)
	ctx := context.Background()
	w := b.worker(t, time.Minute)
	c := b.create(t, "life")
	require.Equal(t, "pending", c.Status)
	require.True(t, c.NodePort.Valid, "nodeport is the default access mode")
	require.True(t, c.KonnectivityNodePort.Valid)
	require.NotEqual(t, c.NodePort.Int32, c.KonnectivityNodePort.Int32)

	res, err := b.work(t, ctx, w, c.ID)
	require.NoError(t, err)
	require.Equal(t, river.EventKindJobSnoozed, res.EventKind, "waits for the control plane")
	c = b.cluster(t, c.ID)
	require.Equal(t, "provisioning", c.Status)
	svc, err := b.client.CoreV1().Services(vcluster.Namespace(c)).Get(ctx, "life", metav1.GetOptions{})
	require.NoError(t, err)
	require.Equal(t, corev1.ServiceTypeNodePort, svc.Spec.Type)

	virt := testenv.NewKube(t)
	b.playControlPlane(t, c, virt)
	res, err = b.work(t, ctx, w, c.ID)
	require.NoError(t, err)
	require.Equal(t, river.EventKindJobCompleted, res.EventKind)
	c = b.cluster(t, c.ID)
	require.Equal(t, "ready", c.Status)
	require.Equal(t, c.Slug+".clusters.test", c.Endpoint)
	require.Equal(t, c.Generation, c.ObservedGeneration)
	require.Equal(t, []string{"Created", "Provisioning", "NoLicense", "Installing", "WaitingForControlPlane", "Ready"}, b.reasons(t, c.ID))
	var installing string
	require.NoError(t, b.pool.QueryRow(context.Background(), "SELECT message FROM cluster_events WHERE cluster_id = $1 AND reason = 'Installing'", c.ID).Scan(&installing))
	require.Equal(t, "vcluster "+settings.VClusterVersion, installing, "the chart from vcluster's source tree says 0.0.1")
	ready, emails := b.notices(t, notify.ClusterReady)
	require.Equal(t, []string{"Cluster life is ready"}, ready, "the owner is told in the console")
	require.Zero(t, emails, "not by email, unless they ask for it")

	// The kubeconfig vcluster wrote works, once pointed at the server.
	secret, err := b.client.CoreV1().Secrets(vcluster.Namespace(c)).Get(ctx, vcluster.KubeconfigSecretName(c), metav1.GetOptions{})
	require.NoError(t, err)
	vcfg, err := clientcmd.RESTConfigFromKubeConfig(secret.Data["config"])
	require.NoError(t, err)
	vclient, err := kubernetes.NewForConfig(vcfg)
	require.NoError(t, err)
	_, err = vclient.CoreV1().Namespaces().List(ctx, metav1.ListOptions{})
	require.NoError(t, err)

	// Upgrade: a new generation, a Helm upgrade to the new Kubernetes image.
	c, err = b.svc.Update(ctx, actingAs(t, b.svc.Pool, b.owner.ID), c.ID, clusters.Input{KubernetesVersion: "v1.33.4", PublicAccessMode: "nodeport"}, audit.Actor{UserID: b.owner.ID})
	require.NoError(t, err)
	require.Equal(t, "updating", c.Status)
	res, err = b.work(t, ctx, w, c.ID)
	require.NoError(t, err)
	require.Equal(t, river.EventKindJobCompleted, res.EventKind, "the control plane is still ready")
	c = b.cluster(t, c.ID)
	require.Equal(t, "ready", c.Status)
	require.Equal(t, c.Generation, c.ObservedGeneration)
	rels, err := helm.Releases(b.host.Config, vcluster.Namespace(c), "life", b.logger)
	require.NoError(t, err)
	require.Len(t, rels, 2)
	require.Equal(t, "v1.33.4", rels[1].Config["controlPlane"].(map[string]any)["distro"].(map[string]any)["k8s"].(map[string]any)["image"].(map[string]any)["tag"])
	ready, _ = b.notices(t, notify.ClusterReady)
	require.Len(t, ready, 2, "ready again after the upgrade")

	// Delete: uninstall, namespace asked to go, then gone.
	_, err = b.svc.Delete(ctx, actingAs(t, b.svc.Pool, b.owner.ID), c.ID, "life", audit.Actor{UserID: b.owner.ID})
	require.NoError(t, err)
	res, err = b.work(t, ctx, w, c.ID)
	require.NoError(t, err)
	require.Equal(t, river.EventKindJobSnoozed, res.EventKind, "waits for the namespace")
	require.Equal(t, "deleting", b.cluster(t, c.ID).Status)
	rels, err = helm.Releases(b.host.Config, vcluster.Namespace(c), "life", b.logger)
	require.NoError(t, err)
	require.Empty(t, rels)
	b.finalizeNamespace(t, c)
	// Its DNS check idles (published, as far as it knows) until the
	// deletion makes it due.
	require.NoError(t, queries.New(b.pool).ClusterCheckIdle(ctx, queries.ClusterCheckIdleParams{ClusterID: c.ID, Kind: string(checks.DNSRecord)}))
	res, err = b.work(t, ctx, w, c.ID)
	require.NoError(t, err)
	require.Equal(t, river.EventKindJobCompleted, res.EventKind)
	c = b.cluster(t, c.ID)
	require.Equal(t, "deleted", c.Status)
	require.False(t, c.NodePort.Valid, "the node port is free again")
	dnsCheck, err := queries.New(b.pool).ClusterCheckGet(ctx, queries.ClusterCheckGetParams{ClusterID: c.ID, Kind: string(checks.DNSRecord)})
	require.NoError(t, err)
	require.True(t, dnsCheck.DueAt.Valid && !dnsCheck.DueAt.Time.After(time.Now()), "its DNS record is removed next")
	_, err = b.client.CoreV1().Namespaces().Get(ctx, vcluster.Namespace(c), metav1.GetOptions{})
	require.True(t, apierrors.IsNotFound(err))

	// The name can be used again.
	b.create(t, "life")
}

// TestLicenseEvent: a cluster reconciled without a vCluster Platform
// connection, whose license private nodes need, says so in its events.
func TestLicenseEvent(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		name      string
		accessKey string
		warned    bool
	}{
		{name: "unlicensed", warned: true},
		{name: "licensed", accessKey: "platform-access-key"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			b := setupReconcile(t)
			ctx := context.Background()
			rt, err := settings.Load(ctx, queries.New(b.pool), b.box)
			require.NoError(t, err)
			rt.PlatformHost, rt.PlatformAccessKey, rt.PlatformProject = "platform.example.com", tt.accessKey, "default"
			require.NoError(t, settings.Save(ctx, queries.New(b.pool), b.box, rt))
			c := b.create(t, tt.name)
			_, err = b.work(t, ctx, b.worker(t, time.Minute), c.ID)
			require.NoError(t, err)
			evs, err := queries.New(b.pool).ClusterEventListByCluster(ctx, queries.ClusterEventListByClusterParams{ClusterID: c.ID, RowLimit: 1000})
			require.NoError(t, err)
			warned := slices.ContainsFunc(evs, func(e queries.ClusterEvent) bool { return e.Reason == "NoLicense" && e.Level == "warning" })
			require.Equal(t, tt.warned, warned, b.reasons(t, c.ID))
		})
	}
}

// TestCrashSafety interrupts the worker at many points of a first install
// (its context ends mid-request, mid-Helm, between steps); a fresh worker
// then brings the cluster to ready with exactly one deployed release.
func TestCrashSafety(t *testing.T) {
	t.Parallel()
	b := setupReconcile(t)
	b.roomyPlan(t)
	virt := testenv.NewKube(t)
	for i, cut := range []time.Duration{time.Millisecond, 5 * time.Millisecond, 20 * time.Millisecond, 50 * time.Millisecond, 100 * time.Millisecond, 200 * time.Millisecond, 400 * time.Millisecond} {
		name := "crash-" + string(rune('a'+i))
		c := b.create(t, name)
		w := b.worker(t, time.Minute)

		ctx, cancel := context.WithTimeout(context.Background(), cut)
		_, _ = b.work(t, ctx, w, c.ID)
		cancel()

		var done bool
		for attempt := 0; attempt < 10 && !done; attempt++ {
			res, err := b.work(t, context.Background(), w, c.ID)
			if err != nil {
				continue // a failure is recorded and retried, like River would
			}
			switch res.EventKind {
			case river.EventKindJobSnoozed:
				b.playControlPlane(t, b.cluster(t, c.ID), virt)
			case river.EventKindJobCompleted:
				done = true
			}
		}
		require.True(t, done, "cut after %s: the cluster never became ready: %+v", cut, b.cluster(t, c.ID))
		c = b.cluster(t, c.ID)
		require.Equal(t, "ready", c.Status, "cut after %s", cut)
		rels, err := helm.Releases(b.host.Config, vcluster.Namespace(c), name, b.logger)
		require.NoError(t, err)
		require.NotEmpty(t, rels)
		deployed := 0
		for _, r := range rels {
			if r.Info.Status == "deployed" {
				deployed++
			}
		}
		require.Equal(t, 1, deployed, "cut after %s: one deployed release", cut)
	}
}

// TestHostUnreachable: a clear failed status while the host cannot be
// reached, and recovery once it can.
func TestHostUnreachable(t *testing.T) {
	t.Parallel()
	b := setupReconcile(t)
	ctx := context.Background()
	c := b.create(t, "offline")

	// Point the platform at a host that refuses connections.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	closed := ln.Addr().String()
	require.NoError(t, ln.Close())
	bad, err := clientcmd.Load(b.host.Kubeconfig(t))
	require.NoError(t, err)
	for _, cl := range bad.Clusters {
		cl.Server = "https://" + closed
	}
	badBytes, err := clientcmd.Write(*bad)
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(b.kubecfg, badBytes, 0o600))

	w := b.worker(t, time.Minute)
	for range 3 {
		_, err = b.work(t, ctx, w, c.ID)
		require.Error(t, err, "River retries it with backoff")
	}
	c = b.cluster(t, c.ID)
	require.Equal(t, "failed", c.Status)
	require.Contains(t, c.StatusMessage, "connection refused")
	require.Contains(t, b.reasons(t, c.ID), "HostUnreachable")
	failed, emails := b.notices(t, notify.ClusterFailed)
	require.Equal(t, []string{"Cluster offline failed"}, failed, "three attempts, one failure told")
	require.Equal(t, 1, emails, "failures go by email too")
	var plain string
	require.NoError(t, b.pool.QueryRow(ctx, "SELECT params->>'ReasonMessage' FROM notifications WHERE kind = 'cluster_failed'").Scan(&plain))
	require.Equal(t, clusters.FailureHostUnreachable, plain, "the notice says why in plain words")

	// The host is back: the next attempt goes on.
	require.NoError(t, os.WriteFile(b.kubecfg, b.host.Kubeconfig(t), 0o600))
	res, err := b.work(t, ctx, w, c.ID)
	require.NoError(t, err)
	require.Equal(t, river.EventKindJobSnoozed, res.EventKind)
	require.Equal(t, "provisioning", b.cluster(t, c.ID).Status)
}

// TestReadyTimeout: a control plane that never comes up fails the cluster
// with the reason; Retry starts over.
func TestReadyTimeout(t *testing.T) {
	t.Parallel()
	b := setupReconcile(t)
	ctx := context.Background()
	c := b.create(t, "slow")
	w := b.worker(t, time.Minute)
	res, err := b.work(t, ctx, w, c.ID)
	require.NoError(t, err)
	require.Equal(t, river.EventKindJobSnoozed, res.EventKind)
	// A minute later, without waiting one.
	_, err = b.pool.Exec(ctx, "UPDATE clusters SET reconcile_started_at = now() - interval '61 seconds' WHERE id = $1", c.ID)
	require.NoError(t, err)
	res, err = b.work(t, ctx, w, c.ID)
	require.NoError(t, err)
	require.Equal(t, river.EventKindJobCompleted, res.EventKind, "nothing left to do until the user retries")
	c = b.cluster(t, c.ID)
	require.Equal(t, "failed", c.Status)
	require.Contains(t, c.StatusMessage, "did not become ready within 1m0s")
	require.Contains(t, c.StatusMessage, "control plane 0/1 ready")

	_, err = b.svc.Retry(ctx, actingAs(t, b.svc.Pool, b.owner.ID), c.ID, audit.Actor{UserID: b.owner.ID})
	require.NoError(t, err)
	require.Equal(t, "pending", b.cluster(t, c.ID).Status)
	_, err = b.svc.Retry(ctx, actingAs(t, b.svc.Pool, b.owner.ID), c.ID, audit.Actor{UserID: b.owner.ID})
	require.ErrorIs(t, err, clusters.ErrNotFailed)
	res, err = b.work(t, ctx, w, c.ID)
	require.NoError(t, err)
	require.Equal(t, river.EventKindJobSnoozed, res.EventKind)
	require.Equal(t, "provisioning", b.cluster(t, c.ID).Status)

	// The retried cluster fails again: that is news again.
	_, err = b.pool.Exec(ctx, "UPDATE clusters SET reconcile_started_at = now() - interval '61 seconds' WHERE id = $1", c.ID)
	require.NoError(t, err)
	_, err = b.work(t, ctx, w, c.ID)
	require.NoError(t, err)
	failed, _ := b.notices(t, notify.ClusterFailed)
	require.Equal(t, []string{"Cluster slow failed", "Cluster slow failed"}, failed)
}

// TestCrashSafetyDelete interrupts deletion at several points; a fresh
// worker then removes the release and the namespace and marks the row.
func TestCrashSafetyDelete(t *testing.T) {
	t.Parallel()
	b := setupReconcile(t)
	b.roomyPlan(t)
	ctx := context.Background()
	virt := testenv.NewKube(t)
	for i, cut := range []time.Duration{2 * time.Millisecond, 30 * time.Millisecond, 150 * time.Millisecond} {
		name := "gone-" + string(rune('a'+i))
		c := b.create(t, name)
		w := b.worker(t, time.Minute)
		_, err := b.work(t, ctx, w, c.ID)
		require.NoError(t, err)
		b.playControlPlane(t, b.cluster(t, c.ID), virt)
		_, err = b.work(t, ctx, w, c.ID)
		require.NoError(t, err)
		require.Equal(t, "ready", b.cluster(t, c.ID).Status)

		_, err = b.svc.Delete(ctx, actingAs(t, b.svc.Pool, b.owner.ID), c.ID, name, audit.Actor{UserID: b.owner.ID})
		require.NoError(t, err)
		cutCtx, cancel := context.WithTimeout(ctx, cut)
		_, _ = b.work(t, cutCtx, w, c.ID)
		cancel()

		var done bool
		for attempt := 0; attempt < 10 && !done; attempt++ {
			res, err := b.work(t, ctx, w, c.ID)
			if err != nil {
				continue
			}
			switch res.EventKind {
			case river.EventKindJobSnoozed:
				if ns, err := b.client.CoreV1().Namespaces().Get(ctx, vcluster.Namespace(c), metav1.GetOptions{}); err == nil && ns.DeletionTimestamp != nil {
					b.finalizeNamespace(t, c)
				}
			case river.EventKindJobCompleted:
				done = true
			}
		}
		require.True(t, done, "cut after %s: never deleted", cut)
		require.Equal(t, "deleted", b.cluster(t, c.ID).Status, "cut after %s", cut)
		rels, err := helm.Releases(b.host.Config, vcluster.Namespace(c), name, b.logger)
		require.NoError(t, err)
		require.Empty(t, rels, "cut after %s: no release left", cut)
	}
}

// TestOneReconcileAtATime: while one job of a cluster works, another waits
// its turn (snoozes) instead of running Helm alongside it.
func TestOneReconcileAtATime(t *testing.T) {
	t.Parallel()
	b := setupReconcile(t)
	ctx := context.Background()
	c := b.create(t, "serial")
	working := queries.ClusterTakeReconcileLeaseParams{ClusterID: c.ID, JobID: -1, Seconds: 300}
	taken, err := queries.New(b.pool).ClusterTakeReconcileLease(ctx, working)
	require.NoError(t, err)
	require.EqualValues(t, 1, taken, "plays a job at work")

	res, err := b.work(t, ctx, b.worker(t, time.Minute), c.ID)
	require.NoError(t, err)
	require.Equal(t, river.EventKindJobSnoozed, res.EventKind)
	require.Equal(t, "pending", b.cluster(t, c.ID).Status, "the second job did nothing")

	require.NoError(t, queries.New(b.pool).ClusterReleaseReconcileLease(ctx, queries.ClusterReleaseReconcileLeaseParams{ClusterID: c.ID, JobID: -1}))
	res, err = b.work(t, ctx, b.worker(t, time.Minute), c.ID)
	require.NoError(t, err)
	require.Equal(t, river.EventKindJobSnoozed, res.EventKind)
	require.Equal(t, "provisioning", b.cluster(t, c.ID).Status, "its turn came")
}

// waitingReconciles are the cluster's reconcile jobs that River still
// holds to run: available, waiting for a retry, or scheduled.
func (b *reconcileBundle) waitingReconciles(t *testing.T, id int64) []*rivertype.JobRow {
	t.Helper()
	res, err := b.svc.River.JobList(context.Background(), river.NewJobListParams().
		Kinds(clusters.ReconcileArgs{}.Kind()).
		States(rivertype.JobStateAvailable, rivertype.JobStatePending, rivertype.JobStateRetryable, rivertype.JobStateScheduled).
		Where("(args->>'cluster_id')::bigint = @id", river.NamedArgs{"id": id}))
	require.NoError(t, err)
	return res.Jobs
}

// workJob runs one attempt of a job River holds and keeps its outcome,
// as River would.
func (b *reconcileBundle) workJob(t *testing.T, w *rivertest.Worker[clusters.ReconcileArgs, pgx.Tx], job *rivertype.JobRow) (*rivertest.WorkResult, error) {
	t.Helper()
	ctx := context.Background()
	tx, err := b.pool.Begin(ctx)
	require.NoError(t, err)
	defer tx.Rollback(ctx) //nolint:errcheck
	res, workErr := w.WorkJob(ctx, t, tx, job)
	require.NoError(t, tx.Commit(ctx))
	return res, workErr
}

// TestOneReadyNotice: one cluster, one ready notice. A Retry supersedes
// the retry River still holds for the failure; a job that reaches a
// cluster already ready (one running when the Retry came, or run again by
// River's rescuer) tells nobody again.
func TestOneReadyNotice(t *testing.T) {
	t.Parallel()
	b := setupReconcile(t)
	ctx := context.Background()
	virt := testenv.NewKube(t)
	w := b.worker(t, time.Minute)
	c := b.create(t, "once")

	// The first attempt fails (the host refuses connections); River keeps
	// the job for a retry with backoff.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	refusing := ln.Addr().String()
	require.NoError(t, ln.Close())
	bad, err := clientcmd.Load(b.host.Kubeconfig(t))
	require.NoError(t, err)
	for _, cl := range bad.Clusters {
		cl.Server = "https://" + refusing
	}
	require.NoError(t, clientcmd.WriteToFile(*bad, b.kubecfg))
	first := b.waitingReconciles(t, c.ID)
	require.Len(t, first, 1)
	res, err := b.workJob(t, w, first[0])
	require.Error(t, err)
	require.Equal(t, river.EventKindJobFailed, res.EventKind)
	require.Equal(t, first[0].ID, b.waitingReconciles(t, c.ID)[0].ID, "River retries it")
	require.Equal(t, "failed", b.cluster(t, c.ID).Status)

	// The host is back and the owner retries: one job is left to run.
	require.NoError(t, os.WriteFile(b.kubecfg, b.host.Kubeconfig(t), 0o600))
	_, err = b.svc.Retry(ctx, actingAs(t, b.svc.Pool, b.owner.ID), c.ID, audit.Actor{UserID: b.owner.ID})
	require.NoError(t, err)
	waiting := b.waitingReconciles(t, c.ID)
	require.Len(t, waiting, 1, "the retry supersedes River's")
	require.NotEqual(t, first[0].ID, waiting[0].ID)

	// Every job River holds for the cluster runs to its end.
	for range 10 {
		waiting = b.waitingReconciles(t, c.ID)
		if len(waiting) == 0 {
			break
		}
		res, err := b.workJob(t, w, waiting[0])
		require.NoError(t, err)
		if res.EventKind == river.EventKindJobSnoozed {
			b.playControlPlane(t, b.cluster(t, c.ID), virt)
		}
	}
	require.Empty(t, waiting)
	require.Equal(t, "ready", b.cluster(t, c.ID).Status)

	// Another job comes to the ready cluster.
	res, err = b.work(t, ctx, w, c.ID)
	require.NoError(t, err)
	require.Equal(t, river.EventKindJobCompleted, res.EventKind)
	c = b.cluster(t, c.ID)
	require.Equal(t, "ready", c.Status)

	ready, _ := b.notices(t, notify.ClusterReady)
	require.Equal(t, []string{"Cluster once is ready"}, ready)
	require.Equal(t, 1, countOf(b.reasons(t, c.ID), "Ready"))
}

func countOf(s []string, v string) int {
	n := 0
	for _, x := range s {
		if x == v {
			n++
		}
	}
	return n
}
