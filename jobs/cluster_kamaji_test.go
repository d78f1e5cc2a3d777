package jobs_test

import (
	"context"
	"strconv"
	"testing"
	"time"

	"github.com/riverqueue/river"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/kubebyon/kubebyon/internal/audit"
	"github.com/kubebyon/kubebyon/internal/clusters"
	"github.com/kubebyon/kubebyon/internal/kamaji"
	"github.com/kubebyon/kubebyon/internal/settings"
	"github.com/kubebyon/kubebyon/internal/testenv"
	"github.com/kubebyon/kubebyon/internal/vcluster"
	"github.com/kubebyon/kubebyon/queries"
)

// playKamaji writes what Kamaji's controller would once the control plane
// runs (testenv/kamaji.go says what the tests play): the status, and the
// admin kubeconfig Secret, here for virt.
func (b *reconcileBundle) playKamaji(t *testing.T, dyn dynamic.Interface, c queries.Cluster, virt *testenv.Kube) {
	t.Helper()
	ctx := context.Background()
	ns := vcluster.Namespace(c)
	_, err := b.client.CoreV1().Secrets(ns).Create(ctx, &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: kamaji.AdminKubeconfigSecret(c), Namespace: ns},
		Data:       map[string][]byte{kamaji.AdminKubeconfigKey: virt.Kubeconfig(t)},
	}, metav1.CreateOptions{})
	if !apierrors.IsAlreadyExists(err) {
		require.NoError(t, err)
	}
	tcp, err := kamaji.Get(ctx, dyn, ns, kamaji.Name(c))
	require.NoError(t, err)
	tcp.Status.Kubernetes.Version = kamaji.VersionStatus{Version: c.KubernetesVersion, Status: kamaji.VersionReady}
	tcp.Status.Kubernetes.Deployment = kamaji.DeploymentStatus{Replicas: 1, ReadyReplicas: 1}
	tcp.Status.KubeConfig.Admin.SecretName = kamaji.AdminKubeconfigSecret(c)
	u, err := kamaji.Unstructured(tcp)
	require.NoError(t, err)
	_, err = dyn.Resource(kamaji.TenantControlPlanes).Namespace(ns).UpdateStatus(ctx, u, metav1.UpdateOptions{})
	require.NoError(t, err)
}

