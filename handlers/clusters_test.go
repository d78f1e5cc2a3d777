package handlers_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

	"github.com/kubebyon/kubebyon/internal/audit"
	"github.com/kubebyon/kubebyon/internal/billing"
	"github.com/kubebyon/kubebyon/internal/checks"
	"github.com/kubebyon/kubebyon/internal/clusters"
	"github.com/kubebyon/kubebyon/internal/settings"
	"github.com/kubebyon/kubebyon/internal/testenv"
	"github.com/kubebyon/kubebyon/queries"
)

// connectHost makes the shared test apiserver the host cluster, as
// KUBEBYON_KUBECONFIG names it, and sets the API base domain and versions.
func (b *testBundle) connectHost(t *testing.T) {
	t.Helper()
	require.NoError(t, os.WriteFile(b.hostKubeconfig, testenv.HostKube(t).Kubeconfig(t), 0o600))
	rt := settings.Defaults()
	rt.NodePortMin, rt.NodePortMax = testenv.NodePorts()
	rt.APIBaseDomain = "clusters.test"
	rt.AllowedVersions = []string{"v1.34.0", "v1.33.4"}
	require.NoError(t, settings.Save(context.Background(), queries.New(b.pool), b.box, rt))
}

// newClusterWith creates a cluster with the form's fields added to a
// version and an access mode, and returns it.
func (b *testBundle) newClusterWith(t *testing.T, c *client, fields url.Values) queries.Cluster {
	t.Helper()
	form := url.Values{"kubernetes_version": {"v1.34.0"}, "public_access_mode": {"nodeport"}}
	for k, v := range fields {
		form[k] = v
	}
	resp := c.createCluster(form)
	require.Equal(t, http.StatusSeeOther, resp.StatusCode, readBody(t, resp))
	m := clusterLocation.FindStringSubmatch(resp.Header.Get("Location"))
	require.NotNil(t, m, resp.Header.Get("Location"))
	id, err := strconv.ParseInt(m[1], 10, 64)
	require.NoError(t, err)
	return b.cluster(t, id)
}

// createCluster submits the create form.
func (c *client) createCluster(form url.Values) *http.Response {
	c.t.Helper()
	return c.post("/clusters/new", "/clusters", form)
}

var clusterLocation = regexp.MustCompile(`^/clusters/(\d+)$`)

// newCluster creates a cluster through the form and returns its row.
func (b *testBundle) newCluster(t *testing.T, c *client, name string) queries.Cluster {
	t.Helper()
	resp := c.createCluster(url.Values{"name": {name}, "kubernetes_version": {"v1.34.0"}, "public_access_mode": {"nodeport"}})
	require.Equal(t, http.StatusSeeOther, resp.StatusCode, readBody(t, resp))
	m := clusterLocation.FindStringSubmatch(resp.Header.Get("Location"))
	require.NotNil(t, m, resp.Header.Get("Location"))
	id, err := strconv.ParseInt(m[1], 10, 64)
	require.NoError(t, err)
	return b.cluster(t, id)
}

func (b *testBundle) cluster(t *testing.T, id int64) queries.Cluster {
	t.Helper()
	cl, err := queries.New(b.pool).ClusterGetByID(context.Background(), id)
	require.NoError(t, err)
	return cl
}

// event plays the reconcile worker writing an event.
func (b *testBundle) event(t *testing.T, id int64, level, reason, message string) {
	t.Helper()
	_, err := queries.New(b.pool).ClusterEventCreate(context.Background(), queries.ClusterEventCreateParams{ClusterID: id, Level: level, Reason: reason, Message: message})
	require.NoError(t, err)
}

// markReady plays the reconcile worker finishing: the cluster is ready at
// <slug>.clusters.test.
func (b *testBundle) markReady(t *testing.T, cl queries.Cluster) {
	t.Helper()
	b.event(t, cl.ID, "info", "Ready", "")
	_, markErr := queries.New(b.pool).ClusterMarkReady(context.Background(), queries.ClusterMarkReadyParams{
		ID: cl.ID, Endpoint: cl.Slug + ".clusters.test", Generation: cl.Generation,
	})
	require.NoError(t, markErr)
}

