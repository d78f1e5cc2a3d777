// Package kubeadm makes, in a cluster's control plane, what `kubeadm join`
// needs there: what `kubeadm init` makes on a control plane of its own
// (its phases upload-config and bootstrap-token), which a hosted control
// plane may lack. The objects carry kubeadm's own names, so that a
// backend that makes them too (Kamaji does) and the platform agree.
//
// kubeadm's phases live in k8s.io/kubernetes, which is not meant to be a
// dependency; the few objects are written here with client-go, following
// cmd/kubeadm/app/phases/{bootstraptoken,uploadconfig} (v1.34).
package kubeadm

import (
	"context"
	"fmt"
	"net"
	"net/netip"
	"net/url"
	"reflect"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	bootstrapapi "k8s.io/cluster-bootstrap/token/api"
	kubeletv1beta1 "k8s.io/kubelet/config/v1beta1"
	"sigs.k8s.io/yaml"
)

// kubeadm's names (cmd/kubeadm/app/constants).
const (
	// NodesGroup is the group of the bootstrap tokens nodes join with.
	NodesGroup = "system:bootstrappers:kubeadm:default-node-token"

	clusterInfoRole        = "kubeadm:bootstrap-signer-clusterinfo"
	kubeletBootstrap       = "kubeadm:kubelet-bootstrap"
	autoApproveBootstrap   = "kubeadm:node-autoapprove-bootstrap"
	autoApproveRotation    = "kubeadm:node-autoapprove-certificate-rotation"
	getNodes               = "kubeadm:get-nodes"
	kubeadmConfigMap       = "kubeadm-config"
	kubeadmConfigRole      = "kubeadm:nodes-kubeadm-config"
	kubeletConfigMap       = "kubelet-config"
	kubeletConfigRole      = "kubeadm:kubelet-config"
	apiserverKubeletClient = "kube-apiserver-kubelet-client"
	// CertificatesDir is where kubeadm join writes the cluster's CA.
	CertificatesDir = "/etc/kubernetes/pki"
)

// Cluster is what the objects say about the cluster.
type Cluster struct {
	// Server is the control plane's public address, https://host[:port]:
	// what joining machines reach and put in their kubeconfigs.
	Server string
	// CA is the PEM of the cluster's CA.
	CA []byte
	// Name and KubernetesVersion (vX.Y.Z) of the cluster.
	Name, KubernetesVersion string
	// PodCIDR and ServiceCIDR are its networks.
	PodCIDR, ServiceCIDR string
}

// Ensure makes what kubeadm join needs, and puts right what differs from
// it: cluster-info names the public server and the cluster's CA, and
// anyone may read it (discovery); bootstrap tokens may file node CSRs,
// which are approved, as are kubelets' renewals, and may read Nodes; the
// joining machine may read the kubeadm and kubelet configurations (made
// when missing: a backend's own are kept); the API server's kubelet
// client may reach kubelets (logs, exec). The bootstrap signer of the
// cluster's controller manager signs cluster-info for each token.
func Ensure(ctx context.Context, client kubernetes.Interface, c Cluster) error {
	if err := ensureClusterInfo(ctx, client, c); err != nil {
		return err
	}
	roles := []*rbacv1.Role{
		role(metav1.NamespacePublic, clusterInfoRole, bootstrapapi.ConfigMapClusterInfo),
		role(metav1.NamespaceSystem, kubeadmConfigRole, kubeadmConfigMap),
		role(metav1.NamespaceSystem, kubeletConfigRole, kubeletConfigMap),
	}
	for _, r := range roles {
		if err := ensureRole(ctx, client, r); err != nil {
			return err
		}
	}
	joining := []rbacv1.Subject{
		{Kind: rbacv1.GroupKind, Name: NodesGroup},
		{Kind: rbacv1.GroupKind, Name: "system:nodes"},
	}
	bindings := []*rbacv1.RoleBinding{
		roleBinding(metav1.NamespacePublic, clusterInfoRole, rbacv1.Subject{Kind: rbacv1.UserKind, Name: "system:anonymous"}),
		roleBinding(metav1.NamespaceSystem, kubeadmConfigRole, joining...),
		roleBinding(metav1.NamespaceSystem, kubeletConfigRole, joining...),
	}
	for _, b := range bindings {
		if err := ensureRoleBinding(ctx, client, b); err != nil {
			return err
		}
	}
	if err := ensureClusterRole(ctx, client, &rbacv1.ClusterRole{
		ObjectMeta: metav1.ObjectMeta{Name: getNodes},
		Rules:      []rbacv1.PolicyRule{{APIGroups: []string{""}, Resources: []string{"nodes"}, Verbs: []string{"get"}}},
	}); err != nil {
		return err
	}
	tokens := rbacv1.Subject{Kind: rbacv1.GroupKind, Name: NodesGroup}
	for _, b := range []*rbacv1.ClusterRoleBinding{
		clusterRoleBinding(kubeletBootstrap, "system:node-bootstrapper", tokens),
		clusterRoleBinding(autoApproveBootstrap, "system:certificates.k8s.io:certificatesigningrequests:nodeclient", tokens),
		clusterRoleBinding(autoApproveRotation, "system:certificates.k8s.io:certificatesigningrequests:selfnodeclient",
			rbacv1.Subject{Kind: rbacv1.GroupKind, Name: "system:nodes"}),
		clusterRoleBinding(getNodes, getNodes, tokens),
		clusterRoleBinding(apiserverKubeletClient, "system:kubelet-api-admin",
			rbacv1.Subject{Kind: rbacv1.UserKind, Name: apiserverKubeletClient}),
	} {
		if err := ensureClusterRoleBinding(ctx, client, b); err != nil {
			return err
		}
	}
	if err := ensureConfigMap(ctx, client, metav1.NamespaceSystem, kubeadmConfigMap, "ClusterConfiguration", clusterConfiguration(c)); err != nil {
		return err
	}
	kubelet, err := kubeletConfiguration(c)
	if err != nil {
		return err
	}
	return ensureConfigMap(ctx, client, metav1.NamespaceSystem, kubeletConfigMap, "kubelet", kubelet)
}

