package handlers_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/riverqueue/river"
	"github.com/riverqueue/river/riverdriver/riverpgxv5"
	"github.com/riverqueue/river/rivertest"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubebyon/kubebyon/handlers/handlerstest"
	"github.com/kubebyon/kubebyon/internal/clusters"
	"github.com/kubebyon/kubebyon/internal/helm"
	"github.com/kubebyon/kubebyon/internal/ingress"
	"github.com/kubebyon/kubebyon/internal/ingress/ingresstest"
	"github.com/kubebyon/kubebyon/jobs"
	"github.com/kubebyon/kubebyon/queries"
)

// TestClusterIngressSwitch: from the cluster page, managed ingress is
// switched on, installs, and becomes ready with its CNAME target shown,
// the page watching it meanwhile; switched off after a confirmation, it
// is removed. Before the admin sets an apps base domain it cannot be
// switched on, and says so.
func TestClusterIngressSwitch(t *testing.T) {
	t.Parallel()
	b := handlerstest.Setup(t)
	c, _ := b.SignedUpUser(t, "ingress")
	cl, virt := b.ReadyVirtualCluster(t, c, "shop")
	kc := virt.Client(t)
	page := fmt.Sprintf("/clusters/%d", cl.ID)
	panel := page + "/ingress"

	_, body := c.Get(page)
	require.Contains(t, body, `href="`+panel+`" data-testid="cluster-ingress-tab"`)
	require.NotContains(t, body, `data-testid="cluster-poller"`, "a ready cluster is not watched")
	_, body = c.Get(panel)
	require.Contains(t, body, `data-testid="cluster-ingress-article"`, "the Ingress tab is a page")
	require.Contains(t, body, `data-testid="cluster-ingress-tab" aria-current="page"`)
	require.Contains(t, body, `data-status="off"`)
	require.Contains(t, body, "the administrator has not set the apps base domain")
	require.NotContains(t, body, `data-testid="cluster-ingress-enable"`)
	resp := c.Post(page, panel, url.Values{"enabled": {"on"}})
	require.Equal(t, http.StatusSeeOther, resp.StatusCode)
	_, body = c.Get(page)
	require.Contains(t, body, "the administrator has not set the apps base domain", "the flash says why")
	_, err := queries.New(b.Pool).IngressGet(context.Background(), cl.ID)
	require.ErrorIs(t, err, pgx.ErrNoRows)

	b.SetIngressSettings(t)
	_, body = c.Get(panel)
	require.Contains(t, body, `data-testid="cluster-ingress-enable"`)
	resp = c.Post(page, panel, url.Values{"enabled": {"on"}})
	require.Equal(t, http.StatusSeeOther, resp.StatusCode)
	require.Equal(t, 1, b.AuditCount(t, "cluster.managed_ingress"))
	_, body = c.Get(page)
	require.Contains(t, body, "Managed ingress is being installed.")
	require.Contains(t, body, `data-testid="cluster-poller"`, "the page watches the install")
	_, body = c.Get(panel)
	require.Contains(t, body, `data-status="installing"`)
	require.Contains(t, body, `hx-trigger="every 2s"`, "the panel refreshes itself")

	require.Equal(t, river.EventKindJobSnoozed, b.WorkIngress(t, cl.ID))
	_, body = c.Get(panel)
	require.Contains(t, body, "0 of 0 nodes ready")
	require.Contains(t, body, "traefik 41.6.0")
	ingresstest.PlayRollout(t, kc, 3, 3)
	require.Equal(t, river.EventKindJobCompleted, b.WorkIngress(t, cl.ID))
	_, body = c.Get(panel)
	require.Contains(t, body, `data-status="ready"`)
	require.Contains(t, body, cl.Slug+".apps.test")
	require.NotContains(t, body, "every 2s", "nothing left to watch")
	code, body := c.Get(page + "/events?after=0")
	require.Equal(t, 286, code, "the timeline stops watching")
	require.Contains(t, body, "The ingress controller runs on its nodes.")

	// The API says the same.
	key := c.CreateKey("ingress key")
	r := b.APICall(t, http.MethodGet, fmt.Sprintf("/api/v1/clusters/%d", cl.ID), key, "")
	require.Equal(t, http.StatusOK, r.Status, r.Body)
	var got struct {
		ManagedIngress struct {
			Enabled     bool   `json:"enabled"`
			Status      string `json:"status"`
			Message     string `json:"message"`
			Controller  string `json:"controller"`
			CNAMETarget string `json:"cname_target"`
		} `json:"managed_ingress"`
	}
	require.NoError(t, json.Unmarshal([]byte(r.Body), &got))
	require.True(t, got.ManagedIngress.Enabled)
	require.Equal(t, "ready", got.ManagedIngress.Status)
	require.Equal(t, "3 of 3 nodes", got.ManagedIngress.Message)
	require.Equal(t, "traefik", got.ManagedIngress.Controller)
	require.Equal(t, cl.Slug+".apps.test", got.ManagedIngress.CNAMETarget)

	// A host name's certificate, as the check records it, on the panel
	// and in the API.
	resp = c.Post(page, panel+"/hostnames", url.Values{"name": {"shop.example.net"}})
	require.Equal(t, http.StatusSeeOther, resp.StatusCode)
	// Valid for 90 days from the run: no date of the calendar in it.
	notAfter := time.Now().UTC().Add(90 * 24 * time.Hour).Truncate(time.Second).Format(time.RFC3339)
	_, err = b.Pool.Exec(context.Background(), `UPDATE cluster_hostnames SET state = 'verified', cert_state = 'ready', cert_not_after = $1 WHERE name = 'shop.example.net'`, notAfter)
	require.NoError(t, err)
	_, body = c.Get(panel)
	require.Contains(t, body, `data-cert="ready"`)
	require.Contains(t, body, "ready, valid until")
	r = b.APICall(t, http.MethodGet, fmt.Sprintf("/api/v1/clusters/%d", cl.ID), key, "")
	require.Contains(t, r.Body, `"certificate":{"state":"ready","not_after":"`+notAfter+`"}`)
	_, err = b.Pool.Exec(context.Background(), `UPDATE cluster_hostnames SET cert_state = 'error', cert_error = '403 urn:ietf:params:acme:error:unauthorized' WHERE name = 'shop.example.net'`)
	require.NoError(t, err)
	_, body = c.Get(panel)
	require.Contains(t, body, `data-cert="error"`)
	require.Contains(t, body, "acme:error:unauthorized")

	// Off, after the confirmation.
	_, body = c.Get(panel)
	require.Contains(t, body, `data-testid="cluster-ingress-disable"`)
	_, body = c.Get(panel + "/disable")
	require.Contains(t, body, "<code>shop.example.net</code>", "the names that stop being served")
	require.Contains(t, body, "custom resource definitions")
	resp = c.Post(panel+"/disable", panel, url.Values{"enabled": {"off"}})
	require.Equal(t, http.StatusSeeOther, resp.StatusCode)
	_, body = c.Get(panel)
	require.Contains(t, body, `data-status="removing"`)
	require.Equal(t, river.EventKindJobCompleted, b.WorkIngress(t, cl.ID))
	_, body = c.Get(panel)
	require.Contains(t, body, `data-status="off"`)
	list, err := kc.AppsV1().DaemonSets(ingress.Namespace).List(context.Background(), metav1.ListOptions{})
	require.NoError(t, err)
	require.Empty(t, list.Items, "nothing of ours is left")
	require.Equal(t, 2, b.AuditCount(t, "cluster.managed_ingress"))
}

