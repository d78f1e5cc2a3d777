// Package kamaji runs a cluster's control plane as a Kamaji
// TenantControlPlane on the host: the open backend (Apache-2.0), whose
// control planes are pods of the upstream kube-apiserver,
// kube-controller-manager and scheduler, and whose nodes join with plain
// kubeadm. The platform writes the TenantControlPlane, reads the status
// and the admin kubeconfig Secret that Kamaji writes, and deletes it with
// the cluster.
//
// The module github.com/clastix/kamaji is not a dependency: the types
// here are the fields of kamaji.clastix.io/v1alpha1 the platform uses,
// with Kamaji's JSON names, applied with the dynamic client.
package kamaji

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"strconv"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"

	"github.com/kubebyon/kubebyon/internal/settings"
	"github.com/kubebyon/kubebyon/queries"
)

// Group, version and resource of Kamaji's TenantControlPlane.
var (
	TenantControlPlanes = schema.GroupVersionResource{Group: "kamaji.clastix.io", Version: "v1alpha1", Resource: "tenantcontrolplanes"}
	// CRDName is the CustomResourceDefinition the Kamaji operator installs;
	// the settings page checks for it.
	CRDName = "tenantcontrolplanes.kamaji.clastix.io"
)

// The Kubernetes version status Kamaji reports when the control plane
// serves, and when it sleeps (scaled to 0).
const (
	VersionReady    = "Ready"
	VersionSleeping = "Sleeping"
)

// IngressClass names the Ingress Kamaji writes for the public host name.
// No controller serves that class: the platform's HAProxy edge passes
// the cluster's TLS through by name, as the SNI-passthrough ingress
// Kamaji's docs describe would. The host name is what matters: Kamaji
// puts it in the kubeadm configuration, cluster-info and admin.conf,
// so that nodes and kubeconfigs go through the edge.
const IngressClass = "kubebyon-edge"

// fieldManager owns the fields the platform applies.
const fieldManager = "kubebyon"

// AdminKubeconfigKey is the key of the admin kubeconfig in the Secret
// Kamaji names in status.kubeconfig.admin.secretName.
const AdminKubeconfigKey = "admin.conf"