// ensureClusterInfo writes kube-public/cluster-info's kubeconfig (the
// server and CA) and leaves its other keys: the bootstrap signer's
// signatures, one per token.
func ensureClusterInfo(ctx context.Context, client kubernetes.Interface, c Cluster) error {
	cfg := clientcmdapi.NewConfig()
	cfg.Clusters[""] = &clientcmdapi.Cluster{Server: c.Server, CertificateAuthorityData: c.CA}
	raw, err := clientcmd.Write(*cfg)
	if err != nil {
		return fmt.Errorf("cluster-info kubeconfig: %w", err)
	}
	cms := client.CoreV1().ConfigMaps(metav1.NamespacePublic)
	cur, err := cms.Get(ctx, bootstrapapi.ConfigMapClusterInfo, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		_, err = cms.Create(ctx, &corev1.ConfigMap{
			ObjectMeta: metav1.ObjectMeta{Name: bootstrapapi.ConfigMapClusterInfo, Namespace: metav1.NamespacePublic},
			Data:       map[string]string{bootstrapapi.KubeConfigKey: string(raw)},
		}, metav1.CreateOptions{})
		if err != nil && !apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("create cluster-info: %w", err)
		}
		return nil
	}
	if err != nil {
		return fmt.Errorf("get cluster-info: %w", err)
	}
	if same, err := sameClusterInfo(cur.Data[bootstrapapi.KubeConfigKey], c); err != nil || same {
		return err
	}
	if cur.Data == nil {
		cur.Data = map[string]string{}
	}
	cur.Data[bootstrapapi.KubeConfigKey] = string(raw)
	if _, err := cms.Update(ctx, cur, metav1.UpdateOptions{}); err != nil {
		return fmt.Errorf("update cluster-info: %w", err)
	}
	return nil
}

// sameClusterInfo reports whether a cluster-info kubeconfig names c's
// server and CA already (one that does not parse does not).
func sameClusterInfo(raw string, c Cluster) (bool, error) {
	cfg, err := clientcmd.Load([]byte(raw))
	if err != nil || len(cfg.Clusters) != 1 {
		return false, nil //nolint:nilerr // rewritten below
	}
	for _, cl := range cfg.Clusters {
		return cl.Server == c.Server && string(cl.CertificateAuthorityData) == string(c.CA), nil
	}
	return false, nil
}

// role may get one ConfigMap.
func role(ns, name, configMap string) *rbacv1.Role {
	return &rbacv1.Role{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
		Rules:      []rbacv1.PolicyRule{{APIGroups: []string{""}, Resources: []string{"configmaps"}, ResourceNames: []string{configMap}, Verbs: []string{"get"}}},
	}
}

