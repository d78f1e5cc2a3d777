package ingress

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"net/netip"
	"slices"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
)

// The platform edge's objects on the host cluster: one shared Gateway in
// EdgeNamespace, and in each edge-mode cluster's host namespace a Service
// without selector (EdgeService) whose EndpointSlice holds the tenant's
// controller pods, an HTTPRoute per bound host name, and a TLSRoute per
// host name outside the apps base domain (TLS passed through to the
// tenant's own certificate).
const (
	EdgeNamespace = "kubebyon-edge"
	GatewayName   = "kubebyon"
	// WildcardSecret holds the certificate of *.<apps base domain> the
	// Gateway terminates TLS with.
	WildcardSecret = "kubebyon-apps-wildcard"
	EdgeService    = "kubebyon-ingress"
	// The Gateway's listeners.
	ListenerHTTP  = "http"
	ListenerHTTPS = "https"
	ListenerTLS   = "tls"
	// edgeComponent labels the per-cluster objects.
	edgeComponentLabel = "kubebyon.io/component"
	edgeComponent      = "edge-route"
)

var (
	gateways       = schema.GroupVersionResource{Group: "gateway.networking.k8s.io", Version: "v1", Resource: "gateways"}
	httpRoutes     = schema.GroupVersionResource{Group: "gateway.networking.k8s.io", Version: "v1", Resource: "httproutes"}
	tlsRoutes      = schema.GroupVersionResource{Group: "gateway.networking.k8s.io", Version: "v1", Resource: "tlsroutes"}
	services       = schema.GroupVersionResource{Version: "v1", Resource: "services"}
	endpointSlices = schema.GroupVersionResource{Group: "discovery.k8s.io", Version: "v1", Resource: "endpointslices"}
	namespacesGVR  = schema.GroupVersionResource{Version: "v1", Resource: "namespaces"}
)

// EnsureGateway applies the shared Gateway of class, in EdgeNamespace
// (made if need be): listener http on 80 for every route (ACME HTTP-01
// and redirects), https on 443 for *.<appsDomain> terminating TLS with
// WildcardSecret, and tls on 443 passing TLS through for the tenants' own
// host names. Routes may attach from any namespace.
func EnsureGateway(ctx context.Context, dyn dynamic.Interface, class, appsDomain string) error {
	ns := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "v1", "kind": "Namespace",
		"metadata": map[string]any{"name": EdgeNamespace, "labels": map[string]any{ManagedByLabel: "kubebyon"}},
	}}
	if _, err := dyn.Resource(namespacesGVR).Create(ctx, ns, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("create namespace %s: %w", EdgeNamespace, err)
	}
	all := map[string]any{"namespaces": map[string]any{"from": "All"}}
	gw := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "gateway.networking.k8s.io/v1", "kind": "Gateway",
		"metadata": map[string]any{"name": GatewayName, "namespace": EdgeNamespace, "labels": map[string]any{ManagedByLabel: "kubebyon"}},
		"spec": map[string]any{
			"gatewayClassName": class,
			"listeners": []any{
				map[string]any{"name": ListenerHTTP, "port": int64(80), "protocol": "HTTP", "allowedRoutes": all},
				map[string]any{
					"name": ListenerHTTPS, "port": int64(443), "protocol": "HTTPS", "hostname": "*." + appsDomain,
					"tls":           map[string]any{"mode": "Terminate", "certificateRefs": []any{map[string]any{"kind": "Secret", "name": WildcardSecret}}},
					"allowedRoutes": all,
				},
				map[string]any{
					"name": ListenerTLS, "port": int64(443), "protocol": "TLS",
					"tls":           map[string]any{"mode": "Passthrough"},
					"allowedRoutes": map[string]any{"namespaces": map[string]any{"from": "All"}, "kinds": []any{map[string]any{"kind": "TLSRoute"}}},
				},
			},
		},
	}}
	if _, err := dyn.Resource(gateways).Namespace(EdgeNamespace).Apply(ctx, GatewayName, gw, metav1.ApplyOptions{FieldManager: fieldManager, Force: true}); err != nil {
		return fmt.Errorf("apply Gateway %s/%s: %w", EdgeNamespace, GatewayName, err)
	}
	return nil
}

// EdgeHost is a host name the platform edge routes for a cluster; Apps
// says it lies under the apps base domain (the Gateway terminates its
// TLS), else TLS is passed through to the tenant.
type EdgeHost struct {
	Name string
	Apps bool
}

