package handlers_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/kubebyon/kubebyon/handlers/handlerstest"
	"github.com/kubebyon/kubebyon/internal/audit"
	"github.com/kubebyon/kubebyon/internal/billing"
	"github.com/kubebyon/kubebyon/internal/checks"
	"github.com/kubebyon/kubebyon/queries"
)

func TestClusterCreate(t *testing.T) {
	t.Parallel()
	b := handlerstest.Setup(t)
	b.ConnectHost(t)
	c, email := b.SignedUpUser(t, "builder")

	code, body := c.Get("/clusters")
	require.Equal(t, http.StatusOK, code)
	require.Contains(t, body, `data-testid="clusters-empty"`)
	require.Contains(t, body, `href="/clusters/new"`)
	_, body = c.Get("/")
	require.Contains(t, body, "You have no clusters yet.")
	require.Contains(t, body, `data-testid="dashboard-create-cluster"`)

	code, body = c.Get("/clusters/new")
	require.Equal(t, http.StatusOK, code)
	require.Contains(t, body, `<option value="v1.34.0" selected>`)
	require.Contains(t, body, `<option value="v1.33.4">`)
	require.Contains(t, body, `<option value="nodeport" selected>`, "the admin's default access mode")

	resp := c.CreateCluster(url.Values{"name": {"web"}, "kubernetes_version": {"v1.33.4"}, "public_access_mode": {"loadbalancer"}, "description": {"front end"}})
	require.Equal(t, http.StatusSeeOther, resp.StatusCode, handlerstest.ReadBody(t, resp))
	m := handlerstest.ClusterLocation.FindStringSubmatch(resp.Header.Get("Location"))
	require.NotNil(t, m)
	id, _ := strconv.ParseInt(m[1], 10, 64)
	cl := b.Cluster(t, id)
	require.Equal(t, b.UserID(t, email), cl.OwnerID)
	require.Equal(t, "web", cl.Name)
	require.Equal(t, "v1.33.4", cl.KubernetesVersion)
	require.Equal(t, "loadbalancer", cl.PublicAccessMode)
	require.Equal(t, "front end", cl.Description)
	require.Equal(t, 1, b.ReconcileJobs(t, id), "the reconcile job was enqueued with the row")
	require.Contains(t, b.Audits(t, cl.OwnerID), "cluster.create")

	code, body = c.Get(resp.Header.Get("Location"))
	require.Equal(t, http.StatusOK, code)
	require.Contains(t, body, "Your cluster is being created.")
	require.NotContains(t, body, "Ready since", "a cluster that was never ready has no time it was")
	require.Contains(t, body, `data-testid="page-title">web<`)
	require.Contains(t, body, `data-status="pending"`)
	require.Contains(t, body, "Cluster requested.")
	// The edge routes the name from the start: the page names it.
	require.Contains(t, body, `data-testid="cluster-endpoint">https://`+cl.Slug+`.clusters.test<`)
	require.Contains(t, body, `data-testid="cluster-endpoint-hint">It answers once the control plane is ready.<`)
	require.Contains(t, body, fmt.Sprintf(`hx-get="/clusters/%d/events?after=`, id), "the page watches a pending cluster")
	require.NotContains(t, body, `data-testid="cluster-kubeconfig"`)
	require.NotContains(t, body, `data-testid="cluster-retry"`)
	require.NotContains(t, body, `data-testid="cluster-add-node"`, "nodes join a ready cluster")
	require.Contains(t, body, `data-testid="cluster-settings"`)
	require.NotContains(t, body, `data-testid="first-node"`, "the cluster is not ready")

	_, body = c.Get("/clusters")
	require.Contains(t, body, fmt.Sprintf(`data-cluster-id="%d"`, id))
	require.Contains(t, body, "v1.33.4")
	require.Contains(t, body, "LoadBalancer")
	require.Contains(t, body, "Not ready yet")
	_, body = c.Get("/")
	require.Contains(t, body, fmt.Sprintf(`href="/clusters/%d"`, id))
	require.Contains(t, body, "All clusters (1)")
}

