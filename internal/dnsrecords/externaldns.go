package dnsrecords

import (
	"context"
	"fmt"
	"net/netip"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
)

// DNSEndpoints is external-dns's DNSEndpoint resource. Its Go types live
// in sigs.k8s.io/external-dns, whose module graph does not resolve here
// (a dependency of one of its dependencies is gone from the proxy), so
// the objects are written unstructured.
var DNSEndpoints = schema.GroupVersionResource{Group: "externaldns.k8s.io", Version: "v1alpha1", Resource: "dnsendpoints"}

// ManagedByLabel marks the DNSEndpoint objects the platform writes.
const ManagedByLabel = "app.kubernetes.io/managed-by"

// ExternalDNS writes a DNSEndpoint object per name into a namespace of
// the host cluster, for an external-dns the admin runs there with
// `--source=crd`. The object is named after the host name (a valid
// object name); its endpoints are the name's A and AAAA records.
type ExternalDNS struct {
	Client    dynamic.Interface
	Namespace string
	TTL       int64
}

func (e *ExternalDNS) resource() dynamic.ResourceInterface {
	return e.Client.Resource(DNSEndpoints).Namespace(e.Namespace)
}

// Lookup reads the addresses name's object holds.
func (e *ExternalDNS) Lookup(ctx context.Context, name string) ([]netip.Addr, error) {
	obj, err := e.resource().Get(ctx, name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read DNSEndpoint %s/%s: %w", e.Namespace, name, err)
	}
	eps, _, _ := unstructured.NestedSlice(obj.Object, "spec", "endpoints")
	var out []netip.Addr
	for _, ep := range eps {
		m, ok := ep.(map[string]any)
		if !ok || m["dnsName"] != name || (m["recordType"] != "A" && m["recordType"] != "AAAA") {
			continue
		}
		targets, _, _ := unstructured.NestedStringSlice(m, "targets")
		for _, t := range targets {
			if a, err := netip.ParseAddr(t); err == nil {
				out = append(out, a.Unmap())
			}
		}
	}
	return sortAddrs(out), nil
}

// Set creates or replaces name's object.
func (e *ExternalDNS) Set(ctx context.Context, name string, addrs []netip.Addr) error {
	var v4, v6 []any
	for _, a := range addrs {
		if a.Is4() {
			v4 = append(v4, a.String())
		} else {
			v6 = append(v6, a.String())
		}
	}
	var eps []any
	for _, rec := range []struct {
		typ     string
		targets []any
	}{{"A", v4}, {"AAAA", v6}} {
		if len(rec.targets) > 0 {
			eps = append(eps, map[string]any{"dnsName": name, "recordType": rec.typ, "targets": rec.targets, "recordTTL": e.TTL})
		}
	}
	return e.write(ctx, name, eps)
}

// write creates or replaces name's object with endpoints.
func (e *ExternalDNS) write(ctx context.Context, name string, eps []any) error {
	obj := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": DNSEndpoints.GroupVersion().String(),
		"kind":       "DNSEndpoint",
		"metadata": map[string]any{
			"name": name, "namespace": e.Namespace,
			"labels": map[string]any{ManagedByLabel: "kubebyon"},
		},
		"spec": map[string]any{"endpoints": eps},
	}}
	cur, err := e.resource().Get(ctx, name, metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
		_, err := e.resource().Create(ctx, obj, metav1.CreateOptions{})
		if apierrors.IsNotFound(err) {
			// The namespace is not there yet: the platform makes it.
			if err := e.namespace(ctx); err != nil {
				return err
			}
			_, err = e.resource().Create(ctx, obj, metav1.CreateOptions{})
		}
		if err != nil {
			return fmt.Errorf("create DNSEndpoint %s/%s: %w", e.Namespace, name, err)
		}
		return nil
	case err != nil:
		return fmt.Errorf("read DNSEndpoint %s/%s: %w", e.Namespace, name, err)
	}
	obj.SetResourceVersion(cur.GetResourceVersion())
	if _, err := e.resource().Update(ctx, obj, metav1.UpdateOptions{}); err != nil {
		return fmt.Errorf("update DNSEndpoint %s/%s: %w", e.Namespace, name, err)
	}
	return nil
}

var namespaces = schema.GroupVersionResource{Version: "v1", Resource: "namespaces"}

// namespace creates the objects' namespace.
func (e *ExternalDNS) namespace(ctx context.Context) error {
	ns := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "v1", "kind": "Namespace",
		"metadata": map[string]any{"name": e.Namespace, "labels": map[string]any{ManagedByLabel: "kubebyon"}},
	}}
	_, err := e.Client.Resource(namespaces).Create(ctx, ns, metav1.CreateOptions{})
	if err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("create namespace %s: %w", e.Namespace, err)
	}
	return nil
}

// Remove deletes name's object.
func (e *ExternalDNS) Remove(ctx context.Context, name string) error {
	err := e.resource().Delete(ctx, name, metav1.DeleteOptions{})
	if err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("delete DNSEndpoint %s/%s: %w", e.Namespace, name, err)
	}
	return nil
}

// writeVerbs are what the platform does to its DNSEndpoint objects.
var writeVerbs = []string{"get", "create", "update", "delete"}

var accessReviews = schema.GroupVersionResource{Group: "authorization.k8s.io", Version: "v1", Resource: "selfsubjectaccessreviews"}

// Check lists the namespace's objects and asks the host cluster
// (SelfSubjectAccessReviews) whether the platform may write them: it tells
// whether the host answers, serves the DNSEndpoint resource (external-dns's
// CRD is installed) and lets the platform do there what it does.
func (e *ExternalDNS) Check(ctx context.Context) error {
	if _, err := e.resource().List(ctx, metav1.ListOptions{Limit: 1}); err != nil {
		if apierrors.IsNotFound(err) {
			return fmt.Errorf("the host cluster does not serve DNSEndpoint objects: install external-dns's CRD (dnsendpoints.externaldns.k8s.io): %w", err)
		}
		return fmt.Errorf("list DNSEndpoint objects in %s: %w", e.Namespace, err)
	}
	var denied []string
	for _, verb := range writeVerbs {
		review := &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": "authorization.k8s.io/v1", "kind": "SelfSubjectAccessReview",
			"spec": map[string]any{"resourceAttributes": map[string]any{
				"namespace": e.Namespace, "verb": verb, "group": DNSEndpoints.Group, "resource": DNSEndpoints.Resource,
			}},
		}}
		got, err := e.Client.Resource(accessReviews).Create(ctx, review, metav1.CreateOptions{})
		if err != nil {
			return fmt.Errorf("ask whether the platform may %s DNSEndpoint objects: %w", verb, err)
		}
		if allowed, _, _ := unstructured.NestedBool(got.Object, "status", "allowed"); !allowed {
			denied = append(denied, verb)
		}
	}
	if len(denied) > 0 {
		return fmt.Errorf("the platform's credentials may not %s DNSEndpoint objects in namespace %s: grant them in a Role there", strings.Join(denied, ", "), e.Namespace)
	}
	return nil
}