func (b *testBundle) reconcileJobs(t *testing.T, id int64) int {
	t.Helper()
	var n int
	require.NoError(t, b.pool.QueryRow(context.Background(),
		"SELECT count(*) FROM river_job WHERE kind = 'cluster_reconcile' AND (args->>'cluster_id')::bigint = $1", id).Scan(&n))
	return n
}

// vclusterKubeconfig is a kubeconfig as vcluster writes it, for use inside
// the host cluster.
func vclusterKubeconfig(t *testing.T) []byte {
	t.Helper()
	cfg := clientcmdapi.NewConfig()
	cfg.Clusters["vcluster"] = &clientcmdapi.Cluster{Server: "https://localhost:8443", CertificateAuthorityData: []byte("test ca")}
	cfg.AuthInfos["admin"] = &clientcmdapi.AuthInfo{ClientCertificateData: []byte("test cert"), ClientKeyData: []byte("test key")}
	cfg.Contexts["vcluster"] = &clientcmdapi.Context{Cluster: "vcluster", AuthInfo: "admin"}
	cfg.CurrentContext = "vcluster"
	out, err := clientcmd.Write(*cfg)
	require.NoError(t, err)
	return out
}

// putKubeconfigSecret writes vcluster's kubeconfig Secret for cl on the
// host cluster, in the cluster's own namespace.
func putKubeconfigSecret(t *testing.T, cl queries.Cluster) {
	t.Helper()
	ctx := context.Background()
	kube := testenv.HostKube(t).Client(t)
	ns := clusters.Namespace(cl)
	_, err := kube.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{})
	require.NoError(t, err)
	t.Cleanup(func() { _ = kube.CoreV1().Namespaces().Delete(context.Background(), ns, metav1.DeleteOptions{}) })
	_, err = kube.CoreV1().Secrets(ns).Create(ctx, &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: clusters.KubeconfigSecretName(cl)},
		Data:       map[string][]byte{"config": vclusterKubeconfig(t)},
	}, metav1.CreateOptions{})
	require.NoError(t, err)
}

// requireKubeconfigFor checks a downloaded kubeconfig: vcluster's, with its
// server replaced by the cluster's endpoint.
func requireKubeconfigFor(t *testing.T, cl queries.Cluster, raw []byte) {
	t.Helper()
	cfg, err := clientcmd.Load(raw)
	require.NoError(t, err)
	require.Len(t, cfg.Clusters, 1)
	require.Equal(t, "https://"+cl.Slug+".clusters.test", cfg.Clusters["vcluster"].Server)
	require.Equal(t, []byte("test ca"), cfg.Clusters["vcluster"].CertificateAuthorityData)
	require.Equal(t, []byte("test cert"), cfg.AuthInfos["admin"].ClientCertificateData)
}

func TestClusterCreate(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.connectHost(t)
	c, email := b.signedUpUser(t, "builder")

	code, body := c.get("/clusters")
	require.Equal(t, http.StatusOK, code)
	require.Contains(t, body, `data-testid="clusters-empty"`)
	require.Contains(t, body, `href="/clusters/new"`)
	_, body = c.get("/")
	require.Contains(t, body, "You have no clusters yet.")
	require.Contains(t, body, `data-testid="dashboard-create-cluster"`)

	code, body = c.get("/clusters/new")
	require.Equal(t, http.StatusOK, code)
	require.Contains(t, body, `<option value="v1.34.0" selected>`)
	require.Contains(t, body, `<option value="v1.33.4">`)
	require.Contains(t, body, `<option value="nodeport" selected>`, "the admin's default access mode")

	resp := c.createCluster(url.Values{"name": {"web"}, "kubernetes_version": {"v1.33.4"}, "public_access_mode": {"loadbalancer"}, "description": {"front end"}})
	require.Equal(t, http.StatusSeeOther, resp.StatusCode, readBody(t, resp))
	m := clusterLocation.FindStringSubmatch(resp.Header.Get("Location"))
	require.NotNil(t, m)
	id, _ := strconv.ParseInt(m[1], 10, 64)
	cl := b.cluster(t, id)
	require.Equal(t, b.userID(t, email), cl.OwnerID)
	require.Equal(t, "web", cl.Name)
	require.Equal(t, "v1.33.4", cl.KubernetesVersion)
	require.Equal(t, "loadbalancer", cl.PublicAccessMode)
	require.Equal(t, "front end", cl.Description)
	require.Equal(t, 1, b.reconcileJobs(t, id), "the reconcile job was enqueued with the row")
	require.Contains(t, b.audits(t, cl.OwnerID), "cluster.create")

	code, body = c.get(resp.Header.Get("Location"))
	require.Equal(t, http.StatusOK, code)
	require.Contains(t, body, "Your cluster is being created.")
	require.Contains(t, body, `data-testid="cluster-name">web<`)
	require.Contains(t, body, `data-status="pending"`)
	require.Contains(t, body, "Cluster requested.")
	// The edge routes the name from the start: the page names it.
	require.Contains(t, body, `data-testid="cluster-endpoint">https://`+cl.Slug+`.clusters.test<`)
	require.Contains(t, body, `data-testid="cluster-endpoint-hint">It answers once the control plane is ready.<`)
	require.Contains(t, body, fmt.Sprintf(`hx-get="/clusters/%d/events?after=`, id), "the page watches a pending cluster")
	require.NotContains(t, body, `data-testid="cluster-kubeconfig"`)
	require.NotContains(t, body, `data-testid="cluster-retry"`)
	require.Contains(t, body, `data-testid="cluster-edit"`)

	_, body = c.get("/clusters")
	require.Contains(t, body, fmt.Sprintf(`data-cluster-id="%d"`, id))
	require.Contains(t, body, "v1.33.4")
	require.Contains(t, body, "LoadBalancer")
	require.Contains(t, body, "Not ready yet")
	_, body = c.get("/")
	require.Contains(t, body, fmt.Sprintf(`href="/clusters/%d"`, id))
	require.Contains(t, body, "All clusters (1)")
}