// TestClusterIngressAPI: PATCH managed_ingress switches it and answers
// with its state; without an apps base domain it is a 422 that says why.
func TestClusterIngressAPI(t *testing.T) {
	t.Parallel()
	b := handlerstest.Setup(t)
	c, _ := b.SignedUpUser(t, "ingressapi")
	cl, _ := b.ReadyVirtualCluster(t, c, "api")
	key := c.CreateKey("key")
	path := fmt.Sprintf("/api/v1/clusters/%d", cl.ID)

	// Off when it was never on: nothing happens.
	r := b.APICall(t, http.MethodPatch, path, key, `{"managed_ingress":false}`)
	require.Equal(t, http.StatusOK, r.Status, r.Body)
	require.Contains(t, r.Body, `"managed_ingress":{"enabled":false,"status":"off"`)
	_, err := queries.New(b.Pool).IngressGet(context.Background(), cl.ID)
	require.ErrorIs(t, err, pgx.ErrNoRows, "nothing was written")

	r = b.APICall(t, http.MethodPatch, path, key, `{"managed_ingress":true}`)
	require.Equal(t, http.StatusUnprocessableEntity, r.Status, r.Body)
	require.Contains(t, r.Body, `"code":"not_configured"`)
	require.Contains(t, r.Body, "apps base domain")

	b.SetIngressSettings(t)
	r = b.APICall(t, http.MethodPatch, path, key, `{"managed_ingress":true,"description":"the shop"}`)
	require.Equal(t, http.StatusOK, r.Status, r.Body)
	require.Contains(t, r.Body, `"managed_ingress":{"enabled":true,"status":"installing"`)
	require.Contains(t, r.Body, `"description":"the shop"`)
	var queued int
	require.NoError(t, b.Pool.QueryRow(context.Background(), `SELECT count(*) FROM river_job WHERE kind = 'ingress_reconcile' AND (args->>'cluster_id')::bigint = $1`, cl.ID).Scan(&queued))
	require.Equal(t, 1, queued)
	// The same again changes nothing and queues nothing.
	r = b.APICall(t, http.MethodPatch, path, key, `{"managed_ingress":true}`)
	require.Equal(t, http.StatusOK, r.Status, r.Body)
	require.NoError(t, b.Pool.QueryRow(context.Background(), `SELECT count(*) FROM river_job WHERE kind = 'ingress_reconcile' AND (args->>'cluster_id')::bigint = $1`, cl.ID).Scan(&queued))
	require.Equal(t, 1, queued)
	r = b.APICall(t, http.MethodPatch, path, key, `{"managed_ingress":false}`)
	require.Equal(t, http.StatusOK, r.Status, r.Body)
	require.Contains(t, r.Body, `"managed_ingress":{"enabled":false,"status":"removing"`)
}