func TestClusterCreateRejects(t *testing.T) {
	t.Parallel()
	b := handlerstest.Setup(t)
	b.ConnectHost(t)
	c, _ := b.SignedUpUser(t, "typo")
	b.NewCluster(t, c, "taken")

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
		resp := c.CreateCluster(tt.form)
		body := handlerstest.ReadBody(t, resp)
		require.Equal(t, http.StatusUnprocessableEntity, resp.StatusCode, tt.name)
		require.Contains(t, body, `data-testid="error-`+tt.field+`">`+tt.msg, tt.name)
		if tt.form.Get("name") != "" && tt.field != "name" {
			require.Contains(t, body, `value="`+tt.form.Get("name")+`"`, "%s: the name typed is kept", tt.name)
		}
	}
	var n, jobs int
	require.NoError(t, b.Pool.QueryRow(context.Background(), "SELECT count(*) FROM clusters").Scan(&n))
	require.NoError(t, b.Pool.QueryRow(context.Background(), "SELECT count(*) FROM river_job WHERE kind = 'cluster_reconcile'").Scan(&jobs))
	require.Equal(t, 1, n, "nothing is written for a bad form")
	require.Equal(t, 1, jobs)
}

// TestClusterPlanLimit: the plan's cluster limit refuses a new cluster
// from the console and the API with a message that names the plan, the
// limit and the way up; a bigger plan allows it at once; back on the
// smaller plan, nothing is deleted and new clusters are refused again.
func TestClusterPlanLimit(t *testing.T) {
	t.Parallel()
	b := handlerstest.Setup(t)
	b.ConnectHost(t)
	ctx := context.Background()
	c, email := b.SignedUpUser(t, "collector")
	for _, name := range []string{"one", "two", "three"} {
		b.NewCluster(t, c, name)
	}
	const refused = `Your plan (free) allows 3 clusters, and you have that many. Delete a cluster, or move to a bigger plan under Settings → Plan (/billing).`
	resp := c.CreateCluster(url.Values{"name": {"four"}})
	body := handlerstest.ReadBody(t, resp)
	require.Equal(t, http.StatusUnprocessableEntity, resp.StatusCode)
	require.Contains(t, body, `data-testid="form-error">`+refused)
	require.Contains(t, body, `value="four"`)
	key := c.CreateKey("limits")
	r := b.APICall(t, http.MethodPost, "/api/v1/clusters", key, `{"name":"four"}`)
	require.Equal(t, http.StatusUnprocessableEntity, r.Status, r.Body)
	require.JSONEq(t, `{"error":{"code":"plan_limit","message":`+strconv.Quote(refused)+`}}`, r.Body)
	count := func() (n int) {
		require.NoError(t, b.Pool.QueryRow(ctx, "SELECT count(*) FROM clusters WHERE status <> 'deleted'").Scan(&n))
		return n
	}
	require.Equal(t, 3, count())

	// An admin puts the user on a bigger plan: the fourth is made.
	svc := &billing.Service{Pool: b.Pool, Box: b.Box, River: b.River}
	_, adminEmail := b.SignedUpAdmin(t, "limits-admin")
	admin := audit.Actor{UserID: b.UserID(t, adminEmail)}
	var roomy, free int64
	require.NoError(t, b.Pool.QueryRow(ctx, `INSERT INTO plans (name, max_clusters, max_nodes_per_cluster) VALUES ('roomy', 5, 10) RETURNING id`).Scan(&roomy))
	require.NoError(t, b.Pool.QueryRow(ctx, `SELECT id FROM plans WHERE is_default`).Scan(&free))
	user := b.UserID(t, email)
	require.NoError(t, svc.AdminSetPlan(ctx, user, roomy, "pilot customer", admin))
	r = b.APICall(t, http.MethodPost, "/api/v1/clusters", key, `{"name":"four"}`)
	require.Equal(t, http.StatusCreated, r.Status, r.Body)
	require.Equal(t, 4, count())

	// Back on free: the four stay, a fifth is refused.
	require.NoError(t, svc.AdminSetPlan(ctx, user, free, "pilot over", admin))
	require.Equal(t, 4, count())
	r = b.APICall(t, http.MethodPost, "/api/v1/clusters", key, `{"name":"five"}`)
	require.Equal(t, http.StatusUnprocessableEntity, r.Status, r.Body)
	require.Contains(t, r.Body, `"plan_limit"`)
	_, body = c.Get("/billing")
	require.Contains(t, body, `data-testid="billing-over-clusters"`)
}

