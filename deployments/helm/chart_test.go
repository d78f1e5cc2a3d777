// Package chart_test checks the Helm chart in kubebyon/: it lints, renders
// over a matrix of values into the objects expected, installs into a real
// kube-apiserver, and its service account holds every host permission the
// platform checks for and nothing beyond the host permission table of
// docs/operators/host-cluster.md.
package chart_test

import (
	"bufio"
	"bytes"
	"encoding/json"
	"maps"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"helm.sh/helm/v3/pkg/chart"
	"helm.sh/helm/v3/pkg/chart/loader"
	"helm.sh/helm/v3/pkg/chartutil"
	"helm.sh/helm/v3/pkg/engine"
	"helm.sh/helm/v3/pkg/lint"
	"helm.sh/helm/v3/pkg/lint/support"
	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	policyv1 "k8s.io/api/policy/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/yaml"

	"github.com/kubebyon/kubebyon/internal/testenv"
)

func TestMain(m *testing.M) { testenv.Main(m) }

// chartDir is the chart, beside this file.
const chartDir = "kubebyon"

// testSecretKey is a valid KUBEBYON_SECRET_KEY (32 bytes in base64).
const testSecretKey = "MDEyMzQ1Njc4OWFiY2RlZjAxMjM0NTY3ODlhYmNkZWY="

// requiredValues are the values an install cannot do without.
func requiredValues() map[string]any {
	return map[string]any{
		"baseURL":   "https://kubebyon.example.com",
		"database":  map[string]any{"url": "postgres://kubebyon:pw@db.example.com:5432/kubebyon"},
		"secretKey": map[string]any{"value": testSecretKey},
	}
}

// with returns values with overrides merged in (maps merged deeply).
func with(values map[string]any, overrides map[string]any) map[string]any {
	out := maps.Clone(values)
	for k, v := range overrides {
		if sub, ok := v.(map[string]any); ok {
			if base, ok := out[k].(map[string]any); ok {
				out[k] = with(base, sub)
				continue
			}
		}
		out[k] = v
	}
	return out
}

func loadChart(t *testing.T) *chart.Chart {
	t.Helper()
	ch, err := loader.Load(chartDir)
	require.NoError(t, err)
	return ch
}

// rendered is a chart's output decoded: every object by kind and name.
type rendered struct {
	byKind map[string]map[string]any
	// hooks are the objects Helm runs as hooks, by kind/name.
	hooks map[string]string
}

// object returns the object of kind and name, decoded as T.
func object[T any](t *testing.T, r rendered, kind, name string) T {
	t.Helper()
	obj, ok := r.byKind[kind][name]
	require.True(t, ok, "no %s %s in %v", kind, name, r.names())
	typed, ok := obj.(T)
	require.True(t, ok, "%s %s is %T", kind, name, obj)
	return typed
}

func (r rendered) names() []string {
	var out []string
	for kind, objs := range r.byKind {
		for name := range objs {
			out = append(out, kind+"/"+name)
		}
	}
	sort.Strings(out)
	return out
}

func (r rendered) kinds() []string {
	return slices.Sorted(maps.Keys(r.byKind))
}

// typedKinds are the kinds the chart makes that client-go knows; they are
// decoded strictly (a field Kubernetes does not know fails). The rest
// (HTTPRoute, ServiceMonitor) are kept unstructured.
var typedKinds = map[string]func() any{
	"v1 Secret":                                func() any { return &corev1.Secret{} },
	"v1 ServiceAccount":                        func() any { return &corev1.ServiceAccount{} },
	"v1 Service":                               func() any { return &corev1.Service{} },
	"apps/v1 Deployment":                       func() any { return &appsv1.Deployment{} },
	"apps/v1 DaemonSet":                        func() any { return &appsv1.DaemonSet{} },
	"batch/v1 Job":                             func() any { return &batchv1.Job{} },
	"policy/v1 PodDisruptionBudget":            func() any { return &policyv1.PodDisruptionBudget{} },
	"rbac.authorization.k8s.io/v1 ClusterRole": func() any { return &rbacv1.ClusterRole{} },
	"rbac.authorization.k8s.io/v1 ClusterRoleBinding": func() any { return &rbacv1.ClusterRoleBinding{} },
	"networking.k8s.io/v1 Ingress":                    func() any { return &networkingv1.Ingress{} },
	"networking.k8s.io/v1 NetworkPolicy":              func() any { return &networkingv1.NetworkPolicy{} },
}