func TestClusterCreateRejects(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.connectHost(t)
	c, _ := b.signedUpUser(t, "typo")
	b.newCluster(t, c, "taken")

	tests := []struct {
		name, field, msg string
		form             url.Values
	}{
		{"uppercase", "name", "Use lowercase letters, digits and hyphens", url.Values{"name": {"Web"}}},
		{"too long", "name", "Use at most 40 characters.", url.Values{"name": {strings.Repeat("a", 41)}}},
		{"empty", "name", "Enter a name.", url.Values{"name": {""}}},
		{"taken", "name", "You already have a cluster with this name.", url.Values{"name": {"taken"}}},
		{"unknown version", "kubernetes_version", "Choose one of the Kubernetes versions offered.", url.Values{"name": {"fine"}, "kubernetes_version": {"v1.20.0"}}},
		{"unknown access mode", "public_access_mode", "Choose NodePort or LoadBalancer.", url.Values{"name": {"fine"}, "public_access_mode": {"ingress"}}},
	}
	for _, tt := range tests {
		resp := c.createCluster(tt.form)
		body := readBody(t, resp)
		require.Equal(t, http.StatusUnprocessableEntity, resp.StatusCode, tt.name)
		require.Contains(t, body, `data-testid="error-`+tt.field+`">`+tt.msg, tt.name)
		if tt.form.Get("name") != "" && tt.field != "name" {
			require.Contains(t, body, `value="`+tt.form.Get("name")+`"`, "%s: the name typed is kept", tt.name)
		}
	}
	var n, jobs int
	require.NoError(t, b.pool.QueryRow(context.Background(), "SELECT count(*) FROM clusters").Scan(&n))
	require.NoError(t, b.pool.QueryRow(context.Background(), "SELECT count(*) FROM river_job WHERE kind = 'cluster_reconcile'").Scan(&jobs))
	require.Equal(t, 1, n, "nothing is written for a bad form")
	require.Equal(t, 1, jobs)
}

