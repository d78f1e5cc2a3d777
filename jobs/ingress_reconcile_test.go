package jobs_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/riverqueue/river"
	"github.com/riverqueue/river/riverdriver/riverpgxv5"
	"github.com/riverqueue/river/rivertest"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/kubebyon/kubebyon/internal/audit"
	"github.com/kubebyon/kubebyon/internal/clusters"
	"github.com/kubebyon/kubebyon/internal/helm"
	"github.com/kubebyon/kubebyon/internal/ingress"
	"github.com/kubebyon/kubebyon/internal/ingress/ingresstest"
	"github.com/kubebyon/kubebyon/internal/notify"
	"github.com/kubebyon/kubebyon/internal/testenv"
	"github.com/kubebyon/kubebyon/jobs"
	"github.com/kubebyon/kubebyon/queries"
)

// ingressBundle is a ready cluster whose control plane is virt, with the
// managed ingress settings pointing at the real Traefik chart.
type ingressBundle struct {
	*reconcileBundle
	c       queries.Cluster
	virt    *testenv.Kube
	vclient kubernetes.Interface
	svc     *ingress.Service
}

func setupIngress(t *testing.T) *ingressBundle {
	t.Helper()
	b := setupReconcile(t)
	ctx := context.Background()
	st := ingress.DefaultSettings()
	st.ChartPath = testenv.TraefikChart(t)
	st.CertManagerChartPath = testenv.CertManagerChart(t)
	st.AppsBaseDomain = "apps.test"
	require.NoError(t, ingress.SaveSettings(ctx, queries.New(b.pool), st))
	virt := testenv.NewKube(t)
	c := b.create(t, "web")
	w := b.worker(t, time.Minute)
	_, err := b.work(t, ctx, w, c.ID)
	require.NoError(t, err)
	b.playControlPlane(t, c, virt)
	_, err = b.work(t, ctx, w, c.ID)
	require.NoError(t, err)
	c = b.cluster(t, c.ID)
	require.Equal(t, clusters.StatusReady, c.Status)
	return &ingressBundle{reconcileBundle: b, c: c, virt: virt, vclient: virt.Client(t), svc: &ingress.Service{Pool: b.pool, River: b.svc.River}}
}

func (b *ingressBundle) worker(t *testing.T, rollout time.Duration, virtual clusters.VirtualConfigFunc) *rivertest.Worker[ingress.ReconcileArgs, pgx.Tx] {
	if virtual == nil {
		virtual = b.reconcileBundle.svc.VirtualConfig
	}
	return rivertest.NewWorker(t, riverpgxv5.New(b.pool), &river.Config{}, &jobs.IngressReconcileWorker{
		Pool: b.pool, Logger: b.logger, VirtualConfig: virtual, Charts: &helm.Charts{}, Box: b.box,
		PollInterval: 10 * time.Millisecond, RolloutTimeout: rollout,
	})
}

func (b *ingressBundle) work(t *testing.T, w *rivertest.Worker[ingress.ReconcileArgs, pgx.Tx]) (*rivertest.WorkResult, error) {
	t.Helper()
	tx, err := b.pool.Begin(context.Background())
	require.NoError(t, err)
	defer tx.Rollback(context.Background()) //nolint:errcheck
	return w.Work(context.Background(), t, tx, ingress.ReconcileArgs{ClusterID: b.c.ID}, nil)
}

func (b *ingressBundle) state(t *testing.T) ingress.State {
	t.Helper()
	s, err := b.svc.Get(context.Background(), b.c)
	require.NoError(t, err)
	return s
}

func (b *ingressBundle) switchTo(t *testing.T, on bool) {
	t.Helper()
	_, err := b.svc.Switch(context.Background(), b.c, on, audit.Actor{UserID: b.owner.ID})
	require.NoError(t, err)
}

// daemonSet is the controller's DaemonSet in the virtual cluster.
func (b *ingressBundle) daemonSet(t *testing.T) string {
	t.Helper()
	list, err := b.vclient.AppsV1().DaemonSets(ingress.Namespace).List(context.Background(), metav1.ListOptions{})
	require.NoError(t, err)
	require.Len(t, list.Items, 1)
	return list.Items[0].Name
}

// playRollout does what the DaemonSet controller would: the controller
// runs on ready of nodes nodes; and cert-manager comes up.
func (b *ingressBundle) playRollout(t *testing.T, ready, nodes int32) {
	t.Helper()
	ingresstest.PlayRollout(t, b.vclient, ready, nodes)
}

