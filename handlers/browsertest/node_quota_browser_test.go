package browsertest_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubebyon/kubebyon/handlers/handlerstest"
	"github.com/kubebyon/kubebyon/internal/nodequota"
	"github.com/kubebyon/kubebyon/internal/testenv"
)

// TestNodeQuotaInBrowser: the owner of a cluster whose node quota the
// platform switched on (its webhook configuration is in the virtual
// cluster) sees their plan's nodes per cluster on the nodes page, with no
// switch, and follows the link to change plan.
func TestNodeQuotaInBrowser(t *testing.T) {
	t.Parallel()
	b := handlerstest.Setup(t)
	c, email := b.SignedUpUser(t, "quotakeeper")
	b.SetPlanNodes(t, email, 4)
	cl, virt := b.QuotaCluster(t, c, "metered")
	cfg, err := virt.Client(t).AdmissionregistrationV1().ValidatingWebhookConfigurations().Get(context.Background(), nodequota.WebhookName, metav1.GetOptions{})
	require.NoError(t, err)
	require.Len(t, cfg.Webhooks, 1)

	ctx := testenv.Browser(t)
	browserSignIn(t, ctx, b.Server.URL, email, "password of quotakeeper")
	var status, location string
	var switches int
	require.NoError(t, chromedp.Run(ctx,
		chromedp.Navigate(fmt.Sprintf("%s/clusters/%d", b.Server.URL, cl.ID)),
		// The endpoint panel loads after the page and pushes the buttons
		// down: a click before it lands where the button was.
		chromedp.WaitVisible(`[data-testid="cluster-endpoint-status"]`, chromedp.ByQuery),
		chromedp.Click(`[data-testid="cluster-nodes"]`, chromedp.ByQuery),
		chromedp.WaitVisible(`[data-testid="node-quota-status"]`, chromedp.ByQuery),
		chromedp.Text(`[data-testid="node-quota-status"]`, &status, chromedp.ByQuery),
		chromedp.Evaluate(`document.querySelectorAll('[data-testid="node-quota"] form, [data-testid="node-quota"] button, form[action$="/node-quota"]').length`, &switches),
		chromedp.Click(`[data-testid="node-quota-billing"]`, chromedp.ByQuery),
		// Gone with the page it was on: the plan's page, whatever it shows.
		chromedp.WaitNotPresent(`[data-testid="node-quota-billing"]`, chromedp.ByQuery),
		chromedp.Location(&location),
	))
	// The platform's address here is http (as make run's default): the
	// page says plainly that the apiserver cannot enforce the limit
	// (TestNodeQuotaWebhook, over https, shows it enforced).
	require.Contains(t, status, fmt.Sprintf("Your plan (plan-%s) allows 4 nodes per cluster. Join commands beyond that are refused, but this cluster's apiserver does not enforce it: the platform's address (KUBEBYON_BASE_URL) is not https", email))
	require.Zero(t, switches, "no switch")
	require.Equal(t, b.Server.URL+"/billing", location)
}