// TestClusterIngressFailure: a failed install shows its error and a
// Retry, which starts it again.
func TestClusterIngressFailure(t *testing.T) {
	t.Parallel()
	b := handlerstest.Setup(t)
	c, _ := b.SignedUpUser(t, "ingressfail")
	cl, _ := b.ReadyVirtualCluster(t, c, "fail")
	page := fmt.Sprintf("/clusters/%d", cl.ID)
	panel := page + "/ingress"
	b.SetIngressSettings(t)
	resp := c.Post(page, panel, url.Values{"enabled": {"on"}})
	require.Equal(t, http.StatusSeeOther, resp.StatusCode)
	// The chart directory is gone: the install fails.
	st := ingress.DefaultSettings()
	st.ChartPath, st.AppsBaseDomain = t.TempDir()+"/gone", "apps.test"
	b2, err := json.Marshal(st)
	require.NoError(t, err)
	_, err = b.Pool.Exec(context.Background(), `UPDATE settings SET value = $1 WHERE key = 'ingress'`, b2)
	require.NoError(t, err)
	ctx := context.Background()
	w := rivertest.NewWorker(t, riverpgxv5.New(b.Pool), &river.Config{}, &jobs.IngressReconcileWorker{
		Pool: b.Pool, Logger: slog.New(slog.NewTextHandler(io.Discard, nil)), Charts: &helm.Charts{}, Box: b.Box,
		VirtualConfig: (&clusters.Service{Pool: b.Pool, Box: b.Box, KubeconfigPath: b.HostKubeconfig}).VirtualConfig,
	})
	tx, err := b.Pool.Begin(ctx)
	require.NoError(t, err)
	_, err = w.Work(ctx, t, tx, ingress.ReconcileArgs{ClusterID: cl.ID}, nil)
	require.ErrorContains(t, err, "gone", "River retries it")
	require.NoError(t, tx.Rollback(ctx))

	_, body := c.Get(panel)
	require.Contains(t, body, `data-status="error"`)
	require.Contains(t, body, `data-testid="cluster-ingress-message"`)
	require.Contains(t, body, "gone")
	require.Contains(t, body, `data-testid="cluster-ingress-retry"`)
	resp = c.Post(page, panel+"/retry", nil)
	require.Equal(t, http.StatusSeeOther, resp.StatusCode)
	_, body = c.Get(panel)
	require.Contains(t, body, `data-status="installing"`)
	resp = c.Post(page, panel+"/retry", nil)
	require.Equal(t, http.StatusSeeOther, resp.StatusCode)
	_, body = c.Get(page)
	require.Contains(t, body, "Only a managed ingress that failed can be retried.")
}