// TestClusterPlanLimit: the plan's cluster limit refuses a new cluster
// from the console and the API with a message that names the plan, the
// limit and the way up; a bigger plan allows it at once; back on the
// smaller plan, nothing is deleted and new clusters are refused again.
func TestClusterPlanLimit(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.connectHost(t)
	ctx := context.Background()
	c, email := b.signedUpUser(t, "collector")
	for _, name := range []string{"one", "two", "three"} {
		b.newCluster(t, c, name)
	}
	const refused = `Your plan (free) allows 3 clusters, and you have that many. Delete a cluster, or move to a bigger plan under Settings → Plan (/billing).`
	resp := c.createCluster(url.Values{"name": {"four"}})
	body := readBody(t, resp)
	require.Equal(t, http.StatusUnprocessableEntity, resp.StatusCode)
	require.Contains(t, body, `data-testid="form-error">`+refused)
	require.Contains(t, body, `value="four"`)
	key := c.createKey("limits")
	r := b.apiCall(t, http.MethodPost, "/api/v1/clusters", key, `{"name":"four"}`)
	require.Equal(t, http.StatusUnprocessableEntity, r.status, r.body)
	require.JSONEq(t, `{"error":{"code":"plan_limit","message":`+strconv.Quote(refused)+`}}`, r.body)
	count := func() (n int) {
		require.NoError(t, b.pool.QueryRow(ctx, "SELECT count(*) FROM clusters WHERE status <> 'deleted'").Scan(&n))
		return n
	}
	require.Equal(t, 3, count())

	// An admin puts the user on a bigger plan: the fourth is made.
	svc := &billing.Service{Pool: b.pool, Box: b.box, River: b.river}
	_, adminEmail := b.signedUpAdmin(t, "limits-admin")
	admin := audit.Actor{UserID: b.userID(t, adminEmail)}
	var roomy, free int64
	require.NoError(t, b.pool.QueryRow(ctx, `INSERT INTO plans (name, max_clusters, max_nodes_per_cluster) VALUES ('roomy', 5, 10) RETURNING id`).Scan(&roomy))
	require.NoError(t, b.pool.QueryRow(ctx, `SELECT id FROM plans WHERE is_default`).Scan(&free))
	user := b.userID(t, email)
	require.NoError(t, svc.AdminSetPlan(ctx, user, roomy, "pilot customer", admin))
	r = b.apiCall(t, http.MethodPost, "/api/v1/clusters", key, `{"name":"four"}`)
	require.Equal(t, http.StatusCreated, r.status, r.body)
	require.Equal(t, 4, count())

	// Back on free: the four stay, a fifth is refused.
	require.NoError(t, svc.AdminSetPlan(ctx, user, free, "pilot over", admin))
	require.Equal(t, 4, count())
	r = b.apiCall(t, http.MethodPost, "/api/v1/clusters", key, `{"name":"five"}`)
	require.Equal(t, http.StatusUnprocessableEntity, r.status, r.body)
	require.Contains(t, r.body, `"plan_limit"`)
	_, body = c.get("/billing")
	require.Contains(t, body, `data-testid="billing-over-clusters"`)
}

func TestClusterWithoutHost(t *testing.T) {
	t.Parallel()
	b := setup(t) // no connectHost: no host cluster, no settings
	c, _ := b.signedUpUser(t, "pioneer")
	resp := c.createCluster(url.Values{"name": {"first"}})
	body := readBody(t, resp)
	require.Equal(t, http.StatusUnprocessableEntity, resp.StatusCode)
	require.Contains(t, body, "no host cluster is connected. An admin must connect a host cluster in Admin → Settings.")
	var n int
	require.NoError(t, b.pool.QueryRow(context.Background(), "SELECT count(*) FROM clusters").Scan(&n))
	require.Zero(t, n)
}

var pollerAfter = regexp.MustCompile(`id="cluster-poller" hx-get="/clusters/\d+/events\?after=(\d+)"`)

