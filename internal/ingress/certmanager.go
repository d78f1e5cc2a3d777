package ingress

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"time"

	"helm.sh/helm/v3/pkg/chart"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/kubebyon/kubebyon/internal/helm"
)

// Where cert-manager goes in the virtual cluster, and what the platform
// makes with it.
const (
	CertManagerNamespace = "kubebyon-cert-manager"
	CertManagerRelease   = "kubebyon-cert-manager"
	// IssuerName is the ClusterIssuer of the ACME server the admin names.
	IssuerName = "kubebyon-acme"
	// HostnameAnnotation names the host name a Certificate is for.
	HostnameAnnotation = "kubebyon.io/hostname"
	fieldManager       = "kubebyon"
)

var (
	issuers   = schema.GroupVersionResource{Group: "cert-manager.io", Version: "v1", Resource: "clusterissuers"}
	certs     = schema.GroupVersionResource{Group: "cert-manager.io", Version: "v1", Resource: "certificates"}
	tlsStores = schema.GroupVersionResource{Group: "traefik.io", Version: "v1alpha1", Resource: "tlsstores"}
	ingresses = schema.GroupVersionResource{Group: "networking.k8s.io", Version: "v1", Resource: "ingresses"}
)

// TLSHolderPath is the one path of the Ingress that hands a host name's
// certificate to ingress-nginx (see syncTLSIngresses); its backend does
// not exist, so that path alone answers 503.
const TLSHolderPath = "/.well-known/kubebyon/tls"

// CertManagerValues are cert-manager's chart values: its CRDs installed and
// removed with the release, no post-install check Job.
func CertManagerValues() map[string]any {
	return map[string]any{
		"crds":            map[string]any{"enabled": true, "keep": false},
		"startupapicheck": map[string]any{"enabled": false},
	}
}

// InstallCertManager makes cert-manager's release in the virtual cluster
// match ch, creating its namespace first.
func InstallCertManager(ctx context.Context, cfg *rest.Config, ch *chart.Chart, logger *slog.Logger) (helm.Outcome, error) {
	client, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return "", fmt.Errorf("virtual cluster client: %w", err)
	}
	if err := ensureNamespace(ctx, client, CertManagerNamespace); err != nil {
		return "", err
	}
	return helm.Apply(ctx, cfg, CertManagerNamespace, CertManagerRelease, ch, CertManagerValues(), logger, false)
}

// RemoveCertManager takes out cert-manager's release (its CRDs with it,
// and every Certificate) and its namespace. It reports whether anything
// was there.
func RemoveCertManager(ctx context.Context, cfg *rest.Config, logger *slog.Logger) (bool, error) {
	removed, err := helm.Uninstall(cfg, CertManagerNamespace, CertManagerRelease, logger)
	if err != nil {
		return false, err
	}
	client, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return removed, fmt.Errorf("virtual cluster client: %w", err)
	}
	gone, err := deleteNamespace(ctx, client, CertManagerNamespace)
	return removed || gone, err
}

// IngressClass is the IngressClass the controller serves, which ACME
// HTTP-01 challenges go through.
func IngressClass(controller string) string {
	if controller == IngressNGINX {
		return IngressNGINXClass
	}
	return Traefik
}

// EnsureIssuer makes the ClusterIssuer of the ACME server, for the
// account of email, solving HTTP-01 challenges through class.
func EnsureIssuer(ctx context.Context, dyn dynamic.Interface, server, email, class string) error {
	obj := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "cert-manager.io/v1", "kind": "ClusterIssuer",
		"metadata": map[string]any{"name": IssuerName, "labels": map[string]any{ManagedByLabel: "kubebyon"}},
		"spec": map[string]any{"acme": map[string]any{
			"server": server, "email": email,
			"privateKeySecretRef": map[string]any{"name": IssuerName + "-account"},
			"solvers":             []any{map[string]any{"http01": map[string]any{"ingress": map[string]any{"ingressClassName": class}}}},
		}},
	}}
	if _, err := dyn.Resource(issuers).Apply(ctx, IssuerName, obj, metav1.ApplyOptions{FieldManager: fieldManager, Force: true}); err != nil {
		return fmt.Errorf("apply ClusterIssuer %s: %w", IssuerName, err)
	}
	return nil
}

