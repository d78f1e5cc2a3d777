// Package ingress is managed workload ingress: the ingress controller the
// platform installs into a virtual cluster, with Helm, as a DaemonSet on
// the nodes the user marks as ingress nodes (every node when none is
// marked) with host ports 80 and 443, so that the nodes' own addresses
// serve the cluster's web apps.
package ingress

import (
	"context"
	"fmt"
	"log/slog"
	"net/netip"

	"helm.sh/helm/v3/pkg/chart"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/kubebyon/kubebyon/internal/helm"
)

// The controllers the admin can pick.
const (
	// Traefik is the default: maintained, and it serves Ingress and
	// Gateway API objects.
	Traefik = "traefik"
	// IngressNGINX is for those who already use it. Upstream retired it
	// in March 2026: the pages say so.
	IngressNGINX = "ingress-nginx"
)

// IngressNGINXClass is the IngressClass ingress-nginx serves.
const IngressNGINXClass = "nginx"

// Values are the controller's chart values (TraefikValues,
// IngressNGINXValues).
func Values(controller string, nodesMarked bool) (map[string]any, error) {
	switch controller {
	case Traefik:
		return TraefikValues(nodesMarked), nil
	case IngressNGINX:
		return IngressNGINXValues(nodesMarked), nil
	}
	return nil, fmt.Errorf("unknown ingress controller %q", controller)
}

// Where the controller goes in the virtual cluster.
const (
	Namespace   = "kubebyon-ingress"
	ReleaseName = "kubebyon-ingress"
	// NodeLabel marks the ingress nodes (value "true"), set from the
	// console's node page.
	NodeLabel = "kubebyon.io/ingress-node"
	// PublicAddressAnnotation is the public address the user gave a node
	// in the console: its host names' records get it instead of the
	// node's ExternalIP.
	PublicAddressAnnotation = "kubebyon.io/public-address"
	// ManagedByLabel marks what the platform made outside the release.
	ManagedByLabel = "app.kubernetes.io/managed-by"
)

// TraefikValues are the Traefik chart's values: a DaemonSet with host
// ports 80 and 443 (no Service: the nodes' addresses are the entry), on
// the ingress nodes when some are marked, else on every node; the
// cluster's default IngressClass.
func TraefikValues(nodesMarked bool) map[string]any {
	v := map[string]any{
		"deployment": map[string]any{"kind": "DaemonSet"},
		"ports": map[string]any{
			"web":       map[string]any{"hostPort": 80},
			"websecure": map[string]any{"hostPort": 443},
		},
		"service":      map[string]any{"enabled": false},
		"ingressClass": map[string]any{"enabled": true, "isDefaultClass": true, "name": Traefik},
	}
	if nodesMarked {
		v["nodeSelector"] = map[string]any{NodeLabel: "true"}
	}
	return v
}

// IngressNGINXValues are the ingress-nginx chart's values, as Traefik's:
// a DaemonSet with host ports 80 and 443, no Service, on the ingress nodes
// when some are marked, the default IngressClass. Its admission webhook is
// off: the chart makes its certificate with hook Jobs that an install
// waits for, and the webhook only checks Ingress objects early.
func IngressNGINXValues(nodesMarked bool) map[string]any {
	selector := map[string]any{"kubernetes.io/os": "linux"}
	if nodesMarked {
		selector[NodeLabel] = "true"
	}
	return map[string]any{"controller": map[string]any{
		"kind":                 "DaemonSet",
		"hostPort":             map[string]any{"enabled": true},
		"service":              map[string]any{"enabled": false},
		"ingressClassResource": map[string]any{"name": IngressNGINXClass, "enabled": true, "default": true},
		"nodeSelector":         selector,
		"admissionWebhooks":    map[string]any{"enabled": false},
	}}
}

// Install makes the controller's release in the virtual cluster cfg
// reaches match ch and values, creating its namespace first.
func Install(ctx context.Context, cfg *rest.Config, ch *chart.Chart, values map[string]any, logger *slog.Logger) (helm.Outcome, error) {
	client, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return "", fmt.Errorf("virtual cluster client: %w", err)
	}
	if err := ensureNamespace(ctx, client, Namespace); err != nil {
		return "", err
	}
	return helm.Apply(ctx, cfg, Namespace, ReleaseName, ch, values, logger, false)
}

