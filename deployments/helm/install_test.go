package chart_test

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"helm.sh/helm/v3/pkg/action"
	"helm.sh/helm/v3/pkg/release"
	appsv1 "k8s.io/api/apps/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/discovery/cached/memory"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/restmapper"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

	"github.com/kubebyon/kubebyon/internal/hostcheck"
	"github.com/kubebyon/kubebyon/internal/testenv"
)

// restGetter gives Helm's action package a client of a rest.Config, as
// the helm CLI's kubeconfig flags would.
type restGetter struct {
	cfg       *rest.Config
	namespace string
}

func (g restGetter) ToRESTConfig() (*rest.Config, error) { return rest.CopyConfig(g.cfg), nil }

func (g restGetter) ToDiscoveryClient() (discovery.CachedDiscoveryInterface, error) {
	dc, err := discovery.NewDiscoveryClientForConfig(g.cfg)
	if err != nil {
		return nil, err
	}
	return memory.NewMemCacheClient(dc), nil
}

func (g restGetter) ToRESTMapper() (meta.RESTMapper, error) {
	dc, err := g.ToDiscoveryClient()
	if err != nil {
		return nil, err
	}
	return restmapper.NewDeferredDiscoveryRESTMapper(dc), nil
}

func (g restGetter) ToRawKubeConfigLoader() clientcmd.ClientConfig {
	return clientcmd.NewDefaultClientConfig(*clientcmdapi.NewConfig(), &clientcmd.ConfigOverrides{
		Context: clientcmdapi.Context{Namespace: g.namespace},
	})
}

func helmFor(t *testing.T, cfg *rest.Config, namespace string) *action.Configuration {
	t.Helper()
	ac := new(action.Configuration)
	require.NoError(t, ac.Init(restGetter{cfg: cfg, namespace: namespace}, namespace, "secret", func(string, ...any) {}))
	return ac
}

// install runs `helm install` of the chart with Helm's action package.
func install(t *testing.T, cfg *rest.Config, namespace, name string, values map[string]any) *release.Release {
	t.Helper()
	in := action.NewInstall(helmFor(t, cfg, namespace))
	in.ReleaseName, in.Namespace = name, namespace
	// The migrations hook is waited for; completeJobs stands in for the
	// Job controller.
	in.Timeout = 2 * time.Minute
	rel, err := in.RunWithContext(t.Context(), loadChart(t), values)
	require.NoError(t, err)
	require.Equal(t, release.StatusDeployed, rel.Info.Status)
	return rel
}

// upgrade runs `helm upgrade` of the release to values.
func upgrade(t *testing.T, cfg *rest.Config, namespace, name string, values map[string]any) *release.Release {
	t.Helper()
	up := action.NewUpgrade(helmFor(t, cfg, namespace))
	up.Namespace = namespace
	up.Timeout = 2 * time.Minute
	rel, err := up.RunWithContext(t.Context(), name, loadChart(t), values)
	require.NoError(t, err)
	require.Equal(t, release.StatusDeployed, rel.Info.Status)
	return rel
}

// completeJobs marks every Job of namespace complete as soon as it
// exists, as the Job controller would once its pod succeeded (no
// controller runs beside the test apiserver), and returns the Jobs it saw.
func completeJobs(t *testing.T, client kubernetes.Interface, namespace string) func() []batchv1.Job {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	var (
		mu   sync.Mutex
		seen []batchv1.Job
		done = make(chan struct{})
	)
	go func() {
		defer close(done)
		_ = wait.PollUntilContextCancel(ctx, 100*time.Millisecond, true, func(ctx context.Context) (bool, error) {
			jobs, err := client.BatchV1().Jobs(namespace).List(ctx, metav1.ListOptions{})
			if err != nil {
				return false, nil
			}
			for _, job := range jobs.Items {
				if complete(job) {
					continue
				}
				now := metav1.Now()
				job.Status.StartTime = &now
				job.Status.CompletionTime = &now
				job.Status.Succeeded = 1
				job.Status.Conditions = []batchv1.JobCondition{
					{Type: batchv1.JobSuccessCriteriaMet, Status: corev1.ConditionTrue, LastProbeTime: now, LastTransitionTime: now},
					{Type: batchv1.JobComplete, Status: corev1.ConditionTrue, LastProbeTime: now, LastTransitionTime: now},
				}
				if _, err := client.BatchV1().Jobs(namespace).UpdateStatus(ctx, &job, metav1.UpdateOptions{}); err != nil {
					t.Logf("complete job %s: %v", job.Name, err)
					continue
				}
				mu.Lock()
				seen = append(seen, job)
				mu.Unlock()
			}
			return false, nil
		})
	}()
	t.Cleanup(func() { cancel(); <-done })
	return func() []batchv1.Job {
		mu.Lock()
		defer mu.Unlock()
		return slices.Clone(seen)
	}
}