// TestClusterLiveUpdates plays the worker while the page polls: new events
// come as rows, the state out of band, and 286 once the cluster is ready.
func TestClusterLiveUpdates(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.connectHost(t)
	c, _ := b.signedUpUser(t, "watcher")
	cl := b.newCluster(t, c, "live")
	path := fmt.Sprintf("/clusters/%d", cl.ID)

	_, page := c.get(path)
	m := pollerAfter.FindStringSubmatch(page)
	require.NotNil(t, m, page)
	after := m[1]

	resp, frag := c.htmx(path + "/events?after=" + after)
	require.Equal(t, http.StatusOK, resp.StatusCode)
	require.Equal(t, "no-store", resp.Header.Get("Cache-Control"))
	require.NotContains(t, frag, `data-testid="cluster-event"`, "nothing new yet")
	require.Contains(t, frag, `id="cluster-state" data-testid="cluster-state" hx-swap-oob="true"`)
	require.Contains(t, frag, `hx-get="`+path+`/events?after=`+after+`"`)

	b.event(t, cl.ID, "info", "Provisioning", "")
	b.event(t, cl.ID, "warning", "HostUnreachable", "dial tcp 10.0.0.1:443: i/o timeout")
	require.NoError(t, queries.New(b.pool).ClusterSetStatus(context.Background(), queries.ClusterSetStatusParams{ID: cl.ID, Status: "provisioning"}))
	resp, frag = c.htmx(path + "/events?after=" + after)
	require.Equal(t, http.StatusOK, resp.StatusCode)
	require.Equal(t, 2, strings.Count(frag, `data-testid="cluster-event"`))
	require.Contains(t, frag, "Preparing the cluster&#39;s namespace on the host cluster.")
	require.Contains(t, frag, "The host cluster cannot be reached; trying again.")
	require.Contains(t, frag, "dial tcp 10.0.0.1:443: i/o timeout")
	require.Contains(t, frag, `data-status="provisioning"`)
	m = pollerAfter.FindStringSubmatch(frag)
	require.NotNil(t, m, "the next poller asks after the newest event")
	require.NotEqual(t, after, m[1])
	after = m[1]

	b.event(t, cl.ID, "info", "Installing", "")
	b.markReady(t, cl)
	resp, frag = c.htmx(path + "/events?after=" + after)
	require.Equal(t, 286, resp.StatusCode, "htmx stops polling on 286")
	require.Equal(t, 2, strings.Count(frag, `data-testid="cluster-event"`))
	require.Contains(t, frag, "The cluster is ready.")
	require.Contains(t, frag, `data-status="ready"`)
	require.Contains(t, frag, "https://"+cl.Slug+".clusters.test")
	require.Contains(t, frag, `data-testid="cluster-kubeconfig"`)
	require.Contains(t, frag, `<div id="cluster-poller" hx-swap-oob="delete"></div>`, "the poller goes")
	require.NotContains(t, frag, "every 2s")

	_, page = c.get(path)
	require.NotContains(t, page, "cluster-poller", "a ready cluster is not watched")
	require.Equal(t, 5, strings.Count(page, `data-testid="cluster-event"`))
}

func TestClusterFailedAndRetry(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.connectHost(t)
	c, _ := b.signedUpUser(t, "unlucky")
	cl := b.newCluster(t, c, "flaky")
	path := fmt.Sprintf("/clusters/%d", cl.ID)

	resp := c.post(path, path+"/retry", nil)
	require.Equal(t, http.StatusSeeOther, resp.StatusCode)
	_, page := c.get(path)
	require.Contains(t, page, "Only a failed cluster can be retried.")
	require.Equal(t, "pending", b.cluster(t, cl.ID).Status)

	b.event(t, cl.ID, "error", "Failed", "helm install: timed out waiting for the condition")
	require.NoError(t, queries.New(b.pool).ClusterMarkFailed(context.Background(), queries.ClusterMarkFailedParams{ID: cl.ID, StatusMessage: "helm install: timed out waiting for the condition"}))
	resp, frag := c.htmx(path + "/events?after=0")
	require.Equal(t, 286, resp.StatusCode, "failed is settled")
	require.Contains(t, frag, `data-testid="cluster-status-message">helm install: timed out waiting for the condition<`)
	_, page = c.get(path)
	require.Contains(t, page, `data-status="failed"`)
	require.Contains(t, page, `data-testid="cluster-retry"`)
	require.Contains(t, page, "The cluster could not be set up.")

	resp = c.post(path, path+"/retry", nil)
	require.Equal(t, http.StatusSeeOther, resp.StatusCode)
	require.Equal(t, path, resp.Header.Get("Location"))
	after := b.cluster(t, cl.ID)
	require.Equal(t, "pending", after.Status)
	require.Empty(t, after.StatusMessage)
	_, page = c.get(path)
	require.Contains(t, page, "The cluster will be set up again.")
	require.Contains(t, page, "Retry requested.")
	require.Contains(t, page, "cluster-poller")
}

