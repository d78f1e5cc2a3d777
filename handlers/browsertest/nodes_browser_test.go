package browsertest_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"

	"github.com/kubebyon/kubebyon/handlers/handlerstest"
	"github.com/kubebyon/kubebyon/internal/testenv"
)

// TestNodesInBrowser opens the nodes from the cluster page, cordons and
// uncordons a node, then drains it, forcing out a pod no controller
// manages, and watches without a reload the drain finish, the node's
// action turn to Uncordon, and then the node turn NotReady.
func TestNodesInBrowser(t *testing.T) {
	t.Parallel()
	b := handlerstest.SetupWorking(t)
	c, email := b.SignedUpUser(t, "helmsman")
	cl, kc := b.VirtualCluster(t, c, "fleet")
	handlerstest.AddNode(t, kc, "worker-1", corev1.ConditionTrue, time.Now().Add(-time.Hour))
	handlerstest.AddWorkloads(t, kc, "worker-1")
	handlerstest.AddBarePod(t, kc, "worker-1", "scratch")
	handlerstest.PlayKubelet(t, kc, "worker-1")
	// The list shows the nodes the health check recorded.
	b.RunNodeHealth(t, cl.ID)

	ctx := testenv.Browser(t)
	browserSignIn(t, ctx, b.Server.URL, email, "password of helmsman")
	var status, cordoned string
	require.NoError(t, chromedp.Run(ctx,
		chromedp.Navigate(fmt.Sprintf("%s/clusters/%d", b.Server.URL, cl.ID)),
		// The endpoint panel loads after the page and pushes the buttons
		// down: a click before it lands where the button was.
		chromedp.WaitVisible(`[data-testid="cluster-endpoint-status"]`, chromedp.ByQuery),
		chromedp.Click(`[data-testid="cluster-nodes"]`, chromedp.ByQuery),
		chromedp.WaitVisible(`[data-testid="node-row"][data-node="worker-1"]`, chromedp.ByQuery),
		chromedp.Text(`[data-node="worker-1"] [data-testid="node-status"]`, &status, chromedp.ByQuery),
		chromedp.Click(`[data-node="worker-1"] [data-testid="node-link"]`, chromedp.ByQuery),
		chromedp.WaitVisible(`[data-testid="node-cordon"]`, chromedp.ByQuery),
		chromedp.Click(`[data-testid="node-cordon"]`, chromedp.ByQuery),
		chromedp.WaitVisible(`[data-testid="node-cordoned"]`, chromedp.ByQuery),
		chromedp.Text(`[data-testid="node-summary"] [data-testid="node-cordoned"]`, &cordoned, chromedp.ByQuery),
	))
	require.Equal(t, "Ready", status)
	require.Equal(t, "SchedulingDisabled", cordoned)
	require.True(t, handlerstest.Unschedulable(t, kc, "worker-1"))
	require.NoError(t, chromedp.Run(ctx,
		chromedp.Click(`[data-testid="node-uncordon"]`, chromedp.ByQuery),
		chromedp.WaitVisible(`[data-testid="node-cordon"]`, chromedp.ByQuery),
	))
	require.False(t, handlerstest.Unschedulable(t, kc, "worker-1"))

	var progress string
	var samePage bool
	require.NoError(t, chromedp.Run(ctx,
		chromedp.Click(`[data-testid="node-drain"]`, chromedp.ByQuery),
		chromedp.WaitVisible(`[data-testid="node-action-form"]`, chromedp.ByQuery),
		chromedp.Click(`[data-testid="delete_emptydir_data"]`, chromedp.ByQuery),
		chromedp.Click(`[data-testid="force"]`, chromedp.ByQuery),
		chromedp.Click(`[data-testid="node-action-submit"]`, chromedp.ByQuery),
		// Not a wait for Cordon here: the job may cordon the node before
		// the page after the POST is rendered, which then shows Uncordon.
		chromedp.WaitVisible(`[data-testid="node-operation"]`, chromedp.ByQuery),
		chromedp.Evaluate(`window.kubebyonSamePage = true`, nil),
		chromedp.WaitVisible(`#node-operation[data-status="succeeded"]`, chromedp.ByQuery),
		chromedp.Text(`[data-testid="node-operation-progress"]`, &progress, chromedp.ByQuery),
		chromedp.WaitVisible(`[data-testid="node-uncordon"]`, chromedp.ByQuery),
		chromedp.Evaluate(`window.kubebyonSamePage === true`, &samePage),
	))
	require.True(t, samePage, "the drain's progress, and the cordon it put in place, arrived without a reload")
	require.Contains(t, progress, "pod/web-5d8f-a in apps evicted")
	require.Contains(t, progress, "pod/scratch in bare evicted", "forced")
	require.True(t, strings.Contains(progress, "node/worker-1 drained"), progress)
	require.Equal(t, []string{"agent-x"}, handlerstest.PodsOn(t, kc, "worker-1"))
	require.True(t, handlerstest.Unschedulable(t, kc, "worker-1"))

	// The node's kubelet reports trouble: the page shows it by itself.
	handlerstest.SetNotReady(t, kc, "worker-1", "container runtime is down")
	var message string
	require.NoError(t, chromedp.Run(ctx,
		chromedp.WaitVisible(`[data-testid="node-live"] .node-badge[data-status=NotReady]`, chromedp.ByQuery),
		chromedp.Text(`[data-type="Ready"] [data-testid="node-condition-message"]`, &message, chromedp.ByQuery),
		chromedp.Evaluate(`window.kubebyonSamePage === true`, &samePage),
	))
	require.Equal(t, "container runtime is down", message)
	require.True(t, samePage, "the node's new state arrived without a reload")

	// Back on the list, the node is cordoned already: the drain recorded
	// it, without waiting for the next health check.
	var listed string
	require.NoError(t, chromedp.Run(ctx,
		chromedp.Click(`[data-testid="cluster-nodes"]`, chromedp.ByQuery),
		chromedp.WaitVisible(`[data-node="worker-1"] [data-testid="node-cordoned"]`, chromedp.ByQuery),
		chromedp.Text(`[data-node="worker-1"] [data-testid="node-cordoned"]`, &listed, chromedp.ByQuery),
	))
	require.Equal(t, "SchedulingDisabled", listed)
}