// TestIngressLifecycle: switched on, the real Traefik chart is installed
// into the virtual cluster, and the ingress is ready once its DaemonSet
// runs on every node; switched off, nothing of it is left; on again after
// the namespace of the removal is gone.
func TestIngressLifecycle(t *testing.T) {
	t.Parallel()
	b := setupIngress(t)
	ctx := context.Background()
	w := b.worker(t, time.Hour, nil)
	require.Equal(t, ingress.StatusOff, b.state(t).Status)
	require.Equal(t, "web-"+strings.TrimPrefix(b.c.Slug, "web-")+".apps.test", b.state(t).CNAMETarget)

	b.switchTo(t, true)
	require.Equal(t, ingress.StatusInstalling, b.state(t).Status)
	res, err := b.work(t, w)
	require.NoError(t, err)
	require.Equal(t, river.EventKindJobSnoozed, res.EventKind, "waits for the rollout")
	s := b.state(t)
	require.Equal(t, ingress.StatusInstalling, s.Status)
	require.Equal(t, "0 of 0 nodes ready; cert-manager starting", s.Message)
	require.Equal(t, ingress.Traefik, s.Controller)
	require.Equal(t, "41.6.0", s.ChartVersion)
	ds, err := b.vclient.AppsV1().DaemonSets(ingress.Namespace).Get(ctx, b.daemonSet(t), metav1.GetOptions{})
	require.NoError(t, err)
	var hostPorts []int32
	for _, p := range ds.Spec.Template.Spec.Containers[0].Ports {
		hostPorts = append(hostPorts, p.HostPort)
	}
	require.Subset(t, hostPorts, []int32{80, 443})

	b.playRollout(t, 1, 2)
	res, err = b.work(t, w)
	require.NoError(t, err)
	require.Equal(t, river.EventKindJobSnoozed, res.EventKind)
	require.Equal(t, "1 of 2 nodes ready", b.state(t).Message)
	b.playRollout(t, 2, 2)
	res, err = b.work(t, w)
	require.NoError(t, err)
	require.Equal(t, river.EventKindJobCompleted, res.EventKind)
	s = b.state(t)
	require.Equal(t, ingress.StatusReady, s.Status)
	require.Equal(t, "2 of 2 nodes", s.Message)
	// The ClusterIssuer of the admin's ACME server, for the owner.
	issuer, err := dynamic.NewForConfigOrDie(b.virt.Config).Resource(schema.GroupVersionResource{Group: "cert-manager.io", Version: "v1", Resource: "clusterissuers"}).Get(ctx, ingress.IssuerName, metav1.GetOptions{})
	require.NoError(t, err)
	server, _, _ := unstructured.NestedString(issuer.Object, "spec", "acme", "server")
	email, _, _ := unstructured.NestedString(issuer.Object, "spec", "acme", "email")
	require.Equal(t, ingress.LetsEncryptProduction, server)
	require.Equal(t, b.owner.Email, email)
	solvers, _, _ := unstructured.NestedSlice(issuer.Object, "spec", "acme", "solvers")
	require.Len(t, solvers, 1)
	class, _, _ := unstructured.NestedString(solvers[0].(map[string]any), "http01", "ingress", "ingressClassName")
	require.Equal(t, "traefik", class)
	// Done: another job for it changes nothing.
	res, err = b.work(t, w)
	require.NoError(t, err)
	require.Equal(t, river.EventKindJobCompleted, res.EventKind)
	require.Equal(t, []string{"IngressEnabled", "IngressInstalling", "IngressReady"}, ingressReasons(b.reasons(t, b.c.ID)))
	told, _ := b.notices(t, notify.Ingress)
	require.Equal(t, []string{"Managed ingress of web is ready"}, told)

	b.switchTo(t, false)
	require.Equal(t, ingress.StatusRemoving, b.state(t).Status)
	res, err = b.work(t, w)
	require.NoError(t, err)
	require.Equal(t, river.EventKindJobCompleted, res.EventKind)
	require.Equal(t, ingress.StatusOff, b.state(t).Status)
	_, err = b.vclient.AppsV1().DaemonSets(ingress.Namespace).Get(ctx, ds.Name, metav1.GetOptions{})
	require.True(t, apierrors.IsNotFound(err), "the DaemonSet is gone: %v", err)
	_, err = b.vclient.NetworkingV1().IngressClasses().Get(ctx, ingress.Traefik, metav1.GetOptions{})
	require.True(t, apierrors.IsNotFound(err), "the IngressClass is gone: %v", err)
	rels, err := helm.Releases(b.virt.Config, ingress.Namespace, ingress.ReleaseName, b.logger)
	require.NoError(t, err)
	require.Empty(t, rels)
	rels, err = helm.Releases(b.virt.Config, ingress.CertManagerNamespace, ingress.CertManagerRelease, b.logger)
	require.NoError(t, err)
	require.Empty(t, rels, "cert-manager is gone too")
	require.Eventually(t, func() bool {
		_, err := b.vclient.Discovery().ServerResourcesForGroupVersion("cert-manager.io/v1")
		return apierrors.IsNotFound(err)
	}, 30*time.Second, 200*time.Millisecond, "with its CRDs")

	// On again while the namespace is still going: the job waits for it.
	b.switchTo(t, true)
	res, err = b.work(t, w)
	require.NoError(t, err)
	require.Equal(t, river.EventKindJobSnoozed, res.EventKind)
	require.Equal(t, "waiting for the last removal to finish", b.state(t).Message)
	for _, name := range []string{ingress.Namespace, ingress.CertManagerNamespace} {
		ns, err := b.vclient.CoreV1().Namespaces().Get(ctx, name, metav1.GetOptions{})
		require.NoError(t, err)
		ns.Spec.Finalizers = nil
		_, err = b.vclient.CoreV1().Namespaces().Finalize(ctx, ns, metav1.UpdateOptions{})
		require.NoError(t, err)
		require.Eventually(t, func() bool {
			_, err := b.vclient.CoreV1().Namespaces().Get(ctx, name, metav1.GetOptions{})
			return apierrors.IsNotFound(err)
		}, 30*time.Second, 100*time.Millisecond)
	}
	res, err = b.work(t, w)
	require.NoError(t, err)
	require.Equal(t, river.EventKindJobSnoozed, res.EventKind)
	b.daemonSet(t)
	require.Equal(t, []string{"IngressEnabled", "IngressInstalling", "IngressReady", "IngressDisabled", "IngressRemoved", "IngressEnabled", "IngressInstalling"}, ingressReasons(b.reasons(t, b.c.ID)))
}