func TestClusterWithoutHost(t *testing.T) {
	t.Parallel()
	b := handlerstest.Setup(t) // no ConnectHost: no host cluster, no settings
	c, _ := b.SignedUpUser(t, "pioneer")
	resp := c.CreateCluster(url.Values{"name": {"first"}})
	body := handlerstest.ReadBody(t, resp)
	require.Equal(t, http.StatusUnprocessableEntity, resp.StatusCode)
	require.Contains(t, body, "no host cluster is connected. An admin must connect a host cluster in Admin → Settings.")
	var n int
	require.NoError(t, b.Pool.QueryRow(context.Background(), "SELECT count(*) FROM clusters").Scan(&n))
	require.Zero(t, n)
}

var pollerAfter = regexp.MustCompile(`id="cluster-poller" hx-get="/clusters/\d+/events\?after=(\d+)"`)

// TestClusterLiveUpdates plays the worker while the page polls: new events
// come as rows, the state out of band, and 286 once the cluster is ready.
func TestClusterLiveUpdates(t *testing.T) {
	t.Parallel()
	b := handlerstest.Setup(t)
	b.ConnectHost(t)
	c, _ := b.SignedUpUser(t, "watcher")
	cl := b.NewCluster(t, c, "live")
	path := fmt.Sprintf("/clusters/%d", cl.ID)

	_, page := c.Get(path)
	m := pollerAfter.FindStringSubmatch(page)
	require.NotNil(t, m, page)
	after := m[1]

	resp, frag := c.HTMX(path + "/events?after=" + after)
	require.Equal(t, http.StatusOK, resp.StatusCode)
	require.Equal(t, "no-store", resp.Header.Get("Cache-Control"))
	require.NotContains(t, frag, `data-testid="cluster-event"`, "nothing new yet")
	require.Contains(t, frag, `id="cluster-state" data-testid="cluster-state" hx-swap-oob="true"`)
	require.Contains(t, frag, `hx-get="`+path+`/events?after=`+after+`"`)

	b.Event(t, cl.ID, "info", "Provisioning", "")
	b.Event(t, cl.ID, "warning", "HostUnreachable", "dial tcp 10.0.0.1:443: i/o timeout")
	require.NoError(t, queries.New(b.Pool).ClusterSetStatus(context.Background(), queries.ClusterSetStatusParams{ID: cl.ID, Status: "provisioning"}))
	resp, frag = c.HTMX(path + "/events?after=" + after)
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

	b.Event(t, cl.ID, "info", "Installing", "")
	b.MarkReady(t, cl)
	resp, frag = c.HTMX(path + "/events?after=" + after)
	require.Equal(t, 286, resp.StatusCode, "htmx stops polling on 286")
	require.Equal(t, 2, strings.Count(frag, `data-testid="cluster-event"`))
	require.Contains(t, frag, "The cluster is ready.")
	require.Contains(t, frag, `data-status="ready"`)
	require.Contains(t, frag, "https://"+cl.Slug+".clusters.test")
	require.Contains(t, frag, `data-testid="cluster-kubeconfig"`)
	require.Contains(t, frag, `<div id="cluster-poller" hx-swap-oob="delete"></div>`, "the poller goes")
	require.NotContains(t, frag, "every 2s")

	_, page = c.Get(path)
	require.NotContains(t, page, "cluster-poller", "a ready cluster is not watched")
	require.Equal(t, 5, strings.Count(page, `data-testid="cluster-event"`))
}

