// Package hostcheck tells whether the platform can run virtual clusters on
// a host cluster: it reaches the API server, reads its version, and asks
// with SelfSubjectAccessReviews whether the credentials hold every
// permission the platform uses. It changes nothing on the cluster.
package hostcheck

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"slices"
	"sync"
	"time"

	authorizationv1 "k8s.io/api/authorization/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/version"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
)

// Timeout bounds a whole check.
const Timeout = 10 * time.Second

// Requirement is a resource the platform works with and the verbs it needs
// on it: cluster-wide for cluster-scoped resources, and in every namespace
// (each cluster gets a namespace of its own) for namespaced ones.
type Requirement struct {
	Group      string
	Resource   string
	Verbs      []string
	Namespaced bool
	// Feature names the feature that needs it ("" for every platform):
	// see Features.
	Feature string
}

// FeatureEdge: managed ingress through the platform edge.
const FeatureEdge = "edge"

// Features are the features the platform offers: the permissions only
// they need count as missing when they are offered, and are shown either
// way.
type Features struct {
	Edge bool
}

func (f Features) offer(feature string) bool {
	return feature == "" || (feature == FeatureEdge && f.Edge)
}

// Name is the resource as kubectl spells it: resource.group.
func (r Requirement) Name() string {
	if r.Group == "" {
		return r.Resource
	}
	return r.Resource + "." + r.Group
}

// Verbs the platform may use, in the order reports show them: Helm
// patches what an upgrade changes, and the chart's Role grants rights on
// pods and the like that the platform itself does not use, which takes
// escalate (and bind, for its RoleBinding) on roles.
var Verbs = []string{"create", "get", "list", "update", "patch", "delete", "escalate", "bind"}

// objectVerbs are what Helm does to the objects of a release.
var objectVerbs = []string{"create", "get", "list", "update", "patch", "delete"}

// Required is what installing, upgrading and removing a vcluster with Helm
// needs (Helm keeps its releases in Secrets), plus reading the nodes.
var Required = []Requirement{
	{Resource: "namespaces", Verbs: []string{"create", "get", "delete"}},
	{Resource: "secrets", Verbs: objectVerbs, Namespaced: true},
	{Resource: "services", Verbs: objectVerbs, Namespaced: true},
	{Resource: "serviceaccounts", Verbs: objectVerbs, Namespaced: true},
	{Resource: "configmaps", Verbs: objectVerbs, Namespaced: true},
	{Group: "apps", Resource: "statefulsets", Verbs: objectVerbs, Namespaced: true},
	{Group: "rbac.authorization.k8s.io", Resource: "roles", Verbs: append(slices.Clone(objectVerbs), "escalate", "bind"), Namespaced: true},
	{Group: "rbac.authorization.k8s.io", Resource: "rolebindings", Verbs: objectVerbs, Namespaced: true},
	{Group: "policy", Resource: "poddisruptionbudgets", Verbs: objectVerbs, Namespaced: true},
	{Resource: "persistentvolumeclaims", Verbs: objectVerbs, Namespaced: true},
	{Resource: "nodes", Verbs: []string{"get", "list"}},
}

// EdgeRequired is what managed ingress through the platform edge writes on
// the host: the shared Gateway, each cluster's routes, EndpointSlices
// (beside a Service), and the wildcard certificate's Issuer and
// Certificate (package ingress, gateway.go and wildcard.go); all applied
// server-side, which takes patch.
var EdgeRequired = []Requirement{
	{Group: "gateway.networking.k8s.io", Resource: "gateways", Verbs: objectVerbs, Namespaced: true, Feature: FeatureEdge},
	{Group: "gateway.networking.k8s.io", Resource: "httproutes", Verbs: objectVerbs, Namespaced: true, Feature: FeatureEdge},
	{Group: "gateway.networking.k8s.io", Resource: "tlsroutes", Verbs: objectVerbs, Namespaced: true, Feature: FeatureEdge},
	{Group: "discovery.k8s.io", Resource: "endpointslices", Verbs: objectVerbs, Namespaced: true, Feature: FeatureEdge},
	{Group: "cert-manager.io", Resource: "issuers", Verbs: objectVerbs, Namespaced: true, Feature: FeatureEdge},
	{Group: "cert-manager.io", Resource: "certificates", Verbs: objectVerbs, Namespaced: true, Feature: FeatureEdge},
}

// Report is the outcome of a check that reached the server.
type Report struct {
	// Server is the API server's URL, Version its Kubernetes version.
	Server  string
	Version string
	// Results has one entry per Required entry, then one per
	// EdgeRequired entry, in the same order.
	Results []Result
}

// Result says which of a requirement's verbs the credentials may use;
// Counted, whether the platform offers the feature that needs them (what
// is missing then counts).
type Result struct {
	Requirement
	Allowed map[string]bool
	Counted bool
}

// Missing lists the requirement's verbs that are not allowed.
func (r Result) Missing() []string {
	var out []string
	for _, v := range r.Verbs {
		if !r.Allowed[v] {
			out = append(out, v)
		}
	}
	return out
}

// Missing counts the permissions (a verb on a resource) not granted that
// the features offered need.
func (r Report) Missing() int {
	n := 0
	for _, res := range r.Results {
		if res.Counted {
			n += len(res.Missing())
		}
	}
	return n
}

