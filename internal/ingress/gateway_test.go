package ingress_test

import (
	"context"
	"crypto/rand"
	"net/netip"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"

	"github.com/kubebyon/kubebyon/internal/ingress"
	"github.com/kubebyon/kubebyon/internal/testenv"
)

var (
	gatewaysGVR   = schema.GroupVersionResource{Group: "gateway.networking.k8s.io", Version: "v1", Resource: "gateways"}
	httpRoutesGVR = schema.GroupVersionResource{Group: "gateway.networking.k8s.io", Version: "v1", Resource: "httproutes"}
	tlsRoutesGVR  = schema.GroupVersionResource{Group: "gateway.networking.k8s.io", Version: "v1", Resource: "tlsroutes"}
	servicesGVR   = schema.GroupVersionResource{Version: "v1", Resource: "services"}
	slicesGVR     = schema.GroupVersionResource{Group: "discovery.k8s.io", Version: "v1", Resource: "endpointslices"}
)

// TestEdgeObjects writes the platform edge's objects into a real host
// apiserver with the Gateway API's CRDs: the shared Gateway with its three
// listeners; per cluster a Service without selector, EndpointSlices that
// follow the pods given, an HTTPRoute per host name (both listeners for
// an apps name) and a TLSRoute per other name, all owned by the Service;
// a host name taken out loses its routes; the routes' status as the
// Gateway's implementation writes it is read back per host name; removal
// leaves none of it.
// It runs against the Gateway API's standard and experimental channels
// (the experimental one on an apiserver of its own: the CRDs have the
// same names).
func TestEdgeObjects(t *testing.T) {
	t.Parallel()
	for _, channel := range []string{"standard", "experimental"} {
		t.Run(channel, func(t *testing.T) {
			t.Parallel()
			kube := testenv.HostKube(t)
			if channel == "experimental" {
				kube = testenv.NewKube(t)
			}
			testenv.GatewayAPIChannelCRDs(t, kube.Config, channel)
			testEdgeObjects(t, kube)
		})
	}
}