// render renders the chart as `helm install` would (release "kb" in
// namespace "kubebyon"), checking the values against the chart.
func render(t *testing.T, values map[string]any) (rendered, error) {
	t.Helper()
	ch := loadChart(t)
	vals, err := chartutil.ToRenderValues(ch, values, chartutil.ReleaseOptions{Name: "kb", Namespace: "kubebyon", IsInstall: true, Revision: 1}, chartutil.DefaultCapabilities)
	if err != nil {
		return rendered{}, err
	}
	files, err := engine.Render(ch, vals)
	if err != nil {
		return rendered{}, err
	}
	r := rendered{byKind: map[string]map[string]any{}, hooks: map[string]string{}}
	for name, text := range files {
		if !strings.HasSuffix(name, ".yaml") {
			continue
		}
		reader := yaml.NewYAMLReader(bufio.NewReader(strings.NewReader(text)))
		for {
			doc, err := reader.Read()
			if err != nil {
				break
			}
			j, err := yaml.ToJSON(doc)
			require.NoError(t, err, name)
			if s := string(bytes.TrimSpace(j)); s == "null" || s == "" {
				continue
			}
			var u unstructured.Unstructured
			require.NoError(t, u.UnmarshalJSON(j), name)
			kind := u.GetAPIVersion() + " " + u.GetKind()
			var obj any = &u
			if mk, ok := typedKinds[kind]; ok {
				obj = mk()
				dec := json.NewDecoder(bytes.NewReader(j))
				dec.DisallowUnknownFields()
				require.NoError(t, dec.Decode(obj), "%s in %s", kind, name)
			}
			if r.byKind[u.GetKind()] == nil {
				r.byKind[u.GetKind()] = map[string]any{}
			}
			_, twice := r.byKind[u.GetKind()][u.GetName()]
			require.False(t, twice, "%s %s twice", u.GetKind(), u.GetName())
			r.byKind[u.GetKind()][u.GetName()] = obj
			if hook := u.GetAnnotations()["helm.sh/hook"]; hook != "" {
				r.hooks[u.GetKind()+"/"+u.GetName()] = hook
			}
		}
	}
	return r, nil
}

func mustRender(t *testing.T, values map[string]any) rendered {
	t.Helper()
	r, err := render(t, values)
	require.NoError(t, err)
	return r
}

// TestChartLints runs Helm's linter over the chart with the values a
// real install gives, and with the options on.
func TestChartLints(t *testing.T) {
	t.Parallel()
	for name, values := range map[string]map[string]any{
		"required values": requiredValues(),
		"everything on": with(requiredValues(), map[string]any{
			"edge":           map[string]any{"enabled": true},
			"routeAgent":     map[string]any{"enabled": true},
			"edgeToken":      map[string]any{"value": "kbe_token"},
			"ingress":        map[string]any{"enabled": true},
			"httpRoute":      map[string]any{"enabled": true, "parentRefs": []any{map[string]any{"name": "public"}}},
			"serviceMonitor": map[string]any{"enabled": true},
		}),
	} {
		linter := lint.AllWithKubeVersion(chartDir, values, "kubebyon", nil)
		for _, msg := range linter.Messages {
			require.LessOrEqual(t, msg.Severity, support.InfoSev, "%s: %s", name, msg)
		}
	}
}