func TestClusterEdit(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.connectHost(t)
	c, _ := b.signedUpUser(t, "editor")
	cl := b.newCluster(t, c, "app")
	path := fmt.Sprintf("/clusters/%d", cl.ID)

	code, page := c.get(path + "/edit")
	require.Equal(t, http.StatusOK, code)
	require.Contains(t, page, `value="app" readonly`)
	require.Contains(t, page, `<option value="v1.34.0" selected>`)

	// A description alone changes nothing on the host.
	resp := c.post(path+"/edit", path+"/edit", url.Values{"kubernetes_version": {"v1.34.0"}, "public_access_mode": {"nodeport"}, "description": {"the app"}, "name": {"renamed"}})
	require.Equal(t, http.StatusSeeOther, resp.StatusCode, readBody(t, resp))
	got := b.cluster(t, cl.ID)
	require.Equal(t, "the app", got.Description)
	require.Equal(t, "app", got.Name, "the name cannot change")
	require.Equal(t, cl.Generation, got.Generation)

	resp = c.post(path+"/edit", path+"/edit", url.Values{"kubernetes_version": {"v1.20.0"}, "public_access_mode": {"nodeport"}})
	require.Equal(t, http.StatusUnprocessableEntity, resp.StatusCode)
	require.Contains(t, readBody(t, resp), `data-testid="error-kubernetes_version">Choose one of the Kubernetes versions offered.`)

	resp = c.post(path+"/edit", path+"/edit", url.Values{"kubernetes_version": {"v1.33.4"}, "public_access_mode": {"loadbalancer"}, "description": {"the app"}})
	require.Equal(t, http.StatusSeeOther, resp.StatusCode)
	got = b.cluster(t, cl.ID)
	require.Equal(t, "v1.33.4", got.KubernetesVersion)
	require.Equal(t, "loadbalancer", got.PublicAccessMode)
	require.Equal(t, cl.Generation+1, got.Generation)
	_, page = c.get(path)
	require.Contains(t, page, "Your changes were saved.")
	require.Contains(t, page, "Change requested.")
}

func TestClusterDelete(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.connectHost(t)
	c, _ := b.signedUpUser(t, "cleaner")
	cl := b.newCluster(t, c, "old")
	path := fmt.Sprintf("/clusters/%d", cl.ID)

	code, page := c.get(path + "/delete")
	require.Equal(t, http.StatusOK, code)
	require.Contains(t, page, "This cannot be undone.")
	require.NotContains(t, page, `data-testid="cluster-delete-nodes"`, "no machine joined")

	// Machines that joined are named, with what deleting does to them, and
	// another user's cluster's machines are not.
	someone, _ := b.signedUpUser(t, "cleaner-other")
	other := b.newCluster(t, someone, "other")
	for _, n := range []struct {
		cluster int64
		name    string
	}{{cl.ID, "rack-a-1"}, {cl.ID, "rack-a-2"}, {other.ID, "not-mine"}} {
		require.NoError(t, queries.New(b.pool).NodeUpsert(context.Background(), queries.NodeUpsertParams{
			ClusterID: n.cluster, Name: n.name, Ready: true, Conditions: []byte("[]"), Addresses: []byte("[]")}))
	}
	_, page = c.get(path + "/delete")
	require.Contains(t, page, `data-testid="cluster-delete-nodes" data-count="2"`)
	require.Contains(t, page, "2 machines joined this cluster. Deleting it leaves them as they are")
	require.Contains(t, page, "<li><code>rack-a-1</code></li><li><code>rack-a-2</code></li>")
	require.Contains(t, page, "run its join command with --reset-only before you delete the cluster")
	require.Contains(t, page, `href="`+path+`/tokens" data-testid="cluster-delete-tokens"`)
	require.NotContains(t, page, "not-mine")

	for _, wrong := range []string{"", "OLD", "old-ish"} {
		resp := c.post(path+"/delete", path+"/delete", url.Values{"confirm": {wrong}})
		require.Equal(t, http.StatusUnprocessableEntity, resp.StatusCode, wrong)
		body := readBody(t, resp)
		require.Contains(t, body, `data-testid="error-confirm">Type the cluster&#39;s name exactly as shown.`, wrong)
		require.Contains(t, body, `data-testid="cluster-delete-nodes" data-count="2"`)
	}
	require.False(t, b.cluster(t, cl.ID).DeleteRequestedAt.Valid)

	resp := c.post(path+"/delete", path+"/delete", url.Values{"confirm": {"old"}})
	require.Equal(t, http.StatusSeeOther, resp.StatusCode)
	require.Equal(t, path, resp.Header.Get("Location"))
	got := b.cluster(t, cl.ID)
	require.Equal(t, "deleting", got.Status)
	require.True(t, got.DeleteRequestedAt.Valid)
	require.Equal(t, 2, b.reconcileJobs(t, cl.ID), "each change enqueues a job; the worker serialises them")
	_, page = c.get(path)
	require.Contains(t, page, "The cluster is being deleted.")
	require.Contains(t, page, "Deletion requested.")
	require.NotContains(t, page, `data-testid="cluster-edit"`)
	require.NotContains(t, page, `data-testid="cluster-delete"`)

	// Edits are over.
	resp = c.post(path, path+"/edit", url.Values{"kubernetes_version": {"v1.33.4"}})
	require.Equal(t, http.StatusUnprocessableEntity, resp.StatusCode)
	require.Contains(t, readBody(t, resp), "This cluster is being deleted and can no longer be changed.")
	code, _ = c.get(path + "/edit")
	require.Equal(t, http.StatusSeeOther, code)

	// The worker finishes: the page sees the end, and the cluster leaves
	// the list.
	b.event(t, cl.ID, "info", "Deleted", "")
	require.NoError(t, queries.New(b.pool).ClusterMarkDeleted(context.Background(), cl.ID))
	resp, frag := c.htmx(path + "/events?after=0")
	require.Equal(t, 286, resp.StatusCode)
	require.Contains(t, frag, `data-status="deleted"`)
	require.Contains(t, frag, "The cluster was deleted.")
	_, page = c.get("/clusters")
	require.Contains(t, page, `data-testid="clusters-empty"`)
	code, _ = c.get(path + "/delete")
	require.Equal(t, http.StatusNotFound, code)
}