// TestIngressRolloutFails: a controller that does not run on every node
// within the rollout timeout is an error, with what stops its pods; Retry
// starts again, and a rollout that then finishes makes it ready.
func TestIngressRolloutFails(t *testing.T) {
	t.Parallel()
	b := setupIngress(t)
	ctx := context.Background()
	b.switchTo(t, true)
	res, err := b.work(t, b.worker(t, time.Hour, nil))
	require.NoError(t, err)
	require.Equal(t, river.EventKindJobSnoozed, res.EventKind)
	b.playRollout(t, 0, 1)
	// A pod of it crash-looping, as the kubelet reports it.
	ds, err := b.vclient.AppsV1().DaemonSets(ingress.Namespace).Get(ctx, b.daemonSet(t), metav1.GetOptions{})
	require.NoError(t, err)
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "kubebyon-ingress-x1", Namespace: ingress.Namespace, Labels: ds.Spec.Template.Labels},
		Spec:       ds.Spec.Template.Spec,
	}
	pod, err = b.vclient.CoreV1().Pods(ingress.Namespace).Create(ctx, pod, metav1.CreateOptions{})
	require.NoError(t, err)
	pod.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: pod.Spec.Containers[0].Name, State: corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "CrashLoopBackOff", Message: "back-off 5m0s restarting failed container"}}}}
	_, err = b.vclient.CoreV1().Pods(ingress.Namespace).UpdateStatus(ctx, pod, metav1.UpdateOptions{})
	require.NoError(t, err)

	_, mailed := b.notices(t, notify.Ingress)
	res, err = b.work(t, b.worker(t, time.Nanosecond, nil))
	require.NoError(t, err)
	require.Equal(t, river.EventKindJobCompleted, res.EventKind, "failed: no retry until the user asks")
	s := b.state(t)
	require.Equal(t, ingress.StatusError, s.Status)
	require.Contains(t, s.Message, "0 of 1 nodes ready")
	require.Contains(t, s.Message, "kubebyon-ingress-x1: CrashLoopBackOff: back-off 5m0s restarting failed container")
	require.Equal(t, "IngressFailed", lastOf(b.reasons(t, b.c.ID)))
	told, emails := b.notices(t, notify.Ingress)
	require.Equal(t, []string{"Managed ingress of web failed"}, told)
	require.Equal(t, mailed+1, emails, "a failure is emailed by default, as a cluster's is")

	_, err = b.svc.Retry(ctx, b.c, audit.Actor{UserID: b.owner.ID})
	require.NoError(t, err)
	_, err = b.svc.Retry(ctx, b.c, audit.Actor{UserID: b.owner.ID})
	require.ErrorIs(t, err, ingress.ErrNotFailed, "only a failure is retried")
	b.playRollout(t, 1, 1)
	res, err = b.work(t, b.worker(t, time.Hour, nil))
	require.NoError(t, err)
	require.Equal(t, river.EventKindJobCompleted, res.EventKind)
	require.Equal(t, ingress.StatusReady, b.state(t).Status)
	told, _ = b.notices(t, notify.Ingress)
	require.Equal(t, []string{"Managed ingress of web failed", "Managed ingress of web is ready"}, told)
}