// TenantControlPlane is the part of kamaji.clastix.io/v1alpha1
// TenantControlPlane the platform writes and reads.
type TenantControlPlane struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`
	Spec              Spec   `json:"spec"`
	Status            Status `json:"status,omitempty"`
}

// Spec is the TenantControlPlane's desired state.
type Spec struct {
	DataStore      string         `json:"dataStore,omitempty"`
	ControlPlane   ControlPlane   `json:"controlPlane"`
	Kubernetes     Kubernetes     `json:"kubernetes"`
	NetworkProfile NetworkProfile `json:"networkProfile"`
	Addons         Addons         `json:"addons"`
}

// ControlPlane is how the control plane runs on the host.
type ControlPlane struct {
	Deployment Deployment `json:"deployment"`
	Service    Service    `json:"service"`
	Ingress    *Ingress   `json:"ingress,omitempty"`
}

// Deployment sizes the control plane's pods.
type Deployment struct {
	Replicas  *int32     `json:"replicas,omitempty"`
	Resources *Resources `json:"resources,omitempty"`
}

// Resources are what each component of the control plane asks for.
type Resources struct {
	APIServer         *corev1.ResourceRequirements `json:"apiServer,omitempty"`
	ControllerManager *corev1.ResourceRequirements `json:"controllerManager,omitempty"`
	Scheduler         *corev1.ResourceRequirements `json:"scheduler,omitempty"`
}

// DefaultResources are the requests of a tenant control plane's
// components: what an idle one uses (kube-apiserver about 250 MB,
// kube-controller-manager about 100 MB, kube-scheduler about 60 MB), so
// that the host schedules them where they fit; no limits, so that a busy
// one is not killed.
func DefaultResources() *Resources {
	req := func(cpu, mem string) *corev1.ResourceRequirements {
		return &corev1.ResourceRequirements{Requests: corev1.ResourceList{
			corev1.ResourceCPU: resource.MustParse(cpu), corev1.ResourceMemory: resource.MustParse(mem),
		}}
	}
	return &Resources{APIServer: req("100m", "256Mi"), ControllerManager: req("50m", "128Mi"), Scheduler: req("25m", "64Mi")}
}

// Service is the control plane's Service on the host.
type Service struct {
	AdditionalMetadata Metadata `json:"additionalMetadata"`
	ServiceType        string   `json:"serviceType"`
}

// Metadata is extra labels and annotations.
type Metadata struct {
	Labels map[string]string `json:"labels,omitempty"`
}

// Ingress names the public host name (host:port) of the control plane.
type Ingress struct {
	IngressClassName string `json:"ingressClassName,omitempty"`
	Hostname         string `json:"hostname,omitempty"`
}

// Kubernetes is the version the control plane runs.
type Kubernetes struct {
	Version string  `json:"version"`
	Kubelet Kubelet `json:"kubelet"`
}

// Kubelet is how the control plane reaches kubelets.
type Kubelet struct {
	PreferredAddressTypes []string `json:"preferredAddressTypes,omitempty"`
}

// NetworkProfile is where the API server listens and is advertised, and
// the cluster's networks.
type NetworkProfile struct {
	Address     string   `json:"address,omitempty"`
	Port        int32    `json:"port"`
	CertSANs    []string `json:"certSANs,omitempty"`
	ServiceCIDR string   `json:"serviceCidr,omitempty"`
	PodCIDR     string   `json:"podCidr,omitempty"`
}

// Addons are the add-ons Kamaji installs in the tenant cluster.
type Addons struct {
	CoreDNS      *struct{}     `json:"coreDNS,omitempty"`
	KubeProxy    *struct{}     `json:"kubeProxy,omitempty"`
	Konnectivity *Konnectivity `json:"konnectivity,omitempty"`
}

// Konnectivity is the konnectivity server (and its agents on the nodes).
type Konnectivity struct {
	Server KonnectivityServer `json:"server"`
}

// KonnectivityServer is where the konnectivity server listens.
type KonnectivityServer struct {
	Port int32 `json:"port"`
}

// Status is what Kamaji reports.
type Status struct {
	Kubernetes           KubernetesStatus  `json:"kubernetesResources,omitempty"`
	KubeConfig           KubeconfigsStatus `json:"kubeconfig,omitempty"`
	ControlPlaneEndpoint string            `json:"controlPlaneEndpoint,omitempty"`
}

// KubernetesStatus is the version and the control plane's Deployment.
type KubernetesStatus struct {
	Version    VersionStatus    `json:"version,omitempty"`
	Deployment DeploymentStatus `json:"deployment,omitempty"`
}

// VersionStatus is the version running and Kamaji's word on it (Ready,
// Provisioning, Upgrading, Sleeping, NotReady...).
type VersionStatus struct {
	Version string `json:"version,omitempty"`
	Status  string `json:"status,omitempty"`
}

// DeploymentStatus counts the control plane's pods.
type DeploymentStatus struct {
	Replicas      int32 `json:"replicas,omitempty"`
	ReadyReplicas int32 `json:"readyReplicas,omitempty"`
}

// KubeconfigsStatus names the kubeconfig Secrets Kamaji wrote.
type KubeconfigsStatus struct {
	Admin KubeconfigStatus `json:"admin,omitempty"`
}

// KubeconfigStatus names one kubeconfig Secret.
type KubeconfigStatus struct {
	SecretName string `json:"secretName,omitempty"`
}

// Name is the cluster's TenantControlPlane, in the cluster's namespace.
func Name(c queries.Cluster) string { return c.Name }

// AdminKubeconfigSecret is the Secret Kamaji writes the admin kubeconfig
// to, <name>-admin-kubeconfig (status.kubeconfig.admin.secretName says
// so once it is written).
func AdminKubeconfigSecret(c queries.Cluster) string { return Name(c) + "-admin-kubeconfig" }

// Desired is the TenantControlPlane for a cluster. Its API server's
// certificate carries the cluster's public host name, and Kamaji's
// kubeadm configuration (cluster-info, admin.conf) names the public
// endpoint: nodes and kubeconfigs go through the edge as with vcluster.
//
// NodePort mode: Kamaji makes the Service's NodePorts its ports (API
// server and konnectivity), so they are the ports the platform allocated;
// the address advertised inside the tenant cluster (its kubernetes
// Service) is hostAddress, a host node's address the edge also sends to.
// LoadBalancer mode: the ports the edge expects (443 and 8132), and the
// address the host gives the Service.
func Desired(c queries.Cluster, rt settings.Runtime, namespace, hostAddress string, replicas int32) (*TenantControlPlane, error) {
	host := rt.Endpoint(c.Slug)
	tcp := &TenantControlPlane{
		TypeMeta:   metav1.TypeMeta{APIVersion: TenantControlPlanes.GroupVersion().String(), Kind: "TenantControlPlane"},
		ObjectMeta: metav1.ObjectMeta{Name: Name(c), Namespace: namespace},
	}
	s := &tcp.Spec
	s.DataStore = rt.KamajiDataStore
	s.ControlPlane.Deployment.Replicas = &replicas
	s.ControlPlane.Deployment.Resources = DefaultResources()
	s.ControlPlane.Service.AdditionalMetadata.Labels = map[string]string{
		"kubebyon.io/cluster-id": strconv.FormatInt(c.ID, 10),
	}
	s.ControlPlane.Ingress = &Ingress{IngressClassName: IngressClass, Hostname: net.JoinHostPort(host, strconv.Itoa(rt.APIPort()))}
	s.Kubernetes.Version = c.KubernetesVersion
	s.Kubernetes.Kubelet.PreferredAddressTypes = []string{"InternalIP", "ExternalIP", "Hostname"}
	s.NetworkProfile.CertSANs = []string{host}
	s.NetworkProfile.ServiceCIDR = rt.ServiceCIDR
	s.NetworkProfile.PodCIDR = rt.PodCIDR
	if c.PodCidr.IsValid() {
		s.NetworkProfile.PodCIDR = c.PodCidr.String()
	}
	s.Addons.CoreDNS = &struct{}{}
	s.Addons.KubeProxy = &struct{}{}
	switch c.PublicAccessMode {
	case settings.AccessNodePort:
		if !c.NodePort.Valid || !c.KonnectivityNodePort.Valid {
			return nil, fmt.Errorf("cluster %d is in nodeport mode without its node ports", c.ID)
		}
		if hostAddress == "" {
			return nil, ErrNoHostAddress
		}
		s.ControlPlane.Service.ServiceType = "NodePort"
		s.NetworkProfile.Address = hostAddress
		s.NetworkProfile.Port = c.NodePort.Int32
		s.Addons.Konnectivity = &Konnectivity{Server: KonnectivityServer{Port: c.KonnectivityNodePort.Int32}}
	case settings.AccessLoadBalancer:
		s.ControlPlane.Service.ServiceType = "LoadBalancer"
		s.NetworkProfile.Port = 443
		s.Addons.Konnectivity = &Konnectivity{Server: KonnectivityServer{Port: 8132}}
	default:
		return nil, fmt.Errorf("cluster %d: unknown access mode %q", c.ID, c.PublicAccessMode)
	}
	return tcp, nil
}

// ErrNoHostAddress says a NodePort cluster has no host node address to
// advertise yet: no host node is Ready.
var ErrNoHostAddress = errors.New("no Ready host node has an address to advertise the control plane at")

// Apply writes the TenantControlPlane with server-side apply: the fields
// the platform sets are its own, Kamaji's defaults and status stay.
// It reports whether it created it.
func Apply(ctx context.Context, dyn dynamic.Interface, tcp *TenantControlPlane) (created bool, err error) {
	res := dyn.Resource(TenantControlPlanes).Namespace(tcp.Namespace)
	_, err = res.Get(ctx, tcp.Name, metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
		created = true
	case err != nil:
		return false, fmt.Errorf("get tenantcontrolplane %s/%s: %w", tcp.Namespace, tcp.Name, err)
	}
	apply := *tcp
	apply.Status = Status{}
	body, err := json.Marshal(apply)
	if err != nil {
		return false, fmt.Errorf("encode tenantcontrolplane: %w", err)
	}
	force := true
	if _, err := res.Patch(ctx, tcp.Name, types.ApplyPatchType, body, metav1.PatchOptions{FieldManager: fieldManager, Force: &force}); err != nil {
		return false, fmt.Errorf("apply tenantcontrolplane %s/%s: %w", tcp.Namespace, tcp.Name, err)
	}
	return created, nil
}

// Get reads a TenantControlPlane; a missing one is a NotFound error.
func Get(ctx context.Context, dyn dynamic.Interface, namespace, name string) (*TenantControlPlane, error) {
	u, err := dyn.Resource(TenantControlPlanes).Namespace(namespace).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return nil, err
	}
	var tcp TenantControlPlane
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, &tcp); err != nil {
		return nil, fmt.Errorf("decode tenantcontrolplane %s/%s: %w", namespace, name, err)
	}
	return &tcp, nil
}

// Readiness is what the host says about a Kamaji control plane.
type Readiness struct {
	// Found says whether the TenantControlPlane exists.
	Found bool
	// Status is Kamaji's word on the version (Ready, Provisioning...).
	Status        string
	ReadyReplicas int32
	Replicas      int32
	// KubeconfigSecret says whether the admin kubeconfig Secret exists.
	KubeconfigSecret bool
}

// Ready reports whether the control plane serves: Kamaji says Ready, a
// pod is ready, and the admin kubeconfig is written.
func (r Readiness) Ready() bool {
	return r.Status == VersionReady && r.ReadyReplicas > 0 && r.KubeconfigSecret
}

// String describes the state for events and status messages.
func (r Readiness) String() string {
	if !r.Found {
		return "tenant control plane not created yet"
	}
	st := r.Status
	if st == "" {
		st = "unknown"
	}
	return fmt.Sprintf("tenant control plane %s, %d/%d ready, kubeconfig secret %s", st, r.ReadyReplicas, r.Replicas,
		map[bool]string{true: "present", false: "missing"}[r.KubeconfigSecret])
}

// CheckReady reads the TenantControlPlane's status and its admin
// kubeconfig Secret.
func CheckReady(ctx context.Context, dyn dynamic.Interface, client kubernetes.Interface, namespace, name string) (Readiness, error) {
	var r Readiness
	tcp, err := Get(ctx, dyn, namespace, name)
	if apierrors.IsNotFound(err) {
		return r, nil
	}
	if err != nil {
		return r, fmt.Errorf("get tenantcontrolplane %s/%s: %w", namespace, name, err)
	}
	r.Found = true
	r.Status = tcp.Status.Kubernetes.Version.Status
	r.ReadyReplicas, r.Replicas = tcp.Status.Kubernetes.Deployment.ReadyReplicas, tcp.Status.Kubernetes.Deployment.Replicas
	secret := tcp.Status.KubeConfig.Admin.SecretName
	if secret == "" {
		return r, nil
	}
	_, err = client.CoreV1().Secrets(namespace).Get(ctx, secret, metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
	case err != nil:
		return r, fmt.Errorf("get kubeconfig secret %s/%s: %w", namespace, secret, err)
	default:
		r.KubeconfigSecret = true
	}
	return r, nil
}

// Delete asks for the TenantControlPlane to go (Kamaji removes what it
// made) and reports whether it was there.
func Delete(ctx context.Context, dyn dynamic.Interface, namespace, name string) (bool, error) {
	err := dyn.Resource(TenantControlPlanes).Namespace(namespace).Delete(ctx, name, metav1.DeleteOptions{})
	if apierrors.IsNotFound(err) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("delete tenantcontrolplane %s/%s: %w", namespace, name, err)
	}
	return true, nil
}

// Replicas is the replica count the TenantControlPlane asks for.
func Replicas(ctx context.Context, dyn dynamic.Interface, namespace, name string) (int32, error) {
	tcp, err := Get(ctx, dyn, namespace, name)
	if err != nil {
		return 0, fmt.Errorf("read tenantcontrolplane %s/%s: %w", namespace, name, err)
	}
	if tcp.Spec.ControlPlane.Deployment.Replicas == nil {
		return 1, nil
	}
	return *tcp.Spec.ControlPlane.Deployment.Replicas, nil
}

// Scale makes the TenantControlPlane ask for replicas (0 puts it to
// sleep, as Kamaji calls it), with a merge patch of that field alone.
func Scale(ctx context.Context, dyn dynamic.Interface, namespace, name string, replicas int32) error {
	patch := fmt.Sprintf(`{"spec":{"controlPlane":{"deployment":{"replicas":%d}}}}`, replicas)
	if _, err := dyn.Resource(TenantControlPlanes).Namespace(namespace).Patch(ctx, name, types.MergePatchType, []byte(patch), metav1.PatchOptions{}); err != nil {
		return fmt.Errorf("scale tenantcontrolplane %s/%s to %d: %w", namespace, name, replicas, err)
	}
	return nil
}

// Unstructured is tcp as the dynamic client takes it (tests write the
// status Kamaji would).
func Unstructured(tcp *TenantControlPlane) (*unstructured.Unstructured, error) {
	m, err := runtime.DefaultUnstructuredConverter.ToUnstructured(tcp)
	if err != nil {
		return nil, fmt.Errorf("encode tenantcontrolplane: %w", err)
	}
	return &unstructured.Unstructured{Object: m}, nil
}
