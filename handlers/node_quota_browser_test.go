package handlers_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/require"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubebyon/kubebyon/internal/nodequota"
	"github.com/kubebyon/kubebyon/internal/testenv"
)

// TestNodeQuotaInBrowser: the owner switches the node quota on from the
// nodes page and the webhook configuration appears in the virtual
// cluster; switched off, it goes.
func TestNodeQuotaInBrowser(t *testing.T) {
	t.Parallel()
	b := setup(t)
	c, email := b.signedUpUser(t, "quotakeeper")
	cl, virt := b.readyVirtualCluster(t, c, "metered")
	hooks := virt.Client(t).AdmissionregistrationV1().ValidatingWebhookConfigurations()

	ctx := testenv.Browser(t)
	browserSignIn(t, ctx, b.server.URL, email, "password of quotakeeper")
	var flash, status string
	require.NoError(t, chromedp.Run(ctx,
		chromedp.Navigate(fmt.Sprintf("%s/clusters/%d", b.server.URL, cl.ID)),
		chromedp.Click(`[data-testid="cluster-nodes"]`, chromedp.ByQuery),
		chromedp.WaitVisible(`[data-testid="node-quota-enable"]`, chromedp.ByQuery),
		chromedp.Click(`[data-testid="node-quota-enable"]`, chromedp.ByQuery),
		chromedp.WaitVisible(`[data-testid="node-quota-disable"]`, chromedp.ByQuery),
		chromedp.Text(`[data-testid="flash"]`, &flash, chromedp.ByQuery),
		chromedp.Text(`[data-testid="node-quota-status"]`, &status, chromedp.ByQuery),
	))
	require.Contains(t, flash, "Node quota turned on")
	require.Contains(t, status, "Node quota is on")
	b.syncNodeQuota(t, cl.ID)
	cfg, err := hooks.Get(context.Background(), nodequota.WebhookName, metav1.GetOptions{})
	require.NoError(t, err)
	require.Len(t, cfg.Webhooks, 1)

	require.NoError(t, chromedp.Run(ctx,
		chromedp.Click(`[data-testid="node-quota-disable"]`, chromedp.ByQuery),
		chromedp.WaitVisible(`[data-testid="node-quota-enable"]`, chromedp.ByQuery),
		chromedp.Text(`[data-testid="flash"]`, &flash, chromedp.ByQuery),
		chromedp.Text(`[data-testid="node-quota-status"]`, &status, chromedp.ByQuery),
	))
	require.Contains(t, flash, "Node quota turned off")
	require.Contains(t, status, "Node quota is off")
	b.syncNodeQuota(t, cl.ID)
	_, err = hooks.Get(context.Background(), nodequota.WebhookName, metav1.GetOptions{})
	require.True(t, apierrors.IsNotFound(err), "%v", err)
}