// SyncEdgeRoutes makes a cluster's host namespace ns route hosts through
// the shared Gateway to pods: EdgeService and its EndpointSlices (one per
// address family; pods are the tenant controller's Ready pod IPs), an
// HTTPRoute per host (listener http, and https for an apps host) to port
// 80, a TLSRoute per other host (listener tls) to port 443; the routes
// and slices are owned by the Service. The platform's routes for hosts no
// longer given are removed.
func SyncEdgeRoutes(ctx context.Context, dyn dynamic.Interface, ns string, hosts []EdgeHost, pods []netip.Addr) error {
	svc := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "v1", "kind": "Service",
		"metadata": map[string]any{"name": EdgeService, "namespace": ns, "labels": edgeLabels()},
		"spec": map[string]any{"ports": []any{
			map[string]any{"name": "http", "port": int64(80), "targetPort": int64(80), "protocol": "TCP"},
			map[string]any{"name": "https", "port": int64(443), "targetPort": int64(443), "protocol": "TCP"},
		}},
	}}
	applied, err := dyn.Resource(services).Namespace(ns).Apply(ctx, EdgeService, svc, metav1.ApplyOptions{FieldManager: fieldManager, Force: true})
	if err != nil {
		return fmt.Errorf("apply Service %s/%s: %w", ns, EdgeService, err)
	}
	owner := []any{map[string]any{"apiVersion": "v1", "kind": "Service", "name": EdgeService, "uid": string(applied.GetUID())}}
	if err := syncSlices(ctx, dyn, ns, owner, pods); err != nil {
		return err
	}
	want := map[string]bool{}
	for _, h := range hosts {
		name := edgeRouteName(h.Name)
		want["HTTPRoute/"+name] = true
		parents := []any{gatewayParent(ListenerHTTP)}
		if h.Apps {
			parents = append(parents, gatewayParent(ListenerHTTPS))
		}
		if err := applyRoute(ctx, dyn, httpRoutes, "HTTPRoute", ns, name, h.Name, owner, parents, 80); err != nil {
			return err
		}
		if !h.Apps {
			want["TLSRoute/"+name] = true
			if err := applyRoute(ctx, dyn, tlsRoutes, "TLSRoute", ns, name, h.Name, owner, []any{gatewayParent(ListenerTLS)}, 443); err != nil {
				return err
			}
		}
	}
	for kind, gvr := range map[string]schema.GroupVersionResource{"HTTPRoute": httpRoutes, "TLSRoute": tlsRoutes} {
		if err := deleteOurs(ctx, dyn, gvr, ns, edgeSelector, func(name string) bool { return want[kind+"/"+name] }); err != nil {
			return err
		}
	}
	return nil
}

// RemoveEdgeRoutes deletes what SyncEdgeRoutes made in ns.
func RemoveEdgeRoutes(ctx context.Context, dyn dynamic.Interface, ns string) error {
	for _, gvr := range []schema.GroupVersionResource{httpRoutes, tlsRoutes, endpointSlices} {
		if err := deleteOurs(ctx, dyn, gvr, ns, edgeSelector, func(string) bool { return false }); err != nil {
			return err
		}
	}
	err := dyn.Resource(services).Namespace(ns).Delete(ctx, EdgeService, metav1.DeleteOptions{})
	if err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("delete Service %s/%s: %w", ns, EdgeService, err)
	}
	return nil
}

func edgeLabels() map[string]any {
	return map[string]any{ManagedByLabel: "kubebyon", edgeComponentLabel: edgeComponent}
}

// edgeRouteName is a host's routes' name: readable, unique by a hash.
func edgeRouteName(host string) string {
	sum := sha256.Sum256([]byte(host))
	base := strings.ReplaceAll(host, ".", "-")
	if len(base) > 40 {
		base = base[:40]
	}
	return "host-" + strings.Trim(base, "-") + "-" + hex.EncodeToString(sum[:4])
}

func gatewayParent(section string) any {
	return map[string]any{
		"group": "gateway.networking.k8s.io", "kind": "Gateway",
		"namespace": EdgeNamespace, "name": GatewayName, "sectionName": section,
	}
}

func applyRoute(ctx context.Context, dyn dynamic.Interface, gvr schema.GroupVersionResource, kind, ns, name, host string, owner, parents []any, port int64) error {
	obj := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "gateway.networking.k8s.io/v1", "kind": kind,
		"metadata": map[string]any{
			"name": name, "namespace": ns, "labels": edgeLabels(),
			"annotations": map[string]any{HostnameAnnotation: host}, "ownerReferences": owner,
		},
		"spec": map[string]any{
			"parentRefs": parents,
			"hostnames":  []any{host},
			"rules":      []any{map[string]any{"backendRefs": []any{map[string]any{"name": EdgeService, "port": port}}}},
		},
	}}
	if _, err := dyn.Resource(gvr).Namespace(ns).Apply(ctx, name, obj, metav1.ApplyOptions{FieldManager: fieldManager, Force: true}); err != nil {
		return fmt.Errorf("apply %s %s/%s: %w", kind, ns, name, err)
	}
	return nil
}