// TestChartNeedsDatabaseKeyAndToken checks that what the chart cannot
// make up is asked for, by name, and that values.schema.json refuses
// values the chart does not know.
func TestChartNeedsDatabaseKeyAndToken(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name   string
		values map[string]any
		want   string
	}{
		{"no database", with(requiredValues(), map[string]any{"database": map[string]any{"url": ""}}), "database.url or database.existingSecret is required"},
		{"no secret key", with(requiredValues(), map[string]any{"secretKey": map[string]any{"value": ""}}), "secretKey.value or secretKey.existingSecret is required"},
		{"no base URL", with(requiredValues(), map[string]any{"baseURL": ""}), "baseURL is required"},
		{"edge without token", with(requiredValues(), map[string]any{"edge": map[string]any{"enabled": true}}), "edgeToken.value or edgeToken.existingSecret is required"},
		{"route agent without token", with(requiredValues(), map[string]any{"routeAgent": map[string]any{"enabled": true}}), "edgeToken.value or edgeToken.existingSecret is required"},
		{"a misspelled value", with(requiredValues(), map[string]any{"api": map[string]any{"replica": 3}}), "additional properties 'replica' not allowed"},
		{"a bad log level", with(requiredValues(), map[string]any{"logLevel": "verbose"}), "at '/logLevel': value must be one of"},
		{"httproute without gateway", with(requiredValues(), map[string]any{"httpRoute": map[string]any{"enabled": true}}), "httpRoute.parentRefs is required"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			_, err := render(t, tc.values)
			require.ErrorContains(t, err, tc.want)
		})
	}
}

// podTemplates are the chart's pods, by workload.
func podTemplates(r rendered) map[string]corev1.PodSpec {
	out := map[string]corev1.PodSpec{}
	for name, obj := range r.byKind["Deployment"] {
		out["Deployment/"+name] = obj.(*appsv1.Deployment).Spec.Template.Spec
	}
	for name, obj := range r.byKind["DaemonSet"] {
		out["DaemonSet/"+name] = obj.(*appsv1.DaemonSet).Spec.Template.Spec
	}
	for name, obj := range r.byKind["Job"] {
		out["Job/"+name] = obj.(*batchv1.Job).Spec.Template.Spec
	}
	return out
}

// rootWorkloads are the only workloads that may run on the host network,
// and then as root with one capability: the route agent (NET_ADMIN,
// routes on the node) and an edge on the host network (NET_BIND_SERVICE,
// the node's port 443). The route agent is always on the host network.
var rootWorkloads = map[string]corev1.Capability{
	"DaemonSet/kb-kubebyon-route-agent": "NET_ADMIN",
	"Deployment/kb-kubebyon-edge":       "NET_BIND_SERVICE",
}

// requireLockedDown checks every container's security context and
// resources: no privilege escalation, a read-only root filesystem, every
// capability dropped, non-root (uid 10001, the image's user) but for
// rootWorkloads, and requests; and that writable paths are emptyDirs.
func requireLockedDown(t *testing.T, r rendered) {
	t.Helper()
	for name, pod := range podTemplates(r) {
		require.NotEmpty(t, pod.Containers, name)
		require.Empty(t, pod.InitContainers, name)
		require.False(t, pod.HostPID || pod.HostIPC, name)
		for _, c := range pod.Containers {
			where := name + " " + c.Name
			sc := c.SecurityContext
			require.NotNil(t, sc, where)
			require.NotNil(t, sc.AllowPrivilegeEscalation, where)
			require.False(t, *sc.AllowPrivilegeEscalation, where)
			require.NotNil(t, sc.ReadOnlyRootFilesystem, where)
			require.True(t, *sc.ReadOnlyRootFilesystem, where)
			require.Nil(t, sc.Privileged, where)
			require.Equal(t, []corev1.Capability{"ALL"}, sc.Capabilities.Drop, where)
			require.Equal(t, corev1.SeccompProfileTypeRuntimeDefault, sc.SeccompProfile.Type, where)
			if pod.HostNetwork {
				capability, ok := rootWorkloads[name]
				require.True(t, ok, "%s: only the route agent and the edge go on the host network", where)
				require.Equal(t, int64(0), *sc.RunAsUser, "%s: an added capability takes effect for root only", where)
				require.False(t, *sc.RunAsNonRoot, where)
				require.Equal(t, []corev1.Capability{capability}, sc.Capabilities.Add, where)
			} else {
				require.True(t, *sc.RunAsNonRoot, where)
				require.Equal(t, int64(10001), *sc.RunAsUser, where)
				require.Empty(t, sc.Capabilities.Add, where)
				require.True(t, *pod.SecurityContext.RunAsNonRoot, where)
			}
			for _, res := range []corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceMemory} {
				require.Contains(t, c.Resources.Requests, res, where)
			}
			require.Contains(t, c.Resources.Limits, corev1.ResourceMemory, where)
			for _, m := range c.VolumeMounts {
				require.False(t, m.ReadOnly, where)
				i := slices.IndexFunc(pod.Volumes, func(v corev1.Volume) bool { return v.Name == m.Name })
				require.GreaterOrEqual(t, i, 0, where)
				require.NotNil(t, pod.Volumes[i].EmptyDir, "%s: %s is scratch space", where, m.MountPath)
			}
		}
	}
}