var crds = schema.GroupVersionResource{Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions"}

// Remove takes out what Install put in: the release, its chart's CRDs
// (Helm installs them but never removes them) and the namespace. The CRDs
// are those of the release's last chart, or of fallback (the chart the
// settings name; nil: none) when the release is gone already: a removal
// cut short after the uninstall takes them out the next time. It reports
// whether anything was there.
func Remove(ctx context.Context, cfg *rest.Config, fallback *chart.Chart, logger *slog.Logger) (bool, error) {
	ch := fallback
	rels, err := helm.Releases(cfg, Namespace, ReleaseName, logger)
	if err != nil {
		return false, fmt.Errorf("read release %s: %w", ReleaseName, err)
	}
	if len(rels) > 0 && rels[len(rels)-1].Chart != nil {
		ch = rels[len(rels)-1].Chart
	}
	removed, err := helm.Uninstall(cfg, Namespace, ReleaseName, logger)
	if err != nil {
		return false, err
	}
	var crdFiles []chart.CRD
	if ch != nil {
		crdFiles = ch.CRDObjects()
	}
	dyn, err := dynamic.NewForConfig(cfg)
	if err != nil {
		return false, fmt.Errorf("virtual cluster client: %w", err)
	}
	for _, f := range crdFiles {
		var meta struct {
			Metadata struct{ Name string } `json:"metadata"`
		}
		if err := yaml.Unmarshal(f.File.Data, &meta); err != nil || meta.Metadata.Name == "" {
			continue // not a CRD (a kustomization.yaml)
		}
		err := dyn.Resource(crds).Delete(ctx, meta.Metadata.Name, metav1.DeleteOptions{})
		switch {
		case err == nil:
			removed = true
		case !apierrors.IsNotFound(err):
			return removed, fmt.Errorf("delete CRD %s: %w", meta.Metadata.Name, err)
		}
	}
	client, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return removed, fmt.Errorf("virtual cluster client: %w", err)
	}
	gone, err := deleteNamespace(ctx, client, Namespace)
	return removed || gone, err
}

// ensureNamespace creates the platform's namespace ns; one still
// terminating from a removal is ErrNamespaceTerminating.
func ensureNamespace(ctx context.Context, client kubernetes.Interface, ns string) error {
	obj := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns, Labels: map[string]string{ManagedByLabel: "kubebyon"}}}
	_, err := client.CoreV1().Namespaces().Create(ctx, obj, metav1.CreateOptions{})
	if apierrors.IsAlreadyExists(err) {
		cur, err := client.CoreV1().Namespaces().Get(ctx, ns, metav1.GetOptions{})
		if err != nil {
			return fmt.Errorf("read namespace %s: %w", ns, err)
		}
		if cur.DeletionTimestamp != nil {
			return ErrNamespaceTerminating
		}
		return nil
	}
	if err != nil {
		return fmt.Errorf("create namespace %s: %w", ns, err)
	}
	return nil
}

// deleteNamespace asks for the namespace ns to go; it reports whether it
// was there and not going already.
func deleteNamespace(ctx context.Context, client kubernetes.Interface, ns string) (bool, error) {
	cur, err := client.CoreV1().Namespaces().Get(ctx, ns, metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
		return false, nil
	case err != nil:
		return false, fmt.Errorf("read namespace %s: %w", ns, err)
	case cur.DeletionTimestamp != nil:
		return false, nil // going already
	}
	err = client.CoreV1().Namespaces().Delete(ctx, ns, metav1.DeleteOptions{})
	if err != nil && !apierrors.IsNotFound(err) {
		return false, fmt.Errorf("delete namespace %s: %w", ns, err)
	}
	return true, nil
}

// NodesMarked reports whether the user marked any node as an ingress
// node: the controller then runs on those only.
func NodesMarked(ctx context.Context, client kubernetes.Interface) (bool, error) {
	list, err := client.CoreV1().Nodes().List(ctx, metav1.ListOptions{LabelSelector: NodeLabel + "=true", Limit: 1})
	if err != nil {
		return false, fmt.Errorf("list ingress nodes: %w", err)
	}
	return len(list.Items) > 0, nil
}

// PublicAddress is the address the user gave the node, if it is an IP
// address ("" otherwise).
func PublicAddress(n *corev1.Node) string {
	ip, err := netip.ParseAddr(n.Annotations[PublicAddressAnnotation])
	if err != nil || ip.Zone() != "" {
		return ""
	}
	return ip.Unmap().String()
}