// syncSlices keeps one EndpointSlice per address family of pods (none
// for a family without pods).
func syncSlices(ctx context.Context, dyn dynamic.Interface, ns string, owner []any, pods []netip.Addr) error {
	byFamily := map[string][]any{}
	sorted := slices.Clone(pods)
	slices.SortFunc(sorted, func(a, b netip.Addr) int { return a.Compare(b) })
	for _, p := range slices.Compact(sorted) {
		family := "IPv4"
		if p.Is6() && !p.Is4In6() {
			family = "IPv6"
		}
		byFamily[family] = append(byFamily[family], map[string]any{
			"addresses": []any{p.Unmap().String()}, "conditions": map[string]any{"ready": true},
		})
	}
	want := map[string]bool{}
	for family, eps := range byFamily {
		name := EdgeService + "-" + strings.ToLower(family)
		want[name] = true
		labels := edgeLabels()
		labels["kubernetes.io/service-name"] = EdgeService
		labels["endpointslice.kubernetes.io/managed-by"] = "kubebyon.io"
		obj := &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": "discovery.k8s.io/v1", "kind": "EndpointSlice",
			"metadata":    map[string]any{"name": name, "namespace": ns, "labels": labels, "ownerReferences": owner},
			"addressType": family,
			"endpoints":   eps,
			"ports": []any{
				map[string]any{"name": "http", "port": int64(80), "protocol": "TCP"},
				map[string]any{"name": "https", "port": int64(443), "protocol": "TCP"},
			},
		}}
		if _, err := dyn.Resource(endpointSlices).Namespace(ns).Apply(ctx, name, obj, metav1.ApplyOptions{FieldManager: fieldManager, Force: true}); err != nil {
			return fmt.Errorf("apply EndpointSlice %s/%s: %w", ns, name, err)
		}
	}
	return deleteOurs(ctx, dyn, endpointSlices, ns, edgeSelector, func(name string) bool { return want[name] })
}

// edgeSelector selects the platform's edge objects.
const edgeSelector = edgeComponentLabel + "=" + edgeComponent

// deleteOurs deletes the platform's objects of gvr in ns (those selector
// selects) that keep does not keep.
func deleteOurs(ctx context.Context, dyn dynamic.Interface, gvr schema.GroupVersionResource, ns, selector string, keep func(string) bool) error {
	list, err := dyn.Resource(gvr).Namespace(ns).List(ctx, metav1.ListOptions{LabelSelector: selector})
	if err != nil {
		return fmt.Errorf("list %s in %s: %w", gvr.Resource, ns, err)
	}
	for _, o := range list.Items {
		if keep(o.GetName()) {
			continue
		}
		if err := dyn.Resource(gvr).Namespace(ns).Delete(ctx, o.GetName(), metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
			return fmt.Errorf("delete %s %s/%s: %w", gvr.Resource, ns, o.GetName(), err)
		}
	}
	return nil
}

// EdgeCondition is a condition the Gateway's implementation wrote on the
// Gateway, one of its listeners, or a route.
type EdgeCondition struct {
	Type, Status, Reason, Message string
}

// edgeConditionTypes are the conditions that say all is well when True
// (Gateway API's positive-polarity ones); the others (Conflicted,
// PartiallyInvalid, implementation-specific ones) are not summed up.
var edgeConditionTypes = []string{"Accepted", "ResolvedRefs", "Programmed"}

// GatewayState is what the Gateway's implementation wrote on the shared
// Gateway: its IP addresses (status.addresses, sorted as text; none until
// it has some), its conditions, and its listeners' by name.
type GatewayState struct {
	Addresses  []string                   `json:"addresses"`
	Conditions []EdgeCondition            `json:"conditions,omitempty"`
	Listeners  map[string][]EdgeCondition `json:"listeners,omitempty"`
}

// ReadGateway reads the shared Gateway's state.
func ReadGateway(ctx context.Context, dyn dynamic.Interface) (GatewayState, error) {
	gw, err := dyn.Resource(gateways).Namespace(EdgeNamespace).Get(ctx, GatewayName, metav1.GetOptions{})
	if err != nil {
		return GatewayState{}, fmt.Errorf("read Gateway %s/%s: %w", EdgeNamespace, GatewayName, err)
	}
	out := GatewayState{Addresses: []string{}, Listeners: map[string][]EdgeCondition{}}
	raw, _, _ := unstructured.NestedSlice(gw.Object, "status", "addresses")
	for _, a := range raw {
		m, _ := a.(map[string]any)
		typ, _ := m["type"].(string)
		value, _ := m["value"].(string)
		if typ != "" && typ != "IPAddress" {
			continue
		}
		if ip, err := netip.ParseAddr(value); err == nil {
			out.Addresses = append(out.Addresses, ip.String())
		}
	}
	slices.Sort(out.Addresses)
	out.Addresses = slices.Compact(out.Addresses)
	conds, _, _ := unstructured.NestedSlice(gw.Object, "status", "conditions")
	out.Conditions = conditionsOf(conds)
	listeners, _, _ := unstructured.NestedSlice(gw.Object, "status", "listeners")
	for _, l := range listeners {
		m, _ := l.(map[string]any)
		name, _ := m["name"].(string)
		conds, _ := m["conditions"].([]any)
		out.Listeners[name] = conditionsOf(conds)
	}
	return out, nil
}