func TestClusterFailedAndRetry(t *testing.T) {
	t.Parallel()
	b := handlerstest.Setup(t)
	b.ConnectHost(t)
	c, _ := b.SignedUpUser(t, "unlucky")
	cl := b.NewCluster(t, c, "flaky")
	path := fmt.Sprintf("/clusters/%d", cl.ID)

	resp := c.Post(path, path+"/retry", nil)
	require.Equal(t, http.StatusSeeOther, resp.StatusCode)
	_, page := c.Get(path)
	require.Contains(t, page, "Only a failed cluster can be retried.")
	require.Equal(t, "pending", b.Cluster(t, cl.ID).Status)

	b.Event(t, cl.ID, "error", "Failed", "helm install: timed out waiting for the condition")
	require.NoError(t, queries.New(b.Pool).ClusterMarkFailed(context.Background(), queries.ClusterMarkFailedParams{ID: cl.ID, StatusMessage: "helm install: timed out waiting for the condition"}))
	resp, frag := c.HTMX(path + "/events?after=0")
	require.Equal(t, 286, resp.StatusCode, "failed is settled")
	require.Contains(t, frag, `data-testid="cluster-status-message" data-failure="ClusterFailureInstall"`)
	require.Contains(t, frag, "could not be installed")
	require.Regexp(t, `data-testid="error-details">[\s\S]*helm install: timed out waiting for the condition`, frag, "the raw error, folded away")
	_, page = c.Get(path)
	require.Contains(t, page, `data-status="failed"`)
	require.Contains(t, page, `data-testid="cluster-retry"`)
	require.Contains(t, page, "The cluster could not be set up.")

	resp = c.Post(path, path+"/retry", nil)
	require.Equal(t, http.StatusSeeOther, resp.StatusCode)
	require.Equal(t, path, resp.Header.Get("Location"))
	after := b.Cluster(t, cl.ID)
	require.Equal(t, "pending", after.Status)
	require.Empty(t, after.StatusMessage)
	_, page = c.Get(path)
	require.Contains(t, page, "The cluster will be set up again.")
	require.Contains(t, page, "Retry requested.")
	require.Contains(t, page, "cluster-poller")
}

func TestClusterEdit(t *testing.T) {
	t.Parallel()
	b := handlerstest.Setup(t)
	b.ConnectHost(t)
	c, _ := b.SignedUpUser(t, "editor")
	cl := b.NewCluster(t, c, "app")
	path := fmt.Sprintf("/clusters/%d", cl.ID)

	code, page := c.Get(path + "/edit")
	require.Equal(t, http.StatusOK, code)
	require.Contains(t, page, `value="app" readonly`)
	require.Contains(t, page, `<option value="v1.34.0" selected>`)

	// A description alone changes nothing on the host.
	resp := c.Post(path+"/edit", path+"/edit", url.Values{"kubernetes_version": {"v1.34.0"}, "public_access_mode": {"nodeport"}, "description": {"the app"}, "name": {"renamed"}})
	require.Equal(t, http.StatusSeeOther, resp.StatusCode, handlerstest.ReadBody(t, resp))
	got := b.Cluster(t, cl.ID)
	require.Equal(t, "the app", got.Description)
	require.Equal(t, "app", got.Name, "the name cannot change")
	require.Equal(t, cl.Generation, got.Generation)

	resp = c.Post(path+"/edit", path+"/edit", url.Values{"kubernetes_version": {"v1.20.0"}, "public_access_mode": {"nodeport"}})
	require.Equal(t, http.StatusUnprocessableEntity, resp.StatusCode)
	require.Contains(t, handlerstest.ReadBody(t, resp), `data-testid="error-kubernetes_version">Choose one of the Kubernetes versions offered.`)

	resp = c.Post(path+"/edit", path+"/edit", url.Values{"kubernetes_version": {"v1.33.4"}, "public_access_mode": {"loadbalancer"}, "description": {"the app"}})
	require.Equal(t, http.StatusSeeOther, resp.StatusCode)
	got = b.Cluster(t, cl.ID)
	require.Equal(t, "v1.33.4", got.KubernetesVersion)
	require.Equal(t, "loadbalancer", got.PublicAccessMode)
	require.Equal(t, cl.Generation+1, got.Generation)
	_, page = c.Get(path)
	require.Contains(t, page, "Your changes were saved.")
	require.Contains(t, page, "Change requested.")
}