func roleBinding(ns, name string, subjects ...rbacv1.Subject) *rbacv1.RoleBinding {
	return &rbacv1.RoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: name},
		Subjects:   subjects,
	}
}

func clusterRoleBinding(name, clusterRole string, subjects ...rbacv1.Subject) *rbacv1.ClusterRoleBinding {
	return &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: clusterRole},
		Subjects:   subjects,
	}
}

func ensureRole(ctx context.Context, client kubernetes.Interface, want *rbacv1.Role) error {
	api := client.RbacV1().Roles(want.Namespace)
	cur, err := api.Get(ctx, want.Name, metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
		if _, err := api.Create(ctx, want, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("create role %s/%s: %w", want.Namespace, want.Name, err)
		}
		return nil
	case err != nil:
		return fmt.Errorf("get role %s/%s: %w", want.Namespace, want.Name, err)
	case reflect.DeepEqual(cur.Rules, want.Rules):
		return nil
	}
	cur.Rules = want.Rules
	if _, err := api.Update(ctx, cur, metav1.UpdateOptions{}); err != nil {
		return fmt.Errorf("update role %s/%s: %w", want.Namespace, want.Name, err)
	}
	return nil
}

func ensureClusterRole(ctx context.Context, client kubernetes.Interface, want *rbacv1.ClusterRole) error {
	api := client.RbacV1().ClusterRoles()
	cur, err := api.Get(ctx, want.Name, metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
		if _, err := api.Create(ctx, want, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("create clusterrole %s: %w", want.Name, err)
		}
		return nil
	case err != nil:
		return fmt.Errorf("get clusterrole %s: %w", want.Name, err)
	case reflect.DeepEqual(cur.Rules, want.Rules):
		return nil
	}
	cur.Rules = want.Rules
	if _, err := api.Update(ctx, cur, metav1.UpdateOptions{}); err != nil {
		return fmt.Errorf("update clusterrole %s: %w", want.Name, err)
	}
	return nil
}

// ensureRoleBinding makes the binding, or gives one that exists the
// subjects it lacks (a backend's own subjects stay).
func ensureRoleBinding(ctx context.Context, client kubernetes.Interface, want *rbacv1.RoleBinding) error {
	api := client.RbacV1().RoleBindings(want.Namespace)
	cur, err := api.Get(ctx, want.Name, metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
		if _, err := api.Create(ctx, want, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("create rolebinding %s/%s: %w", want.Namespace, want.Name, err)
		}
		return nil
	case err != nil:
		return fmt.Errorf("get rolebinding %s/%s: %w", want.Namespace, want.Name, err)
	}
	if cur.RoleRef != want.RoleRef {
		return fmt.Errorf("rolebinding %s/%s binds %s %s, not %s", want.Namespace, want.Name, cur.RoleRef.Kind, cur.RoleRef.Name, want.RoleRef.Name)
	}
	subjects, changed := withSubjects(cur.Subjects, want.Subjects)
	if !changed {
		return nil
	}
	cur.Subjects = subjects
	if _, err := api.Update(ctx, cur, metav1.UpdateOptions{}); err != nil {
		return fmt.Errorf("update rolebinding %s/%s: %w", want.Namespace, want.Name, err)
	}
	return nil
}

// ensureClusterRoleBinding is ensureRoleBinding for a ClusterRoleBinding.
func ensureClusterRoleBinding(ctx context.Context, client kubernetes.Interface, want *rbacv1.ClusterRoleBinding) error {
	api := client.RbacV1().ClusterRoleBindings()
	cur, err := api.Get(ctx, want.Name, metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
		if _, err := api.Create(ctx, want, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("create clusterrolebinding %s: %w", want.Name, err)
		}
		return nil
	case err != nil:
		return fmt.Errorf("get clusterrolebinding %s: %w", want.Name, err)
	}
	if cur.RoleRef != want.RoleRef {
		return fmt.Errorf("clusterrolebinding %s binds %s %s, not %s", want.Name, cur.RoleRef.Kind, cur.RoleRef.Name, want.RoleRef.Name)
	}
	subjects, changed := withSubjects(cur.Subjects, want.Subjects)
	if !changed {
		return nil
	}
	cur.Subjects = subjects
	if _, err := api.Update(ctx, cur, metav1.UpdateOptions{}); err != nil {
		return fmt.Errorf("update clusterrolebinding %s: %w", want.Name, err)
	}
	return nil
}