func complete(job batchv1.Job) bool {
	return slices.ContainsFunc(job.Status.Conditions, func(c batchv1.JobCondition) bool {
		return c.Type == batchv1.JobComplete && c.Status == corev1.ConditionTrue
	})
}

// permission is a verb on a resource of a group.
type permission struct{ group, resource, verb string }

func (p permission) String() string {
	if p.group == "" {
		return p.verb + " " + p.resource
	}
	return p.verb + " " + p.resource + "." + p.group
}

// hostPermissionsDoc is the page whose Host permissions table lists what
// the platform needs on the host cluster (it was the top-level README's).
const hostPermissionsDoc = "../../docs/operators/host-cluster.md"

// readmePermissions reads the host permission table of
// hostPermissionsDoc (section Host permissions): every verb on every
// resource it lists, and whether the row is cluster-wide.
func readmePermissions(t *testing.T) map[permission]bool {
	t.Helper()
	f, err := os.Open(hostPermissionsDoc)
	require.NoError(t, err)
	defer f.Close()
	var (
		out     = map[permission]bool{}
		inTable bool
		// `name` and (`group`), in the order they come.
		token = regexp.MustCompile("\\(`([^`]+)`\\)|`([^`]+)`")
		paren = regexp.MustCompile(`\([^)]*\)`)
	)
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := sc.Text()
		if line == "| Resource | Verbs | Where |" {
			inTable = true
			continue
		}
		if !inTable || strings.HasPrefix(line, "| ---") {
			continue
		}
		if !strings.HasPrefix(line, "|") {
			break
		}
		cells := strings.Split(strings.Trim(line, "|"), "|")
		require.Len(t, cells, 3, line)
		where := strings.TrimSpace(cells[2])
		clusterWide := strings.HasPrefix(where, "cluster-wide")
		require.True(t, clusterWide || strings.HasPrefix(where, "all namespaces"), where)
		// Names without a group wait for a following (`group`), which
		// applies to every one since the last group.
		var resources []schema.GroupResource
		pending := 0
		for _, m := range token.FindAllStringSubmatch(cells[0], -1) {
			if group := m[1]; group != "" {
				for i := len(resources) - pending; i < len(resources); i++ {
					resources[i].Group = group
				}
				pending = 0
				continue
			}
			name, group, _ := strings.Cut(m[2], ".")
			resources = append(resources, schema.GroupResource{Group: group, Resource: name})
			if group == "" {
				pending++
			}
		}
		require.NotEmpty(t, resources, line)
		verbs := strings.Split(paren.ReplaceAllString(cells[1], ""), ",")
		for _, r := range resources {
			for _, v := range verbs {
				out[permission{r.Group, r.Resource, strings.TrimSpace(v)}] = clusterWide
			}
		}
	}
	require.NoError(t, sc.Err())
	require.NotEmpty(t, out, "the host permission table of %s", hostPermissionsDoc)
	return out
}

// sorted lists permissions as their names, for readable diffs.
func sorted(ps map[permission]bool) []string {
	var out []string
	for p := range ps {
		out = append(out, p.String())
	}
	slices.Sort(out)
	return out
}

// expand lists the permissions of RBAC rules (no wildcards expected).
func expand(rules []rbacv1.PolicyRule) map[permission]bool {
	out := map[permission]bool{}
	for _, r := range rules {
		for _, g := range r.APIGroups {
			for _, res := range r.Resources {
				for _, v := range r.Verbs {
					out[permission{g, res, v}] = true
				}
			}
		}
	}
	return out
}

// TestReadmePermissionsAreWhatHostcheckChecks ties the documented table to
// the platform's own check: the same permissions, cluster-wide for the
// cluster-scoped resources.
func TestReadmePermissionsAreWhatHostcheckChecks(t *testing.T) {
	t.Parallel()
	want := map[permission]bool{}
	for _, req := range append(slices.Clone(hostcheck.Required), hostcheck.EdgeRequired...) {
		for _, v := range req.Verbs {
			want[permission{req.Group, req.Resource, v}] = !req.Namespaced
		}
	}
	require.Equal(t, want, readmePermissions(t))
}

