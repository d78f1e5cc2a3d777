package vcluster

import (
	"context"
	"fmt"
	"strconv"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/kubebyon/kubebyon/internal/settings"
	"github.com/kubebyon/kubebyon/queries"
)

// Labels on what the platform makes on the host.
const (
	LabelManagedBy = "app.kubernetes.io/managed-by"
	LabelClusterID = "kubebyon.io/cluster-id"
	managedBy      = "kubebyon"
)

// EnsureNamespace creates the cluster's namespace with the platform's
// labels, or adds them to one that exists.
func EnsureNamespace(ctx context.Context, client kubernetes.Interface, c queries.Cluster) error {
	name := Namespace(c)
	labels := map[string]string{LabelManagedBy: managedBy, LabelClusterID: strconv.FormatInt(c.ID, 10)}
	ns, err := client.CoreV1().Namespaces().Get(ctx, name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		_, err = client.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels}}, metav1.CreateOptions{})
		if apierrors.IsAlreadyExists(err) {
			return nil
		}
		if err != nil {
			return fmt.Errorf("create namespace %s: %w", name, err)
		}
		return nil
	}
	if err != nil {
		return fmt.Errorf("get namespace %s: %w", name, err)
	}
	if ns.DeletionTimestamp != nil {
		return fmt.Errorf("namespace %s is still being deleted", name)
	}
	missing := false
	for k, v := range labels {
		if ns.Labels[k] != v {
			missing = true
		}
	}
	if !missing {
		return nil
	}
	if ns.Labels == nil {
		ns.Labels = map[string]string{}
	}
	for k, v := range labels {
		ns.Labels[k] = v
	}
	if _, err := client.CoreV1().Namespaces().Update(ctx, ns, metav1.UpdateOptions{}); err != nil {
		return fmt.Errorf("label namespace %s: %w", name, err)
	}
	return nil
}

// EnsurePlatformSecret writes the vCluster Platform access key Secret that
// licenses private nodes, when the settings have one.
func EnsurePlatformSecret(ctx context.Context, client kubernetes.Interface, c queries.Cluster, rt settings.Runtime) error {
	if rt.PlatformAccessKey == "" {
		return nil
	}
	ns := Namespace(c)
	data := map[string][]byte{
		"accessKey": []byte(rt.PlatformAccessKey),
		"host":      []byte(rt.PlatformHost),
		"project":   []byte(rt.PlatformProject),
		"insecure":  []byte(strconv.FormatBool(rt.PlatformInsecure)),
	}
	secret := &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: PlatformSecretName, Namespace: ns, Labels: map[string]string{LabelManagedBy: managedBy}},
		Type:       corev1.SecretTypeOpaque,
		Data:       data,
	}
	cur, err := client.CoreV1().Secrets(ns).Get(ctx, PlatformSecretName, metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
		if _, err := client.CoreV1().Secrets(ns).Create(ctx, secret, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("create platform secret: %w", err)
		}
		return nil
	case err != nil:
		return fmt.Errorf("get platform secret: %w", err)
	}
	cur.Data = data
	if _, err := client.CoreV1().Secrets(ns).Update(ctx, cur, metav1.UpdateOptions{}); err != nil {
		return fmt.Errorf("update platform secret: %w", err)
	}
	return nil
}

// Readiness is what the host says about a cluster's control plane.
type Readiness struct {
	ReadyReplicas int32
	Replicas      int32
	// KubeconfigSecret says whether vcluster has written vc-<release>.
	KubeconfigSecret bool
}

// Ready reports whether the control plane serves: its StatefulSet has a
// ready replica and its kubeconfig Secret exists.
func (r Readiness) Ready() bool { return r.ReadyReplicas > 0 && r.KubeconfigSecret }

// String describes the state for events and status messages.
func (r Readiness) String() string {
	return fmt.Sprintf("control plane %d/%d ready, kubeconfig secret %s", r.ReadyReplicas, r.Replicas, map[bool]string{true: "present", false: "missing"}[r.KubeconfigSecret])
}

// CheckReady reads the StatefulSet and the kubeconfig Secret.
func CheckReady(ctx context.Context, client kubernetes.Interface, c queries.Cluster) (Readiness, error) {
	ns := Namespace(c)
	var r Readiness
	sts, err := client.AppsV1().StatefulSets(ns).Get(ctx, ReleaseName(c), metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
	case err != nil:
		return r, fmt.Errorf("get statefulset: %w", err)
	default:
		r.ReadyReplicas = sts.Status.ReadyReplicas
		if sts.Spec.Replicas != nil {
			r.Replicas = *sts.Spec.Replicas
		}
	}
	_, err = client.CoreV1().Secrets(ns).Get(ctx, KubeconfigSecretName(c), metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
	case err != nil:
		return r, fmt.Errorf("get kubeconfig secret: %w", err)
	default:
		r.KubeconfigSecret = true
	}
	return r, nil
}

// DeleteNamespace asks for the namespace to go and reports whether it is
// gone already.
func DeleteNamespace(ctx context.Context, client kubernetes.Interface, c queries.Cluster) (bool, error) {
	name := Namespace(c)
	err := client.CoreV1().Namespaces().Delete(ctx, name, metav1.DeleteOptions{})
	if apierrors.IsNotFound(err) {
		return true, nil
	}
	if err != nil {
		return false, fmt.Errorf("delete namespace %s: %w", name, err)
	}
	_, err = client.CoreV1().Namespaces().Get(ctx, name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return true, nil
	}
	if err != nil {
		return false, fmt.Errorf("get namespace %s: %w", name, err)
	}
	return false, nil
}

// LoadBalancerAddress is the address the host reports for a Service of
// type LoadBalancer: its first ingress's IP, else its host name; empty
// while it has none.
func LoadBalancerAddress(svc *corev1.Service) string {
	for _, in := range svc.Status.LoadBalancer.Ingress {
		if in.IP != "" {
			return in.IP
		}
		if in.Hostname != "" {
			return in.Hostname
		}
	}
	return ""
}

// ControlPlaneService reads the cluster's control plane Service.
func ControlPlaneService(ctx context.Context, client kubernetes.Interface, c queries.Cluster) (*corev1.Service, error) {
	svc, err := client.CoreV1().Services(Namespace(c)).Get(ctx, ReleaseName(c), metav1.GetOptions{})
	if err != nil {
		return nil, fmt.Errorf("get service %s/%s: %w", Namespace(c), ReleaseName(c), err)
	}
	return svc, nil
}

// LoadBalancerAddresses lists the addresses the host reports for the
// platform's LoadBalancer Services (by the cluster id label), a page at a
// time: cluster id to address, for those that have one.
func LoadBalancerAddresses(ctx context.Context, client kubernetes.Interface) (map[int64]string, error) {
	out := map[int64]string{}
	opts := metav1.ListOptions{LabelSelector: LabelClusterID, Limit: 500}
	for {
		list, err := client.CoreV1().Services("").List(ctx, opts)
		if err != nil {
			return nil, fmt.Errorf("list the control plane services: %w", err)
		}
		for i := range list.Items {
			svc := &list.Items[i]
			id, err := strconv.ParseInt(svc.Labels[LabelClusterID], 10, 64)
			if err != nil || svc.Spec.Type != corev1.ServiceTypeLoadBalancer {
				continue
			}
			if a := LoadBalancerAddress(svc); a != "" {
				out[id] = a
			}
		}
		if list.Continue == "" {
			return out, nil
		}
		opts.Continue = list.Continue
	}
}