func TestClusterDelete(t *testing.T) {
	t.Parallel()
	b := handlerstest.Setup(t)
	b.ConnectHost(t)
	c, _ := b.SignedUpUser(t, "cleaner")
	cl := b.NewCluster(t, c, "old")
	path := fmt.Sprintf("/clusters/%d", cl.ID)

	code, page := c.Get(path + "/delete")
	require.Equal(t, http.StatusOK, code)
	require.Contains(t, page, "This cannot be undone.")
	require.NotContains(t, page, `data-testid="cluster-delete-nodes"`, "no machine joined")

	// Machines that joined are named, with what deleting does to them, and
	// another user's cluster's machines are not.
	someone, _ := b.SignedUpUser(t, "cleaner-other")
	other := b.NewCluster(t, someone, "other")
	for _, n := range []struct {
		cluster int64
		name    string
	}{{cl.ID, "rack-a-1"}, {cl.ID, "rack-a-2"}, {other.ID, "not-mine"}} {
		require.NoError(t, queries.New(b.Pool).NodeUpsert(context.Background(), queries.NodeUpsertParams{
			ClusterID: n.cluster, Name: n.name, Ready: true, Conditions: []byte("[]"), Addresses: []byte("[]")}))
	}
	_, page = c.Get(path + "/delete")
	require.Contains(t, page, `data-testid="cluster-delete-nodes" data-count="2"`)
	require.Contains(t, page, "2 machines joined this cluster. Deleting it leaves them as they are")
	require.Contains(t, page, "<li><code>rack-a-1</code></li><li><code>rack-a-2</code></li>")
	require.Contains(t, page, "run its join command with --reset-only before you delete the cluster")
	require.Contains(t, page, `href="`+path+`/tokens" data-testid="cluster-delete-tokens"`)
	require.NotContains(t, page, "not-mine")

	for _, wrong := range []string{"", "OLD", "old-ish"} {
		resp := c.Post(path+"/delete", path+"/delete", url.Values{"confirm": {wrong}})
		require.Equal(t, http.StatusUnprocessableEntity, resp.StatusCode, wrong)
		body := handlerstest.ReadBody(t, resp)
		require.Contains(t, body, `data-testid="error-confirm">Type the cluster&#39;s name exactly as shown.`, wrong)
		require.Contains(t, body, `data-testid="cluster-delete-nodes" data-count="2"`)
	}
	require.False(t, b.Cluster(t, cl.ID).DeleteRequestedAt.Valid)

	resp := c.Post(path+"/delete", path+"/delete", url.Values{"confirm": {"old"}})
	require.Equal(t, http.StatusSeeOther, resp.StatusCode)
	require.Equal(t, path, resp.Header.Get("Location"))
	got := b.Cluster(t, cl.ID)
	require.Equal(t, "deleting", got.Status)
	require.True(t, got.DeleteRequestedAt.Valid)
	require.Equal(t, 2, b.ReconcileJobs(t, cl.ID), "each change enqueues a job; the worker serialises them")
	_, page = c.Get(path)
	require.Contains(t, page, "The cluster is being deleted.")
	require.Contains(t, page, "Deletion requested.")
	require.NotContains(t, page, `data-testid="cluster-delete"`)

	// Edits are over.
	resp = c.Post(path, path+"/edit", url.Values{"kubernetes_version": {"v1.33.4"}})
	require.Equal(t, http.StatusUnprocessableEntity, resp.StatusCode)
	require.Contains(t, handlerstest.ReadBody(t, resp), "This cluster is being deleted and can no longer be changed.")
	code, _ = c.Get(path + "/edit")
	require.Equal(t, http.StatusSeeOther, code)

	// The worker finishes: the page sees the end, and the cluster leaves
	// the list.
	b.Event(t, cl.ID, "info", "Deleted", "")
	require.NoError(t, queries.New(b.Pool).ClusterMarkDeleted(context.Background(), cl.ID))
	resp, frag := c.HTMX(path + "/events?after=0")
	require.Equal(t, 286, resp.StatusCode)
	require.Contains(t, frag, `data-status="deleted"`)
	require.Contains(t, frag, "The cluster was deleted.")
	_, page = c.Get("/clusters")
	require.Contains(t, page, `data-testid="clusters-empty"`)
	code, _ = c.Get(path + "/delete")
	require.Equal(t, http.StatusNotFound, code)
}