// CertStatus is where a host name's certificate stands.
type CertStatus struct {
	// State: ready, issuing, or error (Error says cert-manager's last
	// word).
	State    string
	NotAfter time.Time
	Error    string
}

// The states of a certificate.
const (
	CertReady   = "ready"
	CertIssuing = "issuing"
	CertError   = "error"
)

// CertificateName is the Certificate (and Secret) of a host name in
// Namespace: readable, and unique by a hash of the whole name.
func CertificateName(hostname string) string {
	sum := sha256.Sum256([]byte(hostname))
	base := strings.ReplaceAll(hostname, ".", "-")
	if len(base) > 40 {
		base = base[:40]
	}
	return "tls-" + strings.Trim(base, "-") + "-" + hex.EncodeToString(sum[:4])
}

// SyncCertificates makes a Certificate in Namespace for each host name,
// issued by IssuerName, removes the platform's others, has the cluster's
// controller serve their Secrets for any route of those names, and returns
// each name's certificate status. Traefik serves the Secrets listed in its
// default TLSStore; ingress-nginx takes a host's certificate from an
// Ingress with a rule and a TLS section for it, in any namespace, so the
// platform keeps one such Ingress per name beside the Certificate.
func SyncCertificates(ctx context.Context, dyn dynamic.Interface, hostnames []string, controller string) (map[string]CertStatus, error) {
	list, err := dyn.Resource(certs).Namespace(Namespace).List(ctx, metav1.ListOptions{LabelSelector: ManagedByLabel + "=kubebyon"})
	if err != nil {
		return nil, fmt.Errorf("list Certificates: %w", err)
	}
	want := map[string]string{}
	for _, h := range hostnames {
		want[CertificateName(h)] = h
	}
	out := map[string]CertStatus{}
	have := map[string]bool{}
	for _, c := range list.Items {
		host, ok := want[c.GetName()]
		if !ok {
			err := dyn.Resource(certs).Namespace(Namespace).Delete(ctx, c.GetName(), metav1.DeleteOptions{})
			if err != nil && !apierrors.IsNotFound(err) {
				return nil, fmt.Errorf("delete Certificate %s: %w", c.GetName(), err)
			}
			continue
		}
		have[c.GetName()] = true
		out[host] = certStatus(&c)
	}
	for name, host := range want {
		if have[name] {
			continue
		}
		obj := &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": "cert-manager.io/v1", "kind": "Certificate",
			"metadata": map[string]any{
				"name": name, "namespace": Namespace,
				"labels":      map[string]any{ManagedByLabel: "kubebyon"},
				"annotations": map[string]any{HostnameAnnotation: host},
			},
			"spec": map[string]any{
				"secretName": name, "dnsNames": []any{host},
				"issuerRef": map[string]any{"name": IssuerName, "kind": "ClusterIssuer", "group": "cert-manager.io"},
			},
		}}
		if _, err := dyn.Resource(certs).Namespace(Namespace).Apply(ctx, name, obj, metav1.ApplyOptions{FieldManager: fieldManager, Force: true}); err != nil {
			return nil, fmt.Errorf("apply Certificate %s: %w", name, err)
		}
		out[host] = CertStatus{State: CertIssuing}
	}
	switch controller {
	case Traefik:
		if err := syncTLSStore(ctx, dyn, want); err != nil {
			return nil, err
		}
	case IngressNGINX:
		if err := syncTLSIngresses(ctx, dyn, want); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// syncTLSIngresses keeps, for each Certificate, an Ingress of class nginx
// in Namespace named like it, with a rule for its host name and a TLS
// section naming its Secret: ingress-nginx then serves that certificate
// for the host name whatever Ingress routes it, as long as no older
// Ingress of that host brings a TLS section of its own. The rule's one
// path, TLSHolderPath (Exact), is there because ingress-nginx reads TLS
// sections only for hosts with a rule. It removes the platform's others.
func syncTLSIngresses(ctx context.Context, dyn dynamic.Interface, want map[string]string) error {
	res := dyn.Resource(ingresses).Namespace(Namespace)
	if err := deleteOurs(ctx, dyn, ingresses, Namespace, ManagedByLabel+"=kubebyon", func(name string) bool { _, ok := want[name]; return ok }); err != nil {
		return err
	}
	for name, host := range want {
		obj := &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": "networking.k8s.io/v1", "kind": "Ingress",
			"metadata": map[string]any{
				"name": name, "namespace": Namespace,
				"labels":      map[string]any{ManagedByLabel: "kubebyon"},
				"annotations": map[string]any{HostnameAnnotation: host},
			},
			"spec": map[string]any{
				"ingressClassName": IngressNGINXClass,
				"tls":              []any{map[string]any{"hosts": []any{host}, "secretName": name}},
				"rules": []any{map[string]any{
					"host": host,
					"http": map[string]any{"paths": []any{map[string]any{
						"path": TLSHolderPath, "pathType": "Exact",
						"backend": map[string]any{"service": map[string]any{"name": "kubebyon-tls-holder", "port": map[string]any{"number": int64(80)}}},
					}}},
				}},
			},
		}}
		if _, err := res.Apply(ctx, name, obj, metav1.ApplyOptions{FieldManager: fieldManager, Force: true}); err != nil {
			return fmt.Errorf("apply Ingress %s: %w", name, err)
		}
	}
	return nil
}