// TestNodeIngressForm: on a node's page the user marks it as an ingress
// node and gives it a public address: the Node gets the label and the
// annotation, the page shows them; a bad address is refused at its field.
func TestNodeIngressForm(t *testing.T) {
	t.Parallel()
	b := handlerstest.Setup(t)
	c, _ := b.SignedUpUser(t, "ingressnode")
	cl, virt := b.ReadyVirtualCluster(t, c, "edge")
	kc := virt.Client(t)
	ctx := context.Background()
	_, err := kc.CoreV1().Nodes().Create(ctx, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "rack-1"}}, metav1.CreateOptions{})
	require.NoError(t, err)
	page := fmt.Sprintf("/clusters/%d/nodes/rack-1", cl.ID)

	_, body := c.Get(page)
	require.Contains(t, body, `data-testid="node-ingress-form"`)
	require.NotContains(t, body, `data-testid="node-ingress-badge"`)

	resp := c.Post(page, page+"/ingress", url.Values{"ingress": {"on"}, "public_address": {"300.1.2.3"}})
	require.Equal(t, http.StatusUnprocessableEntity, resp.StatusCode)
	body = handlerstest.ReadBody(t, resp)
	require.Contains(t, body, `data-testid="error-public_address"`)
	require.Contains(t, body, "Enter an IPv4 or IPv6 address.")
	require.Contains(t, body, `value="300.1.2.3"`, "what was typed stays")
	n, err := kc.CoreV1().Nodes().Get(ctx, "rack-1", metav1.GetOptions{})
	require.NoError(t, err)
	require.NotContains(t, n.Labels, ingress.NodeLabel, "nothing was changed")

	resp = c.Post(page, page+"/ingress", url.Values{"ingress": {"on"}, "public_address": {" 203.0.113.7 "}})
	require.Equal(t, http.StatusSeeOther, resp.StatusCode, handlerstest.ReadBody(t, resp))
	n, err = kc.CoreV1().Nodes().Get(ctx, "rack-1", metav1.GetOptions{})
	require.NoError(t, err)
	require.Equal(t, "true", n.Labels[ingress.NodeLabel])
	require.Equal(t, "203.0.113.7", n.Annotations[ingress.PublicAddressAnnotation])
	_, body = c.Get(page)
	require.Contains(t, body, `data-testid="node-ingress-badge"`)
	require.Contains(t, body, `value="203.0.113.7"`)
	require.Equal(t, 1, b.AuditCount(t, "node.ingress"))
	row, err := queries.New(b.Pool).NodeGet(ctx, queries.NodeGetParams{ClusterID: cl.ID, Name: "rack-1"})
	require.NoError(t, err)
	require.True(t, row.Ingress)
	require.Equal(t, "203.0.113.7", row.PublicAddress)

	// Unmarked, address cleared.
	resp = c.Post(page, page+"/ingress", url.Values{"public_address": {""}})
	require.Equal(t, http.StatusSeeOther, resp.StatusCode)
	n, err = kc.CoreV1().Nodes().Get(ctx, "rack-1", metav1.GetOptions{})
	require.NoError(t, err)
	require.NotContains(t, n.Labels, ingress.NodeLabel)
	require.NotContains(t, n.Annotations, ingress.PublicAddressAnnotation)
}