// TestIngressUnreachable: a control plane that does not answer is an error
// the page shows, and the job fails so that River retries it.
func TestIngressUnreachable(t *testing.T) {
	t.Parallel()
	b := setupIngress(t)
	b.switchTo(t, true)
	down := func(context.Context, queries.Cluster) (*rest.Config, error) {
		return nil, errors.New("dial tcp 10.0.0.1:443: connect: connection refused")
	}
	_, err := b.work(t, b.worker(t, time.Hour, down))
	require.ErrorContains(t, err, "connection refused")
	s := b.state(t)
	require.Equal(t, ingress.StatusError, s.Status)
	require.Contains(t, s.Message, "reach the control plane: dial tcp 10.0.0.1:443: connect: connection refused")
	// River's retry, with the control plane back, finishes the install.
	res, err := b.work(t, b.worker(t, time.Hour, nil))
	require.NoError(t, err)
	require.Equal(t, river.EventKindJobSnoozed, res.EventKind)
	require.Equal(t, ingress.StatusInstalling, b.state(t).Status)
}

// TestIngressWaitsForCluster: switched on before its cluster is ready, the
// job leaves it; the cluster becoming ready queues it again.
func TestIngressWaitsForCluster(t *testing.T) {
	t.Parallel()
	b := setupReconcile(t)
	ctx := context.Background()
	st := ingress.DefaultSettings()
	st.AppsBaseDomain = "apps.test"
	require.NoError(t, ingress.SaveSettings(ctx, queries.New(b.pool), st))
	c := b.create(t, "early")
	svc := &ingress.Service{Pool: b.pool, River: b.svc.River}
	_, err := svc.Switch(ctx, c, true, audit.Actor{UserID: b.owner.ID})
	require.NoError(t, err)
	ib := &ingressBundle{reconcileBundle: b, c: c, svc: svc}
	res, err := ib.work(t, ib.worker(t, time.Hour, nil))
	require.NoError(t, err)
	require.Equal(t, river.EventKindJobCompleted, res.EventKind)
	require.Equal(t, ingress.StatusInstalling, ib.state(t).Status)

	count := func() (n int) {
		require.NoError(t, b.pool.QueryRow(ctx, `SELECT count(*) FROM river_job WHERE kind = 'ingress_reconcile' AND (args->>'cluster_id')::bigint = $1`, c.ID).Scan(&n))
		return n
	}
	require.Equal(t, 1, count(), "the switch's")
	w := b.worker(t, time.Minute)
	_, err = b.work(t, ctx, w, c.ID)
	require.NoError(t, err)
	b.playControlPlane(t, c, testenv.NewKube(t))
	_, err = b.work(t, ctx, w, c.ID)
	require.NoError(t, err)
	require.Equal(t, clusters.StatusReady, b.cluster(t, c.ID).Status)
	require.Equal(t, 2, count(), "and the one the cluster's readiness queued")
}

func ingressReasons(reasons []string) []string {
	var out []string
	for _, r := range reasons {
		if strings.HasPrefix(r, "Ingress") {
			out = append(out, r)
		}
	}
	return out
}

func lastOf(s []string) string { return s[len(s)-1] }