func env(c corev1.Container) map[string]corev1.EnvVar {
	out := map[string]corev1.EnvVar{}
	for _, e := range c.Env {
		out[e.Name] = e
	}
	return out
}

func mountPaths(c corev1.Container) []string {
	var out []string
	for _, m := range c.VolumeMounts {
		out = append(out, m.MountPath)
	}
	return out
}

// TestChartRendersMatrix renders the chart over the values people set and
// checks the objects.
func TestChartRendersMatrix(t *testing.T) {
	t.Parallel()
	base := []string{"ClusterRole", "ClusterRoleBinding", "Deployment", "Job", "NetworkPolicy", "PodDisruptionBudget", "Secret", "Service", "ServiceAccount"}
	edgeOn := map[string]any{
		"edge":      map[string]any{"enabled": true},
		"edgeToken": map[string]any{"existingSecret": "edge-token", "existingSecretKey": "token"},
	}
	for _, tc := range []struct {
		name   string
		values map[string]any
		kinds  []string
		check  func(t *testing.T, r rendered)
	}{
		{
			name: "defaults", values: requiredValues(), kinds: base,
			check: func(t *testing.T, r rendered) {
				s := object[*corev1.Secret](t, r, "Secret", "kb-kubebyon")
				require.Equal(t, "postgres://kubebyon:pw@db.example.com:5432/kubebyon", string(s.Data["database-url"]))
				require.Equal(t, testSecretKey, string(s.Data["secret-key"]))
				require.Len(t, s.Data, 2)
				require.Equal(t, int32(2), *object[*appsv1.Deployment](t, r, "Deployment", "kb-kubebyon-api").Spec.Replicas)
				require.Equal(t, int32(2), *object[*appsv1.Deployment](t, r, "Deployment", "kb-kubebyon-worker").Spec.Replicas)
				require.NotContains(t, r.byKind["Deployment"], "kb-kubebyon-edge", "the edge waits for its token")
			},
		},
		{
			name: "existing secrets",
			values: with(requiredValues(), map[string]any{
				"database":  map[string]any{"url": "", "existingSecret": "pg-app"},
				"secretKey": map[string]any{"value": "", "existingSecret": "kubebyon-key", "existingSecretKey": "key"},
			}),
			kinds: slices.DeleteFunc(slices.Clone(base), func(k string) bool { return k == "Secret" }),
			check: func(t *testing.T, r rendered) {
				for _, name := range []string{"kb-kubebyon-api", "kb-kubebyon-worker"} {
					e := env(object[*appsv1.Deployment](t, r, "Deployment", name).Spec.Template.Spec.Containers[0])
					require.Equal(t, corev1.SecretKeySelector{LocalObjectReference: corev1.LocalObjectReference{Name: "pg-app"}, Key: "uri"}, *e["DATABASE_URL"].ValueFrom.SecretKeyRef, "CloudNativePG's app Secret")
					require.Equal(t, corev1.SecretKeySelector{LocalObjectReference: corev1.LocalObjectReference{Name: "kubebyon-key"}, Key: "key"}, *e["KUBEBYON_SECRET_KEY"].ValueFrom.SecretKeyRef)
				}
				e := env(object[*batchv1.Job](t, r, "Job", "kb-kubebyon-migrate").Spec.Template.Spec.Containers[0])
				require.Equal(t, "pg-app", e["DATABASE_URL"].ValueFrom.SecretKeyRef.Name)
			},
		},
		{
			name: "ingress on", values: with(requiredValues(), map[string]any{"ingress": map[string]any{
				"enabled": true, "className": "nginx", "host": "console.example.com",
				"tls": []any{map[string]any{"secretName": "console-tls", "hosts": []any{"console.example.com"}}},
			}}),
			kinds: append(slices.Clone(base), "Ingress"),
			check: func(t *testing.T, r rendered) {
				ing := object[*networkingv1.Ingress](t, r, "Ingress", "kb-kubebyon")
				require.Equal(t, "nginx", *ing.Spec.IngressClassName)
				require.Equal(t, "console.example.com", ing.Spec.Rules[0].Host)
				backend := ing.Spec.Rules[0].HTTP.Paths[0].Backend.Service
				require.Equal(t, "kb-kubebyon-api", backend.Name)
				require.Equal(t, "http", backend.Port.Name)
				require.Equal(t, "console-tls", ing.Spec.TLS[0].SecretName)
			},
		},
		{
			name: "httproute on", values: with(requiredValues(), map[string]any{"httpRoute": map[string]any{
				"enabled": true, "parentRefs": []any{map[string]any{"name": "public", "namespace": "gateways"}},
			}}),
			kinds: append(slices.Clone(base), "HTTPRoute"),
			check: func(t *testing.T, r rendered) {
				route := object[*unstructured.Unstructured](t, r, "HTTPRoute", "kb-kubebyon")
				require.Equal(t, "gateway.networking.k8s.io/v1", route.GetAPIVersion())
				parents, _, _ := unstructured.NestedSlice(route.Object, "spec", "parentRefs")
				require.Equal(t, []any{map[string]any{"name": "public", "namespace": "gateways"}}, parents)
				rules, _, _ := unstructured.NestedSlice(route.Object, "spec", "rules")
				backends := rules[0].(map[string]any)["backendRefs"].([]any)
				require.Equal(t, map[string]any{"name": "kb-kubebyon-api", "port": int64(8080)}, backends[0])
			},
		},
		{
			name: "servicemonitor on", values: with(requiredValues(), map[string]any{"serviceMonitor": map[string]any{"enabled": true, "labels": map[string]any{"release": "prometheus"}}}),
			kinds: append(slices.Clone(base), "ServiceMonitor"),
			check: func(t *testing.T, r rendered) {
				sm := object[*unstructured.Unstructured](t, r, "ServiceMonitor", "kb-kubebyon")
				require.Equal(t, "prometheus", sm.GetLabels()["release"])
				sel, _, _ := unstructured.NestedStringMap(sm.Object, "spec", "selector", "matchLabels")
				endpoints, _, _ := unstructured.NestedSlice(sm.Object, "spec", "endpoints")
				require.Equal(t, "metrics", endpoints[0].(map[string]any)["port"])
				// It scrapes the API's and the workers' metrics ports.
				var scraped []string
				for name, obj := range r.byKind["Service"] {
					svc := obj.(*corev1.Service)
					matches := true
					for k, v := range sel {
						matches = matches && svc.Labels[k] == v
					}
					if matches {
						require.True(t, slices.ContainsFunc(svc.Spec.Ports, func(p corev1.ServicePort) bool { return p.Name == "metrics" && p.Port == 9090 }), name)
						scraped = append(scraped, name)
					}
				}
				sort.Strings(scraped)
				require.Equal(t, []string{"kb-kubebyon-api", "kb-kubebyon-worker"}, scraped)
			},
		},
		{
			name: "edge behind a load balancer", values: with(requiredValues(), edgeOn),
			kinds: base,
			check: func(t *testing.T, r rendered) {
				d := object[*appsv1.Deployment](t, r, "Deployment", "kb-kubebyon-edge")
				pod := d.Spec.Template.Spec
				require.False(t, pod.HostNetwork)
				require.False(t, *pod.AutomountServiceAccountToken, "the edge needs no Kubernetes API")
				c := pod.Containers[0]
				require.Equal(t, []string{"edge"}, c.Args)
				e := env(c)
				require.Equal(t, "http://kb-kubebyon-api.kubebyon.svc:8080", e["KUBEBYON_EDGE_PLATFORM_URL"].Value)
				require.Equal(t, "edge-token", e["KUBEBYON_EDGE_TOKEN"].ValueFrom.SecretKeyRef.Name)
				require.Equal(t, ":8443", e["KUBEBYON_EDGE_API_LISTEN"].Value)
				require.Equal(t, intstr.FromString("api"), c.ReadinessProbe.TCPSocket.Port)
				require.Contains(t, mountPaths(c), "/var/lib/kubebyon-edge")
				svc := object[*corev1.Service](t, r, "Service", "kb-kubebyon-edge")
				require.Equal(t, corev1.ServiceTypeLoadBalancer, svc.Spec.Type)
				require.Equal(t, []corev1.ServicePort{
					{Name: "api", Port: 443, TargetPort: intstr.FromString("api")},
					{Name: "konnectivity", Port: 8132, TargetPort: intstr.FromString("konnectivity")},
				}, svc.Spec.Ports)
				np := object[*networkingv1.NetworkPolicy](t, r, "NetworkPolicy", "kb-kubebyon-edge")
				require.Len(t, np.Spec.Ingress[0].Ports, 2)
				require.Empty(t, np.Spec.Ingress[0].From, "the public entry takes connections from anywhere")
				object[*policyv1.PodDisruptionBudget](t, r, "PodDisruptionBudget", "kb-kubebyon-edge")
			},
		},
		{
			name: "edge on the host network", values: with(with(requiredValues(), edgeOn), map[string]any{"edge": map[string]any{"hostNetwork": true}}),
			kinds: base,
			check: func(t *testing.T, r rendered) {
				pod := object[*appsv1.Deployment](t, r, "Deployment", "kb-kubebyon-edge").Spec.Template.Spec
				require.True(t, pod.HostNetwork)
				require.Equal(t, corev1.DNSClusterFirstWithHostNet, pod.DNSPolicy)
				require.NotNil(t, pod.Affinity.PodAntiAffinity.RequiredDuringSchedulingIgnoredDuringExecution, "one edge per node: they share its ports")
				e := env(pod.Containers[0])
				require.Equal(t, ":443", e["KUBEBYON_EDGE_API_LISTEN"].Value)
				require.Equal(t, int32(443), pod.Containers[0].Ports[0].ContainerPort)
				require.NotContains(t, r.byKind["Service"], "kb-kubebyon-edge")
				require.NotContains(t, r.byKind["NetworkPolicy"], "kb-kubebyon-edge", "policies do not apply to the host network")
			},
		},
		{
			name: "route agent", values: with(requiredValues(), map[string]any{"routeAgent": map[string]any{"enabled": true}, "edgeToken": map[string]any{"value": "kbe_token"}}),
			kinds: append(slices.Clone(base), "DaemonSet"),
			check: func(t *testing.T, r rendered) {
				ds := object[*appsv1.DaemonSet](t, r, "DaemonSet", "kb-kubebyon-route-agent")
				pod := ds.Spec.Template.Spec
				require.True(t, pod.HostNetwork)
				require.Equal(t, corev1.DNSClusterFirstWithHostNet, pod.DNSPolicy)
				require.Equal(t, "system-node-critical", pod.PriorityClassName)
				require.Equal(t, []corev1.Toleration{{Operator: corev1.TolerationOpExists}}, pod.Tolerations)
				require.False(t, *pod.AutomountServiceAccountToken)
				sa := object[*corev1.ServiceAccount](t, r, "ServiceAccount", pod.ServiceAccountName)
				require.False(t, *sa.AutomountServiceAccountToken)
				c := pod.Containers[0]
				require.Equal(t, []string{"route-agent"}, c.Args)
				e := env(c)
				require.Equal(t, "spec.nodeName", e["NODE_NAME"].ValueFrom.FieldRef.FieldPath)
				require.Equal(t, "http://kb-kubebyon-api.kubebyon.svc:8080", e["KUBEBYON_EDGE_PLATFORM_URL"].Value)
				require.Equal(t, corev1.SecretKeySelector{LocalObjectReference: corev1.LocalObjectReference{Name: "kb-kubebyon-edge-token"}, Key: "token"}, *e["KUBEBYON_EDGE_TOKEN"].ValueFrom.SecretKeyRef)
				require.Equal(t, "kbe_token", string(object[*corev1.Secret](t, r, "Secret", "kb-kubebyon-edge-token").Data["token"]))
				require.Empty(t, r.hooks["Secret/kb-kubebyon-edge-token"], "only the migrations need a Secret before the release")
			},
		},
		{
			name: "replicas 3", values: with(requiredValues(), map[string]any{"api": map[string]any{"replicas": 3}, "worker": map[string]any{"replicas": 3}}),
			kinds: base,
			check: func(t *testing.T, r rendered) {
				require.Equal(t, int32(3), *object[*appsv1.Deployment](t, r, "Deployment", "kb-kubebyon-api").Spec.Replicas)
				require.Equal(t, int32(3), *object[*appsv1.Deployment](t, r, "Deployment", "kb-kubebyon-worker").Spec.Replicas)
				pdb := object[*policyv1.PodDisruptionBudget](t, r, "PodDisruptionBudget", "kb-kubebyon-api")
				require.Equal(t, intstr.FromInt32(1), *pdb.Spec.MaxUnavailable)
			},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			r := mustRender(t, tc.values)
			require.ElementsMatch(t, tc.kinds, r.kinds(), r.names())
			requireLockedDown(t, r)
			requirePlatform(t, r)
			tc.check(t, r)
		})
	}
}