// syncTLSStore lists the Certificates' Secrets in Traefik's default
// TLSStore.
func syncTLSStore(ctx context.Context, dyn dynamic.Interface, want map[string]string) error {
	secrets := make([]string, 0, len(want))
	for name := range want {
		secrets = append(secrets, name)
	}
	slices.Sort(secrets)
	list := make([]any, len(secrets))
	for i, s := range secrets {
		list[i] = map[string]any{"secretName": s}
	}
	obj := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "traefik.io/v1alpha1", "kind": "TLSStore",
		"metadata": map[string]any{"name": "default", "namespace": Namespace, "labels": map[string]any{ManagedByLabel: "kubebyon"}},
		"spec":     map[string]any{"certificates": list},
	}}
	if _, err := dyn.Resource(tlsStores).Namespace(Namespace).Apply(ctx, "default", obj, metav1.ApplyOptions{FieldManager: fieldManager, Force: true}); err != nil {
		return fmt.Errorf("apply TLSStore default: %w", err)
	}
	return nil
}

// certStatus reads a Certificate's status: Ready, with its expiry; or
// cert-manager's message of why it is not.
func certStatus(c *unstructured.Unstructured) CertStatus {
	st := CertStatus{State: CertIssuing}
	if s, ok, _ := unstructured.NestedString(c.Object, "status", "notAfter"); ok {
		st.NotAfter, _ = time.Parse(time.RFC3339, s)
	}
	conds, _, _ := unstructured.NestedSlice(c.Object, "status", "conditions")
	for _, raw := range conds {
		cond, ok := raw.(map[string]any)
		if !ok {
			continue
		}
		typ, _ := cond["type"].(string)
		status, _ := cond["status"].(string)
		msg, _ := cond["message"].(string)
		switch {
		case typ == "Ready" && status == "True":
			st.State, st.Error = CertReady, ""
			return st
		case typ == "Ready" && status == "False" && msg != "":
			st.Error = msg
		case typ == "Issuing" && status == "False" && msg != "":
			st.State, st.Error = CertError, msg
		}
	}
	if last, ok, _ := unstructured.NestedString(c.Object, "status", "lastFailureTime"); ok && last != "" {
		st.State = CertError
	}
	return st
}