// EdgeObject is an object that carries a host name's traffic (a route, a
// listener of the Gateway, the Gateway) and its conditions.
type EdgeObject struct {
	Name       string
	Route      bool
	Conditions []EdgeCondition
}

// EdgeHostStatus is what the Gateway's implementation says of a host
// name: the conditions of each of its routes for the shared Gateway, of
// the listeners they attach to and of the Gateway, in that order.
type EdgeHostStatus struct {
	Objects []EdgeObject
}

// OK reports whether the implementation took every route and every
// Accepted, ResolvedRefs and Programmed condition is True.
func (s EdgeHostStatus) OK() bool {
	return s.Word() == "ok"
}

// Word is the host name's status in words: ok, or that the
// implementation has not taken a route yet, or the first Accepted,
// ResolvedRefs or Programmed condition that is not True.
func (s EdgeHostStatus) Word() string {
	routes := 0
	for _, o := range s.Objects {
		if o.Route {
			if len(o.Conditions) == 0 {
				return o.Name + " not accepted by the Gateway yet"
			}
			routes++
		}
	}
	if routes == 0 {
		return "not accepted by the Gateway yet"
	}
	for _, o := range s.Objects {
		for _, c := range o.Conditions {
			if slices.Contains(edgeConditionTypes, c.Type) && c.Status != "True" {
				return fmt.Sprintf("%s %s: %s (%s)", o.Name, c.Type, c.Reason, c.Message)
			}
		}
	}
	return "ok"
}

// EdgeStatus reads the conditions of the platform's routes in ns for the
// shared Gateway, and adds those of the Gateway's listeners they attach to
// and of the Gateway (as gw has them), by host name.
func EdgeStatus(ctx context.Context, dyn dynamic.Interface, ns string, gw GatewayState) (map[string]EdgeHostStatus, error) {
	hosts := map[string]EdgeHostStatus{}
	listeners := map[string][]string{}
	for _, kind := range []string{"HTTPRoute", "TLSRoute"} {
		gvr := httpRoutes
		if kind == "TLSRoute" {
			gvr = tlsRoutes
		}
		list, err := dyn.Resource(gvr).Namespace(ns).List(ctx, metav1.ListOptions{LabelSelector: edgeSelector})
		if err != nil {
			return nil, fmt.Errorf("list %s in %s: %w", gvr.Resource, ns, err)
		}
		for _, r := range list.Items {
			host := r.GetAnnotations()[HostnameAnnotation]
			st := hosts[host]
			obj := EdgeObject{Name: kind, Route: true}
			parents, _, _ := unstructured.NestedSlice(r.Object, "status", "parents")
			for _, p := range parents {
				pm, _ := p.(map[string]any)
				name, _, _ := unstructured.NestedString(pm, "parentRef", "name")
				pns, _, _ := unstructured.NestedString(pm, "parentRef", "namespace")
				if name != GatewayName || pns != EdgeNamespace {
					continue
				}
				raw, _, _ := unstructured.NestedSlice(pm, "conditions")
				obj.Conditions = append(obj.Conditions, conditionsOf(raw)...)
			}
			st.Objects = append(st.Objects, obj)
			refs, _, _ := unstructured.NestedSlice(r.Object, "spec", "parentRefs")
			for _, ref := range refs {
				section, _, _ := unstructured.NestedString(ref.(map[string]any), "sectionName")
				if section != "" && !slices.Contains(listeners[host], section) {
					listeners[host] = append(listeners[host], section)
				}
			}
			hosts[host] = st
		}
	}
	for host, st := range hosts {
		for _, l := range listeners[host] {
			st.Objects = append(st.Objects, EdgeObject{Name: "Gateway listener " + l, Conditions: gw.Listeners[l]})
		}
		st.Objects = append(st.Objects, EdgeObject{Name: "Gateway", Conditions: gw.Conditions})
		hosts[host] = st
	}
	return hosts, nil
}

func conditionsOf(raw []any) []EdgeCondition {
	var out []EdgeCondition
	for _, c := range raw {
		m, _ := c.(map[string]any)
		cond := EdgeCondition{}
		cond.Type, _ = m["type"].(string)
		cond.Status, _ = m["status"].(string)
		cond.Reason, _ = m["reason"].(string)
		cond.Message, _ = m["message"].(string)
		out = append(out, cond)
	}
	return out
}