// requirePlatform checks what every rendering has: the API, the workers
// and the migrations, their probes, the PDB and the service account.
func requirePlatform(t *testing.T, r rendered) {
	t.Helper()
	api := object[*appsv1.Deployment](t, r, "Deployment", "kb-kubebyon-api")
	require.Equal(t, api.Spec.Selector.MatchLabels, map[string]string{"app.kubernetes.io/name": "kubebyon", "app.kubernetes.io/instance": "kb", "app.kubernetes.io/component": "api"})
	pod := api.Spec.Template.Spec
	require.Equal(t, "kb-kubebyon", pod.ServiceAccountName)
	require.True(t, *pod.AutomountServiceAccountToken, "in-cluster credentials for the host cluster")
	c := pod.Containers[0]
	require.Equal(t, "ghcr.io/kubebyon/kubebyon:v0.1.0", c.Image)
	require.Equal(t, []string{"serve", "--workers=false"}, c.Args)
	require.Equal(t, int32(8080), c.Ports[0].ContainerPort)
	require.Equal(t, "/readyz", c.ReadinessProbe.HTTPGet.Path)
	require.Equal(t, intstr.FromString("http"), c.ReadinessProbe.HTTPGet.Port)
	require.Equal(t, "/healthz", c.LivenessProbe.HTTPGet.Path)
	require.Equal(t, intstr.FromString("http"), c.LivenessProbe.HTTPGet.Port)
	e := env(c)
	require.Equal(t, "https://kubebyon.example.com", e["KUBEBYON_BASE_URL"].Value)
	require.Contains(t, e, "KUBEBYON_EDGE", "the image's embedded edge is turned off")
	require.Empty(t, e["KUBEBYON_EDGE"].Value)
	require.NotNil(t, e["DATABASE_URL"].ValueFrom.SecretKeyRef)
	require.NotNil(t, e["KUBEBYON_SECRET_KEY"].ValueFrom.SecretKeyRef)
	require.ElementsMatch(t, []string{"/data", "/tmp"}, mountPaths(c))

	pdb := object[*policyv1.PodDisruptionBudget](t, r, "PodDisruptionBudget", "kb-kubebyon-api")
	require.Equal(t, api.Spec.Selector, pdb.Spec.Selector)
	svc := object[*corev1.Service](t, r, "Service", "kb-kubebyon-api")
	require.Equal(t, api.Spec.Selector.MatchLabels, svc.Spec.Selector)

	worker := object[*appsv1.Deployment](t, r, "Deployment", "kb-kubebyon-worker").Spec.Template.Spec
	require.Equal(t, "kb-kubebyon", worker.ServiceAccountName)
	wc := worker.Containers[0]
	require.Equal(t, []string{"worker"}, wc.Args)
	require.Equal(t, "/readyz", wc.ReadinessProbe.HTTPGet.Path)
	require.Equal(t, "/healthz", wc.LivenessProbe.HTTPGet.Path)
	require.Equal(t, intstr.FromString("metrics"), wc.LivenessProbe.HTTPGet.Port)
	require.Equal(t, ":9090", env(wc)["KUBEBYON_WORKER_METRICS_LISTEN"].Value)

	job := object[*batchv1.Job](t, r, "Job", "kb-kubebyon-migrate")
	require.Equal(t, "pre-install,pre-upgrade", r.hooks["Job/kb-kubebyon-migrate"])
	require.Equal(t, []string{"migrate"}, job.Spec.Template.Spec.Containers[0].Args)
	require.Equal(t, corev1.RestartPolicyNever, job.Spec.Template.Spec.RestartPolicy)
	require.False(t, *job.Spec.Template.Spec.AutomountServiceAccountToken)
	je := env(job.Spec.Template.Spec.Containers[0])
	require.NotContains(t, je, "KUBEBYON_SECRET_KEY", "the migrations need the database only")
	if s, ok := r.byKind["Secret"]["kb-kubebyon"]; ok {
		// The migrations' Secret exists before they run.
		require.Equal(t, "pre-install,pre-upgrade", r.hooks["Secret/kb-kubebyon"])
		require.Less(t, hookWeight(t, s.(*corev1.Secret).ObjectMeta), hookWeight(t, job.ObjectMeta))
	}

	role := object[*rbacv1.ClusterRole](t, r, "ClusterRole", "kb-kubebyon-kubebyon")
	for _, rule := range role.Rules {
		for _, field := range [][]string{rule.APIGroups, rule.Resources, rule.Verbs} {
			require.NotContains(t, field, "*", "no wildcards")
		}
		require.Empty(t, rule.NonResourceURLs)
		require.Empty(t, rule.ResourceNames)
	}
	binding := object[*rbacv1.ClusterRoleBinding](t, r, "ClusterRoleBinding", "kb-kubebyon-kubebyon")
	require.Equal(t, rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "ClusterRole", Name: role.Name}, binding.RoleRef)
	require.Equal(t, []rbacv1.Subject{{Kind: "ServiceAccount", Name: "kb-kubebyon", Namespace: "kubebyon"}}, binding.Subjects)

	for _, name := range []string{"kb-kubebyon-api", "kb-kubebyon-worker", "kb-kubebyon-migrate"} {
		np := object[*networkingv1.NetworkPolicy](t, r, "NetworkPolicy", name)
		require.Equal(t, []networkingv1.PolicyType{networkingv1.PolicyTypeIngress}, np.Spec.PolicyTypes)
	}
	apiPolicy := object[*networkingv1.NetworkPolicy](t, r, "NetworkPolicy", "kb-kubebyon-api")
	require.Equal(t, api.Spec.Selector.MatchLabels, apiPolicy.Spec.PodSelector.MatchLabels)
	require.Equal(t, intstr.FromInt32(8080), *apiPolicy.Spec.Ingress[0].Ports[0].Port)
	require.Equal(t, intstr.FromInt32(9090), *apiPolicy.Spec.Ingress[1].Ports[0].Port)
	require.Equal(t, []networkingv1.NetworkPolicyPeer{{NamespaceSelector: &metav1.LabelSelector{}}}, apiPolicy.Spec.Ingress[1].From, "metrics from pods only")
	require.Empty(t, object[*networkingv1.NetworkPolicy](t, r, "NetworkPolicy", "kb-kubebyon-migrate").Spec.Ingress)
}

func hookWeight(t *testing.T, m metav1.ObjectMeta) int {
	t.Helper()
	var w int
	require.NoError(t, json.Unmarshal([]byte(m.Annotations["helm.sh/hook-weight"]), &w))
	return w
}