func TestClusterKubeconfigDownload(t *testing.T) {
	t.Parallel()
	b := handlerstest.Setup(t)
	b.ConnectHost(t)
	c, email := b.SignedUpUser(t, "operator")
	cl := b.NewCluster(t, c, "prod")
	path := fmt.Sprintf("/clusters/%d/kubeconfig", cl.ID)

	// A kubeconfig it cannot give is never a file: the browser goes back
	// to the cluster's page, which says why.
	unavailable := func() {
		t.Helper()
		resp, err := c.HTTP.Get(c.Base + path)
		require.NoError(t, err)
		defer resp.Body.Close()
		require.Equal(t, http.StatusSeeOther, resp.StatusCode)
		require.Equal(t, fmt.Sprintf("/clusters/%d", cl.ID), resp.Header.Get("Location"))
		require.Empty(t, resp.Header.Get("Content-Disposition"))
		require.Equal(t, "The kubeconfig cannot be downloaded now: the cluster is not ready or its control plane cannot be reached. Try again in a moment.", followFlash(t, c, resp))
	}
	unavailable()
	b.MarkReady(t, cl)
	unavailable() // its Secret is not on the host (yet)

	handlerstest.PutKubeconfigSecret(t, cl)
	_, detail := c.Get(fmt.Sprintf("/clusters/%d", cl.ID))
	require.Contains(t, detail, `href="`+path+`"`)

	resp, err := c.HTTP.Get(c.Base + path)
	require.NoError(t, err)
	defer resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode)
	require.Equal(t, `attachment; filename="prod.kubeconfig"`, resp.Header.Get("Content-Disposition"))
	require.Equal(t, "application/yaml", resp.Header.Get("Content-Type"))
	require.Equal(t, "no-store", resp.Header.Get("Cache-Control"))
	handlerstest.RequireKubeconfigFor(t, cl, []byte(handlerstest.ReadBody(t, resp)))
	require.Contains(t, b.Audits(t, b.UserID(t, email)), "cluster.kubeconfig_download")
}

// TestClusterUnreachableShown: while a ready cluster's health check cannot
// reach its control plane, the cluster's page says since when and why;
// once it answers again, the notice goes.
func TestClusterUnreachableShown(t *testing.T) {
	t.Parallel()
	b := handlerstest.Setup(t)
	ctx := context.Background()
	b.ConnectHost(t)
	c, _ := b.SignedUpUser(t, "unreachable")
	cl := b.NewCluster(t, c, "far")
	b.MarkReady(t, cl)
	page := fmt.Sprintf("/clusters/%d", cl.ID)
	_, body := c.Get(page)
	require.NotContains(t, body, `data-testid="cluster-unreachable"`)

	q := queries.New(b.Pool)
	require.NoError(t, checks.Schedule(ctx, q, cl.ID, checks.NodeHealth, time.Now()))
	rec := checks.Recorder{Q: q}
	require.NoError(t, rec.Done(ctx, cl.ID, checks.NodeHealth, time.Minute, time.Time{}, checks.Unreachable(errors.New("dial tcp 192.0.2.1:443: i/o timeout"))))
	code, body := c.Get(page)
	require.Equal(t, http.StatusOK, code)
	require.Contains(t, body, `data-testid="cluster-unreachable"`)
	require.Contains(t, body, "has not reached this cluster&#39;s control plane since")
	require.Contains(t, body, `data-testid="cluster-unreachable-note"`)
	require.Regexp(t, `data-testid="error-details">[\s\S]*dial tcp 192.0.2.1:443: i/o timeout`, body)

	require.NoError(t, rec.Done(ctx, cl.ID, checks.NodeHealth, time.Minute, time.Now().Add(time.Minute), nil))
	_, body = c.Get(page)
	require.NotContains(t, body, `data-testid="cluster-unreachable"`)
}