// withSubjects adds to have the subjects of want it lacks.
func withSubjects(have, want []rbacv1.Subject) ([]rbacv1.Subject, bool) {
	changed := false
	for _, w := range want {
		found := false
		for _, h := range have {
			if h.Kind == w.Kind && h.Name == w.Name && h.Namespace == w.Namespace {
				found = true
				break
			}
		}
		if !found {
			have = append(have, w)
			changed = true
		}
	}
	return have, changed
}

// ensureConfigMap makes a ConfigMap of one key when it is missing; one
// that exists is the backend's, and stays as it is.
func ensureConfigMap(ctx context.Context, client kubernetes.Interface, ns, name, key string, value []byte) error {
	api := client.CoreV1().ConfigMaps(ns)
	_, err := api.Get(ctx, name, metav1.GetOptions{})
	switch {
	case err == nil:
		return nil
	case !apierrors.IsNotFound(err):
		return fmt.Errorf("get configmap %s/%s: %w", ns, name, err)
	}
	_, err = api.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns}, Data: map[string]string{key: string(value)}}, metav1.CreateOptions{})
	if err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("create configmap %s/%s: %w", ns, name, err)
	}
	return nil
}

// clusterConfiguration is kubeadm's ClusterConfiguration (v1beta4) of the
// cluster, the fields a joining node reads.
func clusterConfiguration(c Cluster) []byte {
	cfg := map[string]any{
		"apiVersion":           "kubeadm.k8s.io/v1beta4",
		"kind":                 "ClusterConfiguration",
		"clusterName":          c.Name,
		"kubernetesVersion":    c.KubernetesVersion,
		"controlPlaneEndpoint": endpointOf(c.Server),
		"certificatesDir":      CertificatesDir,
		"networking": map[string]any{
			"dnsDomain":     "cluster.local",
			"podSubnet":     c.PodCIDR,
			"serviceSubnet": c.ServiceCIDR,
		},
	}
	b, _ := yaml.Marshal(cfg) // maps of strings always encode
	return b
}

// endpointOf is host:port of an https URL (443 when it names none).
func endpointOf(server string) string {
	u, err := url.Parse(server)
	if err != nil {
		return server
	}
	if u.Port() != "" {
		return u.Host
	}
	return net.JoinHostPort(u.Hostname(), "443")
}

// kubeletConfiguration is the kubelet configuration kubeadm gives joining
// nodes: x509 and webhook authentication and webhook authorization (so
// that the API server's logs and exec calls are accepted and anonymous
// ones are not), the cluster's DNS service address, the systemd cgroup
// driver (kubeadm's default; a node changes it with kubeadm's --patches).
func kubeletConfiguration(c Cluster) ([]byte, error) {
	dns, err := clusterDNS(c.ServiceCIDR)
	if err != nil {
		return nil, err
	}
	yes, no := true, false
	cfg := kubeletv1beta1.KubeletConfiguration{
		TypeMeta: metav1.TypeMeta{APIVersion: kubeletv1beta1.SchemeGroupVersion.String(), Kind: "KubeletConfiguration"},
		Authentication: kubeletv1beta1.KubeletAuthentication{
			Anonymous: kubeletv1beta1.KubeletAnonymousAuthentication{Enabled: &no},
			Webhook:   kubeletv1beta1.KubeletWebhookAuthentication{Enabled: &yes},
			X509:      kubeletv1beta1.KubeletX509Authentication{ClientCAFile: CertificatesDir + "/ca.crt"},
		},
		Authorization:      kubeletv1beta1.KubeletAuthorization{Mode: kubeletv1beta1.KubeletAuthorizationModeWebhook},
		CgroupDriver:       "systemd",
		ClusterDNS:         []string{dns},
		ClusterDomain:      "cluster.local",
		RotateCertificates: true,
		StaticPodPath:      "/etc/kubernetes/manifests",
	}
	b, err := yaml.Marshal(cfg)
	if err != nil {
		return nil, fmt.Errorf("encode kubelet configuration: %w", err)
	}
	return b, nil
}

// clusterDNS is the tenth address of the service network, where kubeadm
// and Kamaji put the cluster DNS service.
func clusterDNS(serviceCIDR string) (string, error) {
	p, err := netip.ParsePrefix(serviceCIDR)
	if err != nil {
		return "", fmt.Errorf("service network %q: %w", serviceCIDR, err)
	}
	a := p.Masked().Addr()
	for range 10 {
		a = a.Next()
	}
	if !p.Contains(a) {
		return "", fmt.Errorf("service network %q has no tenth address", serviceCIDR)
	}
	return a.String(), nil
}
