package jobs_test

import (
	"bytes"
	"context"
	"log/slog"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"slices"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/kubebyon/kubebyon/internal/clusters"
	"github.com/kubebyon/kubebyon/internal/helm"
	"github.com/kubebyon/kubebyon/internal/locale"
	"github.com/kubebyon/kubebyon/internal/secrets"
	"github.com/kubebyon/kubebyon/internal/testenv"
	"github.com/kubebyon/kubebyon/internal/vcluster"
	"github.com/kubebyon/kubebyon/jobs"
)

// The test binary runs as a worker process when workerEnv is set: the
// River client the platform's worker runs (jobs.NewClient), working the
// clusters queue, with the step timeout and rescue time from the
// environment.
const (
	workerEnv            = "KUBEBYON_TEST_WORKER"
	workerDatabaseEnv    = "KUBEBYON_TEST_WORKER_DATABASE_URL"
	workerKubeconfigEnv  = "KUBEBYON_TEST_WORKER_KUBECONFIG"
	workerStepTimeoutEnv = "KUBEBYON_TEST_WORKER_STEP_TIMEOUT"
	workerRescueEnv      = "KUBEBYON_TEST_WORKER_RESCUE_AFTER"
)

// testBox is the platform key of the tests and their worker processes.
func testBox() (*secrets.Box, error) { return secrets.New(bytes.Repeat([]byte{9}, 32)) }

// runWorker is the worker process: it works until it is stopped.
func runWorker() int {
	logger := slog.New(slog.NewTextHandler(os.Stderr, nil))
	fail := func(err error) int {
		logger.Error("test worker", "err", err)
		return 1
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer stop()
	pool, err := pgxpool.New(ctx, os.Getenv(workerDatabaseEnv))
	if err != nil {
		return fail(err)
	}
	defer pool.Close()
	box, err := testBox()
	if err != nil {
		return fail(err)
	}
	catalog, err := locale.New()
	if err != nil {
		return fail(err)
	}
	opts := jobs.DefaultOptions(true)
	opts.WorkQueues = []string{clusters.Queue}
	opts.ChecksInterval = 0
	if opts.ClusterStepTimeout, err = time.ParseDuration(os.Getenv(workerStepTimeoutEnv)); err != nil {
		return fail(err)
	}
	if opts.RescueStuckJobsAfter, err = time.ParseDuration(os.Getenv(workerRescueEnv)); err != nil {
		return fail(err)
	}
	opts.JobTimeout = min(opts.JobTimeout, opts.RescueStuckJobsAfter)
	rc, err := jobs.NewClient(workerDeps(pool, box, catalog, logger, os.Getenv(workerKubeconfigEnv)), opts)
	if err != nil {
		return fail(err)
	}
	if err := rc.Start(ctx); err != nil {
		return fail(err)
	}
	<-ctx.Done()
	stopCtx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	_ = rc.Stop(stopCtx)
	return 0
}

// startWorker starts a worker process of the test binary on the test's
// database, reaching the host through kubeconfig.
func (b *reconcileBundle) startWorker(t *testing.T, kubeconfig string, stepTimeout, rescueAfter time.Duration) *exec.Cmd {
	t.Helper()
	self, err := os.Executable()
	require.NoError(t, err)
	cmd := exec.Command(self, "-test.run=^$")
	cmd.Env = append(os.Environ(),
		workerEnv+"=1",
		workerDatabaseEnv+"="+b.pool.Config().ConnString(),
		workerKubeconfigEnv+"="+kubeconfig,
		workerStepTimeoutEnv+"="+stepTimeout.String(),
		workerRescueEnv+"="+rescueAfter.String(),
	)
	logs := &testenv.Output{}
	cmd.Stdout, cmd.Stderr = logs, logs
	require.NoError(t, cmd.Start())
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		if t.Failed() {
			t.Logf("worker %d:\n%s", cmd.Process.Pid, logs.String())
		}
	})
	return cmd
}

// TestKilledWorkerRescued kills -9 a worker process in the middle of a
// cluster's first reconcile (it holds the cluster's lease and waits on the
// host) and starts another: River's rescuer hands the job to it after the
// rescue time, not River's default hour, and it takes the dead worker's
// lease back and installs the release.
func TestKilledWorkerRescued(t *testing.T) {
	t.Parallel()
	b := setupReconcile(t)
	ctx := context.Background()
	c := b.create(t, "rescued")

	hanging, err := clientcmd.Load(b.host.Kubeconfig(t))
	require.NoError(t, err)
	for _, cl := range hanging.Clusters {
		cl.Server = "https://" + testenv.HangingListener(t)
	}
	hangingPath := filepath.Join(t.TempDir(), "hanging.kubeconfig")
	require.NoError(t, clientcmd.WriteToFile(*hanging, hangingPath))

	// The first worker's steps may take a minute: it is killed long before.
	first := b.startWorker(t, hangingPath, time.Minute, 2*time.Minute)
	var jobID int64
	require.Eventually(t, func() bool {
		err := b.pool.QueryRow(ctx, `SELECT j.id FROM river_job j JOIN clusters c ON c.reconcile_lease_job = j.id
			WHERE c.id = $1 AND c.status = 'provisioning' AND j.state = 'running' AND j.attempt = 1`, c.ID).Scan(&jobID)
		return err == nil
	}, time.Minute, 50*time.Millisecond, "the first worker is at work on the cluster, waiting on the host")
	require.NoError(t, first.Process.Signal(syscall.SIGKILL))
	_ = first.Wait()
	require.Equal(t, "provisioning", b.cluster(t, c.ID).Status)

	// The restarted worker rescues jobs running for longer than their
	// 30-second steps.
	killed := time.Now()
	b.startWorker(t, b.kubecfg, 30*time.Second, 30*time.Second)
	require.Eventually(t, func() bool {
		return slices.Contains(b.reasons(t, c.ID), "Installing")
	}, 3*time.Minute, 200*time.Millisecond, "the restarted worker installs the cluster")
	t.Logf("picked up %s after the restart", time.Since(killed).Round(time.Second))

	var rescued bool
	var workers int
	require.NoError(t, b.pool.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM unnest(errors) e WHERE e->>'error' = 'Stuck job rescued by JobRescuer'),
		cardinality(attempted_by) FROM river_job WHERE id = $1`, jobID).Scan(&rescued, &workers))
	require.True(t, rescued, "River's rescuer took the job back")
	require.GreaterOrEqual(t, workers, 2, "the same job, run again by the restarted worker")
	rels, err := helm.Releases(b.host.Config, vcluster.Namespace(c), vcluster.ReleaseName(c), b.logger)
	require.NoError(t, err)
	require.NotEmpty(t, rels)
}