func testEdgeObjects(t *testing.T, kube *testenv.Kube) {
	ctx := context.Background()
	dyn := dynamic.NewForConfigOrDie(kube.Config)
	ns := "kubebyon-edge-" + strings.ToLower(rand.Text()[:8])
	_, err := kube.Client(t).CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{})
	require.NoError(t, err)

	require.NoError(t, ingress.EnsureGateway(ctx, dyn, "eg", "apps.test"))
	require.NoError(t, ingress.EnsureGateway(ctx, dyn, "eg", "apps.test"), "again: no change")
	gw, err := dyn.Resource(gatewaysGVR).Namespace(ingress.EdgeNamespace).Get(ctx, ingress.GatewayName, metav1.GetOptions{})
	require.NoError(t, err)
	class, _, _ := unstructured.NestedString(gw.Object, "spec", "gatewayClassName")
	require.Equal(t, "eg", class)
	listeners, _, _ := unstructured.NestedSlice(gw.Object, "spec", "listeners")
	require.Len(t, listeners, 3)
	https := listeners[1].(map[string]any)
	require.Equal(t, "*.apps.test", https["hostname"])
	tlsMode, _, _ := unstructured.NestedString(listeners[2].(map[string]any), "tls", "mode")
	require.Equal(t, "Passthrough", tlsMode)

	hosts := []ingress.EdgeHost{{Name: "shop.apps.test", Apps: true}, {Name: "www.example.com"}}
	pods := []netip.Addr{netip.MustParseAddr("10.128.0.5"), netip.MustParseAddr("10.128.1.7")}
	require.NoError(t, ingress.SyncEdgeRoutes(ctx, dyn, ns, hosts, pods))
	svc, err := dyn.Resource(servicesGVR).Namespace(ns).Get(ctx, ingress.EdgeService, metav1.GetOptions{})
	require.NoError(t, err)
	_, hasSelector, _ := unstructured.NestedMap(svc.Object, "spec", "selector")
	require.False(t, hasSelector, "no selector: the platform keeps its endpoints")
	addrs := func() map[string][]string {
		t.Helper()
		list, err := dyn.Resource(slicesGVR).Namespace(ns).List(ctx, metav1.ListOptions{LabelSelector: "kubernetes.io/service-name=" + ingress.EdgeService})
		require.NoError(t, err)
		out := map[string][]string{}
		for _, s := range list.Items {
			require.Equal(t, svc.GetUID(), s.GetOwnerReferences()[0].UID, "owned by the Service")
			family, _, _ := unstructured.NestedString(s.Object, "addressType")
			eps, _, _ := unstructured.NestedSlice(s.Object, "endpoints")
			for _, e := range eps {
				a, _, _ := unstructured.NestedStringSlice(e.(map[string]any), "addresses")
				out[family] = append(out[family], a...)
			}
		}
		return out
	}
	require.Equal(t, map[string][]string{"IPv4": {"10.128.0.5", "10.128.1.7"}}, addrs())
	routes := func(gvr schema.GroupVersionResource) map[string][]string {
		t.Helper()
		list, err := dyn.Resource(gvr).Namespace(ns).List(ctx, metav1.ListOptions{})
		require.NoError(t, err)
		out := map[string][]string{}
		for _, r := range list.Items {
			require.Equal(t, svc.GetUID(), r.GetOwnerReferences()[0].UID, "owned by the Service")
			names, _, _ := unstructured.NestedStringSlice(r.Object, "spec", "hostnames")
			parents, _, _ := unstructured.NestedSlice(r.Object, "spec", "parentRefs")
			var sections []string
			for _, p := range parents {
				sections = append(sections, p.(map[string]any)["sectionName"].(string))
			}
			out[strings.Join(names, ",")] = sections
		}
		return out
	}
	require.Equal(t, map[string][]string{"shop.apps.test": {"http", "https"}, "www.example.com": {"http"}}, routes(httpRoutesGVR))
	require.Equal(t, map[string][]string{"www.example.com": {"tls"}}, routes(tlsRoutesGVR), "the tenant's own name: TLS passed through")

	// Pods come and go; an IPv6 pod gets a slice of its own.
	pods = []netip.Addr{netip.MustParseAddr("10.128.1.7"), netip.MustParseAddr("fd00::7")}
	require.NoError(t, ingress.SyncEdgeRoutes(ctx, dyn, ns, hosts, pods))
	require.Equal(t, map[string][]string{"IPv4": {"10.128.1.7"}, "IPv6": {"fd00::7"}}, addrs())
	require.NoError(t, ingress.SyncEdgeRoutes(ctx, dyn, ns, hosts[:1], nil))
	require.Empty(t, addrs(), "no Ready pod: no endpoints")
	require.Equal(t, map[string][]string{"shop.apps.test": {"http", "https"}}, routes(httpRoutesGVR))
	require.Empty(t, routes(tlsRoutesGVR))

	// The implementation accepts the route, but cannot resolve its backend.
	list, err := dyn.Resource(httpRoutesGVR).Namespace(ns).List(ctx, metav1.ListOptions{})
	require.NoError(t, err)
	r := list.Items[0]
	r.Object["status"] = map[string]any{"parents": []any{map[string]any{
		"parentRef":      map[string]any{"group": "gateway.networking.k8s.io", "kind": "Gateway", "namespace": ingress.EdgeNamespace, "name": ingress.GatewayName, "sectionName": "http"},
		"controllerName": "gateway.envoyproxy.io/gatewayclass-controller",
		"conditions": []any{
			map[string]any{"type": "Accepted", "status": "True", "reason": "Accepted", "message": "Route is accepted", "lastTransitionTime": "2026-12-02T00:00:00Z"},
			map[string]any{"type": "ResolvedRefs", "status": "False", "reason": "BackendNotFound", "message": "no endpoints", "lastTransitionTime": "2026-12-02T00:00:00Z"},
		},
	}}}
	_, err = dyn.Resource(httpRoutesGVR).Namespace(ns).UpdateStatus(ctx, &r, metav1.UpdateOptions{})
	require.NoError(t, err)
	state, err := ingress.ReadGateway(ctx, dyn)
	require.NoError(t, err)
	require.Empty(t, state.Addresses)
	hostStatus, err := ingress.EdgeStatus(ctx, dyn, ns, state)
	require.NoError(t, err)
	st := hostStatus["shop.apps.test"]
	require.False(t, st.OK())
	require.Equal(t, "HTTPRoute ResolvedRefs: BackendNotFound (no endpoints)", st.Word())

	// Resolved; the Gateway's https listener is not programmed (its
	// certificate is missing): the name under the apps base domain, whose
	// route attaches to it, says so.
	r.Object["status"].(map[string]any)["parents"].([]any)[0].(map[string]any)["conditions"].([]any)[1] =
		map[string]any{"type": "ResolvedRefs", "status": "True", "reason": "ResolvedRefs", "message": "", "lastTransitionTime": "2026-12-02T00:00:00Z"}
	got, err := dyn.Resource(httpRoutesGVR).Namespace(ns).Get(ctx, r.GetName(), metav1.GetOptions{})
	require.NoError(t, err)
	r.SetResourceVersion(got.GetResourceVersion())
	_, err = dyn.Resource(httpRoutesGVR).Namespace(ns).UpdateStatus(ctx, &r, metav1.UpdateOptions{})
	require.NoError(t, err)
	gwRes := dyn.Resource(schema.GroupVersionResource{Group: "gateway.networking.k8s.io", Version: "v1", Resource: "gateways"}).Namespace(ingress.EdgeNamespace)
	setGateway := func(httpsProgrammed string) {
		t.Helper()
		obj, err := gwRes.Get(ctx, ingress.GatewayName, metav1.GetOptions{})
		require.NoError(t, err)
		cond := func(typ, status, reason, msg string) any {
			return map[string]any{"type": typ, "status": status, "reason": reason, "message": msg, "lastTransitionTime": "2026-12-02T00:00:00Z"}
		}
		listener := func(name, programmed string) any {
			return map[string]any{"name": name, "attachedRoutes": int64(1), "supportedKinds": []any{map[string]any{"kind": "HTTPRoute"}}, "conditions": []any{
				cond("Accepted", "True", "Accepted", ""),
				// Negative polarity: False is well.
				cond("Conflicted", "False", "NoConflicts", ""),
				cond("Programmed", programmed, map[string]string{"True": "Programmed", "False": "Invalid"}[programmed], "secret kubebyon-apps-wildcard not found"),
			}}
		}
		obj.Object["status"] = map[string]any{
			"addresses":  []any{map[string]any{"type": "IPAddress", "value": "198.51.100.7"}},
			"conditions": []any{cond("Accepted", "True", "Accepted", ""), cond("Programmed", "True", "Programmed", "")},
			"listeners":  []any{listener("http", "True"), listener("https", httpsProgrammed), listener("tls", "True")},
		}
		_, err = gwRes.UpdateStatus(ctx, obj, metav1.UpdateOptions{})
		require.NoError(t, err)
	}
	setGateway("False")
	state, err = ingress.ReadGateway(ctx, dyn)
	require.NoError(t, err)
	require.Equal(t, []string{"198.51.100.7"}, state.Addresses)
	hostStatus, err = ingress.EdgeStatus(ctx, dyn, ns, state)
	require.NoError(t, err)
	st = hostStatus["shop.apps.test"]
	require.False(t, st.OK())
	require.Equal(t, "Gateway listener https Programmed: Invalid (secret kubebyon-apps-wildcard not found)", st.Word())
	setGateway("True")
	state, err = ingress.ReadGateway(ctx, dyn)
	require.NoError(t, err)
	hostStatus, err = ingress.EdgeStatus(ctx, dyn, ns, state)
	require.NoError(t, err)
	st = hostStatus["shop.apps.test"]
	require.True(t, st.OK(), st.Word())
	require.Equal(t, "ok", st.Word())
	require.Equal(t, []string{"HTTPRoute", "Gateway listener http", "Gateway listener https", "Gateway"}, func() []string {
		var out []string
		for _, o := range st.Objects {
			out = append(out, o.Name)
		}
		return out
	}())

	require.NoError(t, ingress.RemoveEdgeRoutes(ctx, dyn, ns))
	require.Empty(t, routes(httpRoutesGVR))
	require.Empty(t, addrs())
	_, err = dyn.Resource(servicesGVR).Namespace(ns).Get(ctx, ingress.EdgeService, metav1.GetOptions{})
	require.Error(t, err, "the Service is gone")
}