// TestChartInstallsAndGrantsExactlyTheHostPermissions installs the chart
// into a real kube-apiserver, checks its objects, then acts as its service
// account: the platform's host check passes, and it holds nothing beyond
// the documented table.
func TestChartInstallsAndGrantsExactlyTheHostPermissions(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	kube := testenv.NewKube(t)
	client := kube.Client(t)
	testenv.GatewayAPICRDs(t, kube.Config)

	const ns = "kubebyon"
	_, err := client.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{
		Name: ns,
		// Every pod of these values meets the restricted Pod Security level.
		Labels: map[string]string{"pod-security.kubernetes.io/enforce": "restricted"},
	}}, metav1.CreateOptions{})
	require.NoError(t, err)
	// The migrations Job's pods use the namespace's default account, which
	// the controller manager would make.
	_, err = client.CoreV1().ServiceAccounts(ns).Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "default"}}, metav1.CreateOptions{})
	require.NoError(t, err)

	jobs := completeJobs(t, client, ns)
	values := with(requiredValues(), map[string]any{
		"edge":      map[string]any{"enabled": true},
		"edgeToken": map[string]any{"value": "kbe_token"},
		"ingress":   map[string]any{"enabled": true},
		"httpRoute": map[string]any{"enabled": true, "parentRefs": []any{map[string]any{"name": "public", "namespace": "gateways"}}},
	})
	rel := install(t, kube.Config, ns, "kb", values)

	// The migrations ran before the release's objects were made, with the
	// hook Secret there.
	ran := jobs()
	require.Len(t, ran, 1)
	require.Equal(t, "kb-kubebyon-migrate", ran[0].Name)
	require.Equal(t, []string{"migrate"}, ran[0].Spec.Template.Spec.Containers[0].Args)
	require.Len(t, rel.Hooks, 2)

	// Every object of the release and of its hooks is there.
	dyn, err := dynamic.NewForConfig(kube.Config)
	require.NoError(t, err)
	mapper, err := restGetter{cfg: kube.Config}.ToRESTMapper()
	require.NoError(t, err)
	manifests := []string{rel.Manifest}
	for _, h := range rel.Hooks {
		manifests = append(manifests, h.Manifest)
	}
	var kinds []string
	for _, m := range manifests {
		dec := yaml.NewYAMLOrJSONDecoder(strings.NewReader(m), 4096)
		for {
			var u unstructured.Unstructured
			if err := dec.Decode(&u.Object); err != nil {
				break
			}
			if u.Object == nil {
				continue
			}
			gvk := u.GroupVersionKind()
			mapping, err := mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
			require.NoError(t, err, gvk)
			var ri dynamic.ResourceInterface = dyn.Resource(mapping.Resource)
			if mapping.Scope.Name() == meta.RESTScopeNameNamespace {
				ri = dyn.Resource(mapping.Resource).Namespace(ns)
			}
			got, err := ri.Get(ctx, u.GetName(), metav1.GetOptions{})
			require.NoError(t, err, "%s %s", gvk.Kind, u.GetName())
			require.Equal(t, u.GetLabels()["app.kubernetes.io/instance"], got.GetLabels()["app.kubernetes.io/instance"])
			kinds = append(kinds, gvk.Kind)
		}
	}
	slices.Sort(kinds)
	kinds = slices.Compact(kinds)
	require.Equal(t, []string{"ClusterRole", "ClusterRoleBinding", "Deployment", "HTTPRoute", "Ingress", "Job", "NetworkPolicy", "PodDisruptionBudget", "Secret", "Service", "ServiceAccount"}, kinds)

	// Their pods are admitted in a namespace that enforces the restricted
	// Pod Security level (created as a dry run: no kubelet would run them).
	deployments, err := client.AppsV1().Deployments(ns).List(ctx, metav1.ListOptions{})
	require.NoError(t, err)
	require.Len(t, deployments.Items, 3)
	templates := []corev1.PodTemplateSpec{ran[0].Spec.Template}
	for _, d := range deployments.Items {
		templates = append(templates, d.Spec.Template)
	}
	for _, tmpl := range templates {
		pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{GenerateName: "check-", Labels: tmpl.Labels}, Spec: tmpl.Spec}
		_, err := client.CoreV1().Pods(ns).Create(ctx, pod, metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
		require.NoError(t, err, tmpl.Labels["app.kubernetes.io/component"])
	}

	// As the chart's service account, the platform's own check of the host
	// cluster finds every permission it needs, managed ingress included.
	sa := rest.CopyConfig(kube.Config)
	sa.Impersonate = rest.ImpersonationConfig{
		UserName: "system:serviceaccount:" + ns + ":kb-kubebyon",
		Groups:   []string{"system:serviceaccounts", "system:serviceaccounts:" + ns, "system:authenticated"},
	}
	report, err := hostcheck.Check(ctx, sa, hostcheck.Features{Edge: true})
	require.NoError(t, err)
	for _, res := range report.Results {
		require.Empty(t, res.Missing(), res.Name())
	}
	require.True(t, report.OK())

	// Nothing beyond the documented table. Cluster-wide: the ClusterRole is
	// exactly the table, and nothing else is bound to the account.
	readme := readmePermissions(t)
	want := map[permission]bool{}
	for p := range readme {
		want[p] = true
	}
	role, err := client.RbacV1().ClusterRoles().Get(ctx, "kb-kubebyon-kubebyon", metav1.GetOptions{})
	require.NoError(t, err)
	require.Equal(t, sorted(want), sorted(expand(role.Rules)))
	// The bindings that reach the account (by name or by its groups) other
	// than the chart's grant nothing on resources beyond what every
	// authenticated user has (system:basic-user): the defaults such as
	// service account issuer discovery grant URLs only.
	basic, err := client.RbacV1().ClusterRoles().Get(ctx, "system:basic-user", metav1.GetOptions{})
	require.NoError(t, err)
	everyone := expand(basic.Rules)
	reaches := func(subjects []rbacv1.Subject) bool {
		return slices.ContainsFunc(subjects, func(s rbacv1.Subject) bool {
			switch s.Kind {
			case rbacv1.ServiceAccountKind:
				return s.Name == "kb-kubebyon" && s.Namespace == ns
			case rbacv1.GroupKind:
				return slices.Contains(sa.Impersonate.Groups, s.Name)
			case rbacv1.UserKind:
				return s.Name == sa.Impersonate.UserName
			}
			return false
		})
	}
	crbs, err := client.RbacV1().ClusterRoleBindings().List(ctx, metav1.ListOptions{})
	require.NoError(t, err)
	var bound []string
	for _, b := range crbs.Items {
		if !reaches(b.Subjects) {
			continue
		}
		bound = append(bound, b.Name)
		if b.Name == role.Name {
			continue
		}
		other, err := client.RbacV1().ClusterRoles().Get(ctx, b.RoleRef.Name, metav1.GetOptions{})
		require.NoError(t, err)
		for p := range expand(other.Rules) {
			require.True(t, everyone[p], "%s grants %s", b.Name, p)
		}
	}
	require.Contains(t, bound, role.Name)
	rbs, err := client.RbacV1().RoleBindings("").List(ctx, metav1.ListOptions{})
	require.NoError(t, err)
	for _, b := range rbs.Items {
		require.False(t, reaches(b.Subjects), "RoleBinding %s/%s", b.Namespace, b.Name)
	}

	// In a namespace (as a cluster's own would be, and the release's): the
	// rules the apiserver reports for the account are the table's, plus
	// what every authenticated user has (system:basic-user).
	saClient, err := kubernetes.NewForConfig(sa)
	require.NoError(t, err)
	_, err = client.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "kubebyon-c-abc123"}}, metav1.CreateOptions{})
	require.NoError(t, err)
	for _, namespace := range []string{"kubebyon-c-abc123", ns} {
		review, err := saClient.AuthorizationV1().SelfSubjectRulesReviews().Create(ctx, &authorizationv1.SelfSubjectRulesReview{
			Spec: authorizationv1.SelfSubjectRulesReviewSpec{Namespace: namespace},
		}, metav1.CreateOptions{})
		require.NoError(t, err)
		require.False(t, review.Status.Incomplete, review.Status.EvaluationError)
		got := map[permission]bool{}
		for _, r := range review.Status.ResourceRules {
			require.Empty(t, r.ResourceNames, namespace)
			for p := range expand([]rbacv1.PolicyRule{{APIGroups: r.APIGroups, Resources: r.Resources, Verbs: r.Verbs}}) {
				if !everyone[p] {
					got[p] = true
				}
			}
		}
		require.Equal(t, sorted(want), sorted(got), "as %s in %s", sa.Impersonate.UserName, namespace)
	}

	// What the account must not do, for the record of the table's limits.
	for _, p := range []permission{{"", "pods", "get"}, {"", "secrets", "watch"}, {"rbac.authorization.k8s.io", "clusterroles", "create"}, {"", "namespaces", "list"}} {
		review, err := saClient.AuthorizationV1().SelfSubjectAccessReviews().Create(ctx, &authorizationv1.SelfSubjectAccessReview{
			Spec: authorizationv1.SelfSubjectAccessReviewSpec{ResourceAttributes: &authorizationv1.ResourceAttributes{Group: p.group, Resource: p.resource, Verb: p.verb}},
		}, metav1.CreateOptions{})
		require.NoError(t, err)
		require.False(t, review.Status.Allowed, fmt.Sprint(p))
	}

	// An upgrade migrates first again, with the Secret made anew.
	upgrade(t, kube.Config, ns, "kb", with(values, map[string]any{"api": map[string]any{"replicas": 3}}))
	require.Len(t, jobs(), 2)
	api, err := client.AppsV1().Deployments(ns).Get(ctx, "kb-kubebyon-api", metav1.GetOptions{})
	require.NoError(t, err)
	require.Equal(t, int32(3), *api.Spec.Replicas)

	// Uninstalling leaves the Secret with the key the database's secrets
	// are sealed with (a hook's object), and removes the rest.
	_, err = action.NewUninstall(helmFor(t, kube.Config, ns)).Run("kb")
	require.NoError(t, err)
	secret, err := client.CoreV1().Secrets(ns).Get(ctx, "kb-kubebyon", metav1.GetOptions{})
	require.NoError(t, err)
	require.Equal(t, testSecretKey, string(secret.Data["secret-key"]))
	_, err = client.AppsV1().Deployments(ns).Get(ctx, "kb-kubebyon-api", metav1.GetOptions{})
	require.True(t, apierrors.IsNotFound(err), "%v", err)
	_, err = client.RbacV1().ClusterRoles().Get(ctx, "kb-kubebyon-kubebyon", metav1.GetOptions{})
	require.True(t, apierrors.IsNotFound(err), "%v", err)
}