func TestClusterKubeconfigDownload(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.connectHost(t)
	c, email := b.signedUpUser(t, "operator")
	cl := b.newCluster(t, c, "prod")
	path := fmt.Sprintf("/clusters/%d/kubeconfig", cl.ID)

	code, page := c.get(path)
	require.Equal(t, http.StatusConflict, code)
	require.Contains(t, page, "The kubeconfig can be downloaded once the cluster is ready.")

	putKubeconfigSecret(t, cl)
	b.markReady(t, cl)
	_, detail := c.get(fmt.Sprintf("/clusters/%d", cl.ID))
	require.Contains(t, detail, `href="`+path+`"`)

	resp, err := c.http.Get(c.base + path)
	require.NoError(t, err)
	defer resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode)
	require.Equal(t, `attachment; filename="prod.kubeconfig"`, resp.Header.Get("Content-Disposition"))
	require.Equal(t, "application/yaml", resp.Header.Get("Content-Type"))
	require.Equal(t, "no-store", resp.Header.Get("Cache-Control"))
	requireKubeconfigFor(t, cl, []byte(readBody(t, resp)))
	require.Contains(t, b.audits(t, b.userID(t, email)), "cluster.kubeconfig_download")
}

// TestClusterUnreachableShown: while a ready cluster's health check cannot
// reach its control plane, the cluster's page says since when and why;
// once it answers again, the notice goes.
func TestClusterUnreachableShown(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()
	b.connectHost(t)
	c, _ := b.signedUpUser(t, "unreachable")
	cl := b.newCluster(t, c, "far")
	b.markReady(t, cl)
	page := fmt.Sprintf("/clusters/%d", cl.ID)
	_, body := c.get(page)
	require.NotContains(t, body, `data-testid="cluster-unreachable"`)

	q := queries.New(b.pool)
	require.NoError(t, checks.Schedule(ctx, q, cl.ID, checks.NodeHealth, time.Now()))
	rec := checks.Recorder{Q: q}
	require.NoError(t, rec.Done(ctx, cl.ID, checks.NodeHealth, time.Minute, time.Time{}, checks.Unreachable(errors.New("dial tcp 192.0.2.1:443: i/o timeout"))))
	code, body := c.get(page)
	require.Equal(t, http.StatusOK, code)
	require.Contains(t, body, `data-testid="cluster-unreachable"`)
	require.Contains(t, body, "has not reached this cluster&#39;s control plane since")
	require.Contains(t, body, "dial tcp 192.0.2.1:443: i/o timeout")

	require.NoError(t, rec.Done(ctx, cl.ID, checks.NodeHealth, time.Minute, time.Now().Add(time.Minute), nil))
	_, body = c.get(page)
	require.NotContains(t, body, `data-testid="cluster-unreachable"`)
}