// TestClusterHostnames: from the panel the user binds a host name, sees
// the record to create, checks it, and removes it; a name another tenant
// holds is refused with a message that says so. The API does the same.
func TestClusterHostnames(t *testing.T) {
	t.Parallel()
	b := handlerstest.Setup(t)
	c, _ := b.SignedUpUser(t, "hostnames")
	cl, _ := b.ReadyVirtualCluster(t, c, "shop")
	b.SetIngressSettings(t)
	page := fmt.Sprintf("/clusters/%d", cl.ID)
	panel := page + "/ingress"
	resp := c.Post(page, panel+"/hostnames", url.Values{"name": {"shop.example.com"}})
	require.Equal(t, http.StatusSeeOther, resp.StatusCode)
	_, body := c.Get(page)
	require.Contains(t, body, "Switch managed ingress on first.")

	resp = c.Post(page, panel, url.Values{"enabled": {"on"}})
	require.Equal(t, http.StatusSeeOther, resp.StatusCode)
	_, body = c.Get(panel)
	require.Contains(t, body, `data-testid="cluster-hostname-form"`)
	resp = c.Post(page, panel+"/hostnames", url.Values{"name": {"Shop.Example.com"}})
	require.Equal(t, http.StatusSeeOther, resp.StatusCode)
	_, body = c.Get(panel)
	require.Contains(t, body, `data-hostname="shop.example.com"`)
	require.Contains(t, body, `data-state="pending"`)
	require.Contains(t, body, "shop.example.com CNAME "+cl.Slug+".apps.test")
	require.Equal(t, 1, b.AuditCount(t, "cluster.hostname_add"))

	// Check now asks DNS (the system's resolver: .example.com has no such
	// record), and says so.
	resp = c.Post(page, panel+"/hostnames/check", nil)
	require.Equal(t, http.StatusSeeOther, resp.StatusCode)
	_, body = c.Get(page)
	require.Contains(t, body, "Host names checked.")

	// Another tenant cannot take it.
	other, _ := b.SignedUpUser(t, "hostnames-other")
	theirs, _ := b.ReadyVirtualCluster(t, other, "theirs")
	theirPage := fmt.Sprintf("/clusters/%d", theirs.ID)
	resp = other.Post(theirPage, theirPage+"/ingress", url.Values{"enabled": {"on"}})
	require.Equal(t, http.StatusSeeOther, resp.StatusCode)
	resp = other.Post(theirPage, theirPage+"/ingress/hostnames", url.Values{"name": {"shop.example.com"}})
	require.Equal(t, http.StatusSeeOther, resp.StatusCode)
	_, body = other.Get(theirPage)
	require.Contains(t, body, "That host name is already bound to a cluster on this platform.")
	key := other.CreateKey("other key")
	r := b.APICall(t, http.MethodPost, fmt.Sprintf("/api/v1/clusters/%d/hostnames", theirs.ID), key, `{"name":"shop.example.com"}`)
	require.Equal(t, http.StatusUnprocessableEntity, r.Status, r.Body)
	require.Contains(t, r.Body, "already bound")

	// The API: add, list, remove.
	r = b.APICall(t, http.MethodPost, fmt.Sprintf("/api/v1/clusters/%d/hostnames", theirs.ID), key, `{"name":"api.example.org"}`)
	require.Equal(t, http.StatusCreated, r.Status, r.Body)
	require.Contains(t, r.Body, `"name":"api.example.org","managed":false,"state":"pending"`)
	r = b.APICall(t, http.MethodGet, fmt.Sprintf("/api/v1/clusters/%d", theirs.ID), key, "")
	require.Contains(t, r.Body, `"hostnames":[{"name":"api.example.org"`)
	r = b.APICall(t, http.MethodDelete, fmt.Sprintf("/api/v1/clusters/%d/hostnames/api.example.org", theirs.ID), key, "")
	require.Equal(t, http.StatusNoContent, r.Status, r.Body)
	r = b.APICall(t, http.MethodDelete, fmt.Sprintf("/api/v1/clusters/%d/hostnames/api.example.org", theirs.ID), key, "")
	require.Equal(t, http.StatusNotFound, r.Status, r.Body)

	// The confirmation to switch off lists the names; removing one.
	_, body = c.Get(panel + "/disable")
	require.Contains(t, body, "<code>shop.example.com</code>")
	resp = c.Post(page, panel+"/hostnames/remove", url.Values{"name": {"shop.example.com"}})
	require.Equal(t, http.StatusSeeOther, resp.StatusCode)
	_, body = c.Get(panel)
	require.NotContains(t, body, `data-hostname="shop.example.com"`)
}