// TestHostNetworkPodsNeedAPrivilegedNamespace creates the pods of the
// route agent and of an edge on the host network (as a dry run) where Pod
// Security enforces "privileged", as the chart's README says to label the
// namespace, and checks that "baseline" refuses them.
func TestHostNetworkPodsNeedAPrivilegedNamespace(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	client := testenv.HostKube(t).Client(t)
	r := mustRender(t, with(requiredValues(), map[string]any{
		"edge":       map[string]any{"enabled": true, "hostNetwork": true},
		"routeAgent": map[string]any{"enabled": true},
		"edgeToken":  map[string]any{"existingSecret": "edge-token"},
	}))
	pods := []corev1.PodSpec{
		object[*appsv1.DaemonSet](t, r, "DaemonSet", "kb-kubebyon-route-agent").Spec.Template.Spec,
		object[*appsv1.Deployment](t, r, "Deployment", "kb-kubebyon-edge").Spec.Template.Spec,
	}
	for level, admitted := range map[string]bool{"privileged": true, "baseline": false} {
		ns := "chart-" + level
		_, err := client.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{
			Name: ns, Labels: map[string]string{"pod-security.kubernetes.io/enforce": level},
		}}, metav1.CreateOptions{})
		require.NoError(t, err)
		agent := object[*corev1.ServiceAccount](t, r, "ServiceAccount", "kb-kubebyon-agent")
		agent.Namespace = ns
		_, err = client.CoreV1().ServiceAccounts(ns).Create(ctx, agent, metav1.CreateOptions{})
		require.NoError(t, err)
		for _, spec := range pods {
			pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{GenerateName: "check-"}, Spec: spec}
			_, err := client.CoreV1().Pods(ns).Create(ctx, pod, metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
			if admitted {
				require.NoError(t, err, "%s in %s", spec.Containers[0].Name, level)
			} else {
				require.ErrorContains(t, err, "violates PodSecurity", "%s in %s", spec.Containers[0].Name, level)
				require.ErrorContains(t, err, "host namespaces")
			}
		}
	}
}
