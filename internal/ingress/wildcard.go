package ingress

import (
	"context"
	"encoding/base64"
	"fmt"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"

	"github.com/kubebyon/kubebyon/internal/dnsrecords"
)

// The wildcard certificate of *.<apps base domain> that the shared
// Gateway terminates TLS with: issued by cert-manager on the host through
// an ACME Issuer in EdgeNamespace solving DNS-01 challenges with RFC 2136
// updates, with the key of the platform's DNS settings.
const (
	EdgeIssuer     = "kubebyon-edge-acme"
	edgeTSIGSecret = "kubebyon-edge-tsig"
	edgeACMEKey    = "kubebyon-edge-acme-account"
)

var (
	issuersNS  = schema.GroupVersionResource{Group: "cert-manager.io", Version: "v1", Resource: "issuers"}
	secretsGVR = schema.GroupVersionResource{Version: "v1", Resource: "secrets"}
)

// ErrWildcardNeedsRFC2136 says why the wildcard certificate cannot be
// issued: DNS-01 needs the RFC 2136 DNS mode.
const ErrWildcardNeedsRFC2136 = "the wildcard certificate needs the DNS settings in RFC 2136 mode (DNS-01 challenges)"

// EnsureWildcard applies the Issuer (ACME server acme, DNS-01 through the
// RFC 2136 server and key of dns) with its TSIG key Secret, and the
// Certificate of *.<appsDomain> into WildcardSecret, in EdgeNamespace; it
// returns the certificate's status as cert-manager last wrote it.
func EnsureWildcard(ctx context.Context, host dynamic.Interface, appsDomain, acme string, dns dnsrecords.Settings) (CertStatus, error) {
	if dns.Mode != dnsrecords.ModeRFC2136 {
		return CertStatus{State: CertError, Error: ErrWildcardNeedsRFC2136}, nil
	}
	secret := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "v1", "kind": "Secret",
		"metadata": map[string]any{"name": edgeTSIGSecret, "namespace": EdgeNamespace, "labels": map[string]any{ManagedByLabel: "kubebyon"}},
		"type":     "Opaque",
		"data":     map[string]any{"secret": base64.StdEncoding.EncodeToString([]byte(dns.KeySecret))},
	}}
	if _, err := host.Resource(secretsGVR).Namespace(EdgeNamespace).Apply(ctx, edgeTSIGSecret, secret, metav1.ApplyOptions{FieldManager: fieldManager, Force: true}); err != nil {
		return CertStatus{}, fmt.Errorf("apply Secret %s/%s: %w", EdgeNamespace, edgeTSIGSecret, err)
	}
	issuer := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "cert-manager.io/v1", "kind": "Issuer",
		"metadata": map[string]any{"name": EdgeIssuer, "namespace": EdgeNamespace, "labels": map[string]any{ManagedByLabel: "kubebyon"}},
		"spec": map[string]any{"acme": map[string]any{
			"server":              acme,
			"privateKeySecretRef": map[string]any{"name": edgeACMEKey},
			"solvers": []any{map[string]any{"dns01": map[string]any{"rfc2136": map[string]any{
				"nameserver":          dns.Server,
				"tsigKeyName":         strings.TrimSuffix(dns.KeyName, "."),
				"tsigAlgorithm":       certManagerTSIG(dns.KeyAlgorithm),
				"tsigSecretSecretRef": map[string]any{"name": edgeTSIGSecret, "key": "secret"},
			}}}},
		}},
	}}
	if _, err := host.Resource(issuersNS).Namespace(EdgeNamespace).Apply(ctx, EdgeIssuer, issuer, metav1.ApplyOptions{FieldManager: fieldManager, Force: true}); err != nil {
		return CertStatus{}, fmt.Errorf("apply Issuer %s/%s: %w", EdgeNamespace, EdgeIssuer, err)
	}
	cert := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "cert-manager.io/v1", "kind": "Certificate",
		"metadata": map[string]any{"name": WildcardSecret, "namespace": EdgeNamespace, "labels": map[string]any{ManagedByLabel: "kubebyon"}},
		"spec": map[string]any{
			"secretName": WildcardSecret, "dnsNames": []any{"*." + appsDomain},
			"issuerRef": map[string]any{"name": EdgeIssuer, "kind": "Issuer", "group": "cert-manager.io"},
		},
	}}
	applied, err := host.Resource(certs).Namespace(EdgeNamespace).Apply(ctx, WildcardSecret, cert, metav1.ApplyOptions{FieldManager: fieldManager, Force: true})
	if apierrors.IsNotFound(err) {
		return CertStatus{}, fmt.Errorf("apply Certificate %s/%s: is cert-manager installed on the host cluster? %w", EdgeNamespace, WildcardSecret, err)
	}
	if err != nil {
		return CertStatus{}, fmt.Errorf("apply Certificate %s/%s: %w", EdgeNamespace, WildcardSecret, err)
	}
	return certStatus(applied), nil
}

// certManagerTSIG is cert-manager's name of a TSIG algorithm
// (dnsrecords.Algorithms): hmac-sha256 is HMACSHA256.
func certManagerTSIG(alg string) string {
	return strings.ToUpper(strings.ReplaceAll(strings.TrimSuffix(alg, "."), "-", ""))
}