// OK reports whether every permission is granted.
func (r Report) OK() bool { return r.Missing() == 0 }

// Kind is why a check could not run.
type Kind string

// Kinds of failure.
const (
	// Unreachable: no connection (refused, no route, unknown host).
	Unreachable Kind = "unreachable"
	// TimedOut: no answer within Timeout.
	TimedOut Kind = "timeout"
	// BadCertificate: the server's certificate is not trusted.
	BadCertificate Kind = "certificate"
	// Unauthorized: the server rejected the credentials.
	Unauthorized Kind = "unauthorized"
	// Failed: anything else the server answered with.
	Failed Kind = "failed"
)

// Error is a check that could not run.
type Error struct {
	Server string
	Kind   Kind
	Err    error
}

func (e *Error) Error() string {
	return fmt.Sprintf("host cluster %s: %s: %v", e.Server, e.Kind, e.Err)
}

func (e *Error) Unwrap() error { return e.Err }

// parallel bounds the access reviews in flight.
const parallel = 8

// Check reaches the server of cfg within Timeout, reads its version and
// reviews every Required and EdgeRequired permission, counting those of
// the features offered. A failure is an *Error.
func Check(ctx context.Context, cfg *rest.Config, features Features) (Report, error) {
	ctx, cancel := context.WithTimeout(ctx, Timeout)
	defer cancel()
	cfg = rest.CopyConfig(cfg)
	cfg.Timeout = Timeout
	// client-go's default of 5 requests a second would make the reviews
	// alone take longer than Timeout.
	cfg.QPS, cfg.Burst = 100, 100
	report := Report{Server: cfg.Host}
	fail := func(err error) (Report, error) {
		return report, &Error{Server: cfg.Host, Kind: kindOf(ctx, err), Err: err}
	}
	client, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return fail(fmt.Errorf("client: %w", err))
	}
	if report.Version, err = serverVersion(ctx, client); err != nil {
		return fail(err)
	}
	if report.Results, err = review(ctx, client, features); err != nil {
		return fail(err)
	}
	return report, nil
}

// serverVersion reads /version with the check's context (the discovery
// client's ServerVersion takes none).
func serverVersion(ctx context.Context, client kubernetes.Interface) (string, error) {
	body, err := client.Discovery().RESTClient().Get().AbsPath("/version").Do(ctx).Raw()
	if err != nil {
		return "", fmt.Errorf("read server version: %w", err)
	}
	var v version.Info
	if err := json.Unmarshal(body, &v); err != nil {
		return "", fmt.Errorf("decode server version: %w", err)
	}
	return v.GitVersion, nil
}

// review asks, for every verb of every requirement, whether the
// credentials may use it.
func review(ctx context.Context, client kubernetes.Interface, features Features) ([]Result, error) {
	all := append(slices.Clone(Required), EdgeRequired...)
	results := make([]Result, len(all))
	var (
		mu    sync.Mutex
		first error
		wg    sync.WaitGroup
	)
	slots := make(chan struct{}, parallel)
	for i, req := range all {
		results[i] = Result{Requirement: req, Allowed: map[string]bool{}, Counted: features.offer(req.Feature)}
		for _, verb := range req.Verbs {
			wg.Go(func() {
				slots <- struct{}{}
				defer func() { <-slots }()
				allowed, err := allows(ctx, client, req, verb)
				mu.Lock()
				defer mu.Unlock()
				if err != nil {
					if first == nil {
						first = err
					}
					return
				}
				results[i].Allowed[verb] = allowed
			})
		}
	}
	wg.Wait()
	if first != nil {
		return nil, first
	}
	return results, nil
}

// allows asks whether verb is allowed on the requirement's resource; an
// empty namespace means every namespace.
func allows(ctx context.Context, client kubernetes.Interface, req Requirement, verb string) (bool, error) {
	ssar := &authorizationv1.SelfSubjectAccessReview{Spec: authorizationv1.SelfSubjectAccessReviewSpec{
		ResourceAttributes: &authorizationv1.ResourceAttributes{Verb: verb, Group: req.Group, Resource: req.Resource},
	}}
	got, err := client.AuthorizationV1().SelfSubjectAccessReviews().Create(ctx, ssar, metav1.CreateOptions{})
	if err != nil {
		return false, fmt.Errorf("review %s %s: %w", verb, req.Name(), err)
	}
	return got.Status.Allowed, nil
}

// kindOf classifies a failure for the person who has to fix it.
func kindOf(ctx context.Context, err error) Kind {
	var (
		netErr     net.Error
		opErr      *net.OpError
		dnsErr     *net.DNSError
		verifyErr  *tls.CertificateVerificationError
		unknownCA  x509.UnknownAuthorityError
		hostErr    x509.HostnameError
		invalidErr x509.CertificateInvalidError
	)
	switch {
	case errors.Is(err, context.DeadlineExceeded) || ctx.Err() != nil || (errors.As(err, &netErr) && netErr.Timeout()):
		return TimedOut
	case errors.As(err, &verifyErr) || errors.As(err, &unknownCA) || errors.As(err, &hostErr) || errors.As(err, &invalidErr):
		return BadCertificate
	case apierrors.IsUnauthorized(err):
		return Unauthorized
	case errors.As(err, &dnsErr) || errors.As(err, &opErr):
		return Unreachable
	}
	return Failed
}
