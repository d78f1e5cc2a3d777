package browsertest_test

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/require"

	"github.com/kubebyon/kubebyon/handlers/handlerstest"
	"github.com/kubebyon/kubebyon/internal/edge"
	"github.com/kubebyon/kubebyon/internal/edgewire"
	"github.com/kubebyon/kubebyon/internal/ingress"
	"github.com/kubebyon/kubebyon/internal/testenv"
	"github.com/kubebyon/kubebyon/queries"
)

// TestClusterIngressModeInBrowser: in Chromium, on a phone's screen, the
// owner chooses the platform edge as the traffic path on the cluster
// page, sees that no route agent has reported yet, then (once a host
// node's route agent applied the cluster's route) that it is in place;
// and goes back to direct.
func TestClusterIngressModeInBrowser(t *testing.T) {
	t.Parallel()
	b := handlerstest.Setup(t)
	b.ConnectHost(t)
	ctx := context.Background()
	q := queries.New(b.Pool)
	user, email := b.SignedUpUser(t, "edge-journey")
	cl := b.NewCluster(t, user, "shop")
	b.SetIngressSettings(t)
	st, err := ingress.LoadSettings(ctx, q)
	require.NoError(t, err)
	st.GatewayClass = "eg"
	require.NoError(t, ingress.SaveSettings(ctx, q, st))

	browser := testenv.Browser(t)
	require.NoError(t, chromedp.Run(browser, chromedp.EmulateViewport(390, 900)))
	browserSignIn(t, browser, b.Server.URL, email, "password of edge-journey")
	// The cluster's Ingress tab.
	page := fmt.Sprintf("%s/clusters/%d/ingress", b.Server.URL, cl.ID)
	var flash, routes string
	var out []string
	require.NoError(t, chromedp.Run(browser,
		chromedp.Navigate(page),
		chromedp.WaitVisible(`[data-testid="cluster-ingress-mode"][data-mode="direct"] summary`, chromedp.ByQuery),
		chromedp.Click(`[data-testid="cluster-ingress-mode"] summary`, chromedp.ByQuery),
		chromedp.WaitVisible(`[data-testid="cluster-ingress-mode-edge"]`, chromedp.ByQuery),
		chromedp.Click(`[data-testid="cluster-ingress-mode-edge"]`, chromedp.ByQuery),
		chromedp.Click(`[data-testid="cluster-ingress-mode-save"]`, chromedp.ByQuery),
		chromedp.WaitVisible(`[data-testid="cluster-ingress-mode"][data-mode="edge"]`, chromedp.ByQuery),
		chromedp.Text(`[data-testid="flash"]`, &flash, chromedp.ByQuery),
		chromedp.WaitVisible(`[data-testid="cluster-ingress-routes-none"]`, chromedp.ByQuery),
		chromedp.Evaluate(overflowing, &out),
	))
	require.Contains(t, flash, "Traffic path saved.")
	require.Empty(t, out, "the cluster page at 390px")

	// Switched on, with a Ready node; a host node's route agent applies
	// the route and reports.
	require.NoError(t, chromedp.Run(browser,
		chromedp.WaitVisible(`[data-testid="cluster-ingress-enable"]`, chromedp.ByQuery),
		chromedp.Click(`[data-testid="cluster-ingress-enable"]`, chromedp.ByQuery),
		chromedp.WaitVisible(`[data-testid="cluster-ingress"][data-status="installing"]`, chromedp.ByQuery),
	))
	b.RoutedNode(t, cl, "worker-a", true, handlerstest.PodSubnet(t, cl, 0), "192.168.60.5")
	var current edgewire.TenantRoutes
	require.Eventually(t, func() bool {
		current, err = edge.DesiredRoutes(ctx, q)
		require.NoError(t, err)
		return len(current.Routes) == 1
	}, 10*time.Second, 50*time.Millisecond)
	tok := b.EdgeToken(t, "hosts")
	r := b.APICall(t, http.MethodPost, "/api/v1/edge/routes/status", tok.Value, `{"node":"host-1","version":"`+current.Version+`","in_place":1,"added":1}`)
	require.Equal(t, http.StatusNoContent, r.Status, r.Body)
	require.NoError(t, chromedp.Run(browser,
		chromedp.Navigate(page),
		chromedp.WaitVisible(`[data-testid="cluster-ingress-route-agent"][data-node="host-1"][data-state="in_place"]`, chromedp.ByQuery),
		chromedp.Text(`[data-testid="cluster-ingress-routes"]`, &routes, chromedp.ByQuery),
	))
	require.Contains(t, routes, "In place on 1 of 1 host nodes (1 routes).")

	// A host name; the Gateway's implementation has not programmed the
	// listener its routes attach to (as the edge check records it:
	// TestIngressEdge in jobs).
	var edgeWord string
	require.NoError(t, chromedp.Run(browser,
		chromedp.SetValue(`[data-testid="cluster-hostname-form"] input[name="name"]`, "shop.apps.test", chromedp.ByQuery),
		chromedp.Click(`[data-testid="cluster-hostname-add"]`, chromedp.ByQuery),
		chromedp.WaitVisible(`[data-testid="cluster-hostname"][data-hostname="shop.apps.test"]`, chromedp.ByQuery),
	))
	_, err = b.Pool.Exec(ctx, `UPDATE cluster_hostnames SET edge_status = $2 WHERE cluster_id = $1`, cl.ID,
		"Gateway listener https Programmed: Pending (waiting for the data plane)")
	require.NoError(t, err)
	_, err = b.Pool.Exec(ctx, `UPDATE cluster_ingress SET status = 'ready', ready_at = now(), edge_state = 'pending',
		edge_message = 'shop.apps.test: Gateway listener https Programmed: Pending (waiting for the data plane)' WHERE cluster_id = $1`, cl.ID)
	require.NoError(t, err)
	require.NoError(t, chromedp.Run(browser,
		chromedp.Navigate(page),
		chromedp.WaitVisible(`[data-testid="cluster-ingress-edge"][data-edge-state="pending"]`, chromedp.ByQuery),
		chromedp.Text(`[data-testid="cluster-hostname-edge"][data-edge="pending"]`, &edgeWord, chromedp.ByQuery),
		chromedp.Evaluate(overflowing, &out),
	))
	require.Contains(t, edgeWord, "Gateway listener https Programmed: Pending (waiting for the data plane)")
	require.Empty(t, out, "the cluster page at 390px, with the Gateway's status")

	// The routes could not be written: Retry now runs the check at once
	// (here the host cluster's kubeconfig is gone, so it fails again and
	// says why).
	require.NoError(t, os.Remove(b.HostKubeconfig))
	_, err = b.Pool.Exec(ctx, `UPDATE cluster_ingress SET edge_state = 'error', edge_message = 'an old error' WHERE cluster_id = $1`, cl.ID)
	require.NoError(t, err)
	var edgeMsg string
	require.NoError(t, chromedp.Run(browser,
		chromedp.Navigate(page),
		chromedp.WaitVisible(`[data-testid="cluster-ingress-edge"][data-edge-state="error"]`, chromedp.ByQuery),
		chromedp.Click(`[data-testid="cluster-ingress-edge-retry"]`, chromedp.ByQuery),
		chromedp.WaitVisible(`.flash-error[data-testid="flash"]`, chromedp.ByQuery),
		chromedp.Text(`.flash-error[data-testid="flash"]`, &flash, chromedp.ByQuery),
		chromedp.Text(`[data-testid="cluster-ingress-edge"]`, &edgeMsg, chromedp.ByQuery),
	))
	require.Contains(t, flash, "Tried again; the routes still could not be written.")
	require.Contains(t, edgeMsg, "The routes could not be written:")
	require.NotContains(t, edgeMsg, "an old error")
	var retried int
	require.NoError(t, b.Pool.QueryRow(ctx, `SELECT count(*) FROM cluster_events WHERE cluster_id = $1 AND reason = 'IngressEdgeRetried'`, cl.ID).Scan(&retried))
	require.Equal(t, 1, retried)

	// Back to direct.
	require.NoError(t, chromedp.Run(browser,
		chromedp.WaitVisible(`[data-testid="cluster-ingress-mode-direct"]`, chromedp.ByQuery),
		chromedp.Click(`[data-testid="cluster-ingress-mode-direct"]`, chromedp.ByQuery),
		chromedp.Click(`[data-testid="cluster-ingress-mode-save"]`, chromedp.ByQuery),
		chromedp.WaitVisible(`[data-testid="cluster-ingress-mode"][data-mode="direct"]`, chromedp.ByQuery),
	))
	var nodes []string
	require.NoError(t, chromedp.Run(browser, chromedp.Evaluate(`[...document.querySelectorAll('[data-testid="cluster-ingress-routes"]')].map(e => e.textContent)`, &nodes)))
	require.Empty(t, nodes, "no routes in direct mode")
}