// TestKamajiLifecycle: a cluster on the Kamaji backend is a
// TenantControlPlane on the host, written as Kamaji reads it (the API
// server's address, ports, public host name and networks), waited for
// until Kamaji says it is ready, then given what kubeadm join needs, and
// removed with the cluster.
func TestKamajiLifecycle(t *testing.T) {
	t.Parallel()
	b := setupReconcile(t)
	ctx := context.Background()
	testenv.KamajiCRD(t, b.host)
	dyn, err := dynamic.NewForConfig(b.host.Config)
	require.NoError(t, err)
	q := queries.New(b.pool)
	rt, err := settings.Load(ctx, q, b.box)
	require.NoError(t, err)
	rt.Backend = settings.BackendKamaji
	require.NoError(t, settings.Save(ctx, q, b.box, rt))

	w := b.worker(t, time.Minute)
	c, err := b.svc.Create(ctx, actingAs(t, b.svc.Pool, b.owner.ID), clusters.Input{Name: "kam"}, audit.Actor{UserID: b.owner.ID})
	require.NoError(t, err)
	require.Equal(t, settings.BackendKamaji, c.Backend, "the platform's default backend, the plan naming none")

	// NodePort mode advertises the control plane at a Ready host node's
	// address: with none, the cluster fails and says why.
	_, err = b.work(t, ctx, w, c.ID)
	require.ErrorContains(t, err, "no Ready host node")
	require.Equal(t, clusters.StatusFailed, b.cluster(t, c.ID).Status)
	require.NoError(t, q.HostNodeUpsert(ctx, queries.HostNodeUpsertParams{Name: "host-1", InternalIp: "192.0.2.7", Ready: true}))

	c, err = b.svc.Retry(ctx, actingAs(t, b.svc.Pool, b.owner.ID), c.ID, audit.Actor{UserID: b.owner.ID})
	require.NoError(t, err)
	res, err := b.work(t, ctx, w, c.ID)
	require.NoError(t, err)
	require.Equal(t, river.EventKindJobSnoozed, res.EventKind, "waiting for Kamaji")
	c = b.cluster(t, c.ID)
	require.Equal(t, clusters.StatusProvisioning, c.Status)
	require.Contains(t, b.reasons(t, c.ID), "Installing")
	require.Contains(t, c.StatusMessage+lastMessage(t, b, c.ID), "tenant control plane")

	tcp, err := kamaji.Get(ctx, dyn, vcluster.Namespace(c), kamaji.Name(c))
	require.NoError(t, err)
	host := c.Slug + ".clusters.test"
	require.Equal(t, "NodePort", tcp.Spec.ControlPlane.Service.ServiceType)
	require.Equal(t, c.NodePort.Int32, tcp.Spec.NetworkProfile.Port, "the API server listens on, and Kamaji exposes, the NodePort the platform allocated")
	require.Equal(t, c.KonnectivityNodePort.Int32, tcp.Spec.Addons.Konnectivity.Server.Port)
	require.Equal(t, "192.0.2.7", tcp.Spec.NetworkProfile.Address)
	require.Equal(t, []string{host}, tcp.Spec.NetworkProfile.CertSANs)
	require.Equal(t, host+":443", tcp.Spec.ControlPlane.Ingress.Hostname, "cluster-info and admin.conf name the public endpoint")
	require.Equal(t, "v1.34.0", tcp.Spec.Kubernetes.Version)
	require.Equal(t, c.PodCidr.String(), tcp.Spec.NetworkProfile.PodCIDR)
	require.Equal(t, strconv.FormatInt(c.ID, 10), tcp.Spec.ControlPlane.Service.AdditionalMetadata.Labels["kubebyon.io/cluster-id"],
		"the edge finds a LoadBalancer Service's address by the cluster's id")
	require.EqualValues(t, 1, *tcp.Spec.ControlPlane.Deployment.Replicas)
	require.Equal(t, "256Mi", tcp.Spec.ControlPlane.Deployment.Resources.APIServer.Requests.Memory().String(), "requests, so the host places it where it fits")

	virt := testenv.NewKube(t)
	b.playKamaji(t, dyn, c, virt)
	_, err = b.work(t, ctx, w, c.ID)
	require.NoError(t, err)
	c = b.cluster(t, c.ID)
	require.Equal(t, clusters.StatusReady, c.Status, c.StatusMessage)
	require.Equal(t, host, c.Endpoint)

	// What kubeadm join needs is in the control plane: cluster-info names
	// the public endpoint and the cluster's CA, anyone may read it, and
	// bootstrap tokens may file CSRs that are approved.
	vc := virt.Client(t)
	ci, err := vc.CoreV1().ConfigMaps("kube-public").Get(ctx, "cluster-info", metav1.GetOptions{})
	require.NoError(t, err)
	cfg, err := clientcmd.Load([]byte(ci.Data["kubeconfig"]))
	require.NoError(t, err)
	for _, cl := range cfg.Clusters {
		require.Equal(t, "https://"+host, cl.Server)
		require.Equal(t, virt.CA, cl.CertificateAuthorityData)
	}
	for name, role := range map[string]string{
		"kubeadm:kubelet-bootstrap":                     "system:node-bootstrapper",
		"kubeadm:node-autoapprove-bootstrap":            "system:certificates.k8s.io:certificatesigningrequests:nodeclient",
		"kubeadm:node-autoapprove-certificate-rotation": "system:certificates.k8s.io:certificatesigningrequests:selfnodeclient",
		"kubeadm:get-nodes":                             "kubeadm:get-nodes",
	} {
		crb, err := vc.RbacV1().ClusterRoleBindings().Get(ctx, name, metav1.GetOptions{})
		require.NoError(t, err, name)
		require.Equal(t, rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: role}, crb.RoleRef, name)
	}
	for _, cm := range []string{"kubeadm-config", "kubelet-config"} {
		_, err := vc.CoreV1().ConfigMaps("kube-system").Get(ctx, cm, metav1.GetOptions{})
		require.NoError(t, err, cm)
	}
	anonymous := testenv.AnonymousClient(t, virt)
	_, err = anonymous.CoreV1().ConfigMaps("kube-public").Get(ctx, "cluster-info", metav1.GetOptions{})
	require.NoError(t, err, "discovery reads cluster-info anonymously")

	// The kubeconfig users download is Kamaji's admin.conf, through the
	// public endpoint.
	_, kc, err := b.svc.Kubeconfig(ctx, actingAs(t, b.svc.Pool, b.owner.ID), c.ID, audit.Actor{UserID: b.owner.ID})
	require.NoError(t, err)
	dl, err := clientcmd.Load(kc)
	require.NoError(t, err)
	for _, cl := range dl.Clusters {
		require.Equal(t, "https://"+host, cl.Server)
	}

	// Suspended by an admin: Kamaji's replicas go to 0 (it calls that
	// sleeping), and back on resume.
	admin, err := q.UserCreateUnverified(ctx, queries.UserCreateUnverifiedParams{Email: "admin@example.com", Name: "Admin"})
	require.NoError(t, err)
	_, err = b.pool.Exec(ctx, "UPDATE users SET role = 'admin' WHERE id = $1", admin.ID)
	require.NoError(t, err)
	replicas := func() int32 {
		t.Helper()
		n, err := kamaji.Replicas(ctx, dyn, vcluster.Namespace(c), kamaji.Name(c))
		require.NoError(t, err)
		return n
	}
	_, err = b.svc.AdminSuspend(ctx, c.ID, c.Slug, audit.Actor{UserID: admin.ID})
	require.NoError(t, err)
	_, err = b.work(t, ctx, w, c.ID)
	require.NoError(t, err)
	require.Zero(t, replicas())
	_, err = b.svc.AdminResume(ctx, c.ID, audit.Actor{UserID: admin.ID})
	require.NoError(t, err)
	_, err = b.work(t, ctx, w, c.ID)
	require.NoError(t, err)
	require.EqualValues(t, 1, replicas())
	require.Equal(t, clusters.StatusReady, b.cluster(t, c.ID).Status)

	// Deleted with the cluster: the TenantControlPlane, then the namespace.
	_, err = b.svc.Delete(ctx, actingAs(t, b.svc.Pool, b.owner.ID), c.ID, "kam", audit.Actor{UserID: b.owner.ID})
	require.NoError(t, err)
	_, err = b.work(t, ctx, w, c.ID)
	require.NoError(t, err)
	_, err = kamaji.Get(ctx, dyn, vcluster.Namespace(c), kamaji.Name(c))
	require.True(t, apierrors.IsNotFound(err), "the TenantControlPlane is gone: %v", err)
	// While the namespace terminates, each run's wait counts on one event
	// instead of repeating (with "Deleting") in the timeline.
	for range 3 {
		_, err = b.work(t, ctx, w, c.ID)
		require.NoError(t, err)
	}
	reasons := b.reasons(t, c.ID)
	require.Equal(t, []string{"DeleteRequested", "Deleting", "Uninstalled", "WaitingForNamespace"}, reasons[len(reasons)-4:])
	last, err := q.ClusterEventLatest(ctx, c.ID)
	require.NoError(t, err)
	require.EqualValues(t, 4, last.Count, "one wait and three more")
	require.True(t, last.LastSeenAt.Valid)
	b.finalizeNamespace(t, c)
	_, err = b.work(t, ctx, w, c.ID)
	require.NoError(t, err)
	require.Equal(t, clusters.StatusDeleted, b.cluster(t, c.ID).Status)
}

// lastMessage is the newest event's message of a cluster.
func lastMessage(t *testing.T, b *reconcileBundle, id int64) string {
	t.Helper()
	e, err := queries.New(b.pool).ClusterEventLatest(context.Background(), id)
	require.NoError(t, err)
	return e.Message
}
