package browsertest_test

import (
	"fmt"
	"testing"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/require"

	"github.com/kubebyon/kubebyon/handlers/handlerstest"
	"github.com/kubebyon/kubebyon/internal/dnsrecords"
	"github.com/kubebyon/kubebyon/internal/testenv"
)

// TestClusterDNSInBrowser: in the browser, the admin switches DNS to RFC
// 2136 and checks it; the cluster's owner then sees on the cluster page
// that its name is published and that the edge reaches it.
func TestClusterDNSInBrowser(t *testing.T) {
	t.Parallel()
	b := handlerstest.Setup(t)
	b.ConnectHost(t)
	srv := testenv.Knot(t, "clusters.test")
	_, adminEmail := b.SignedUpAdmin(t, "dns-clicker")
	user, userEmail := b.SignedUpUser(t, "dns-owner")
	cl := b.NewCluster(t, user, "dnsshop")

	ctx := testenv.Browser(t)
	browserSignIn(t, ctx, b.Server.URL, adminEmail, "password of dns-clicker")
	var result string
	require.NoError(t, chromedp.Run(ctx,
		chromedp.Navigate(b.Server.URL+"/admin/edge"),
		chromedp.SetValue(`[data-testid="dns-mode"]`, dnsrecords.ModeRFC2136, chromedp.ByQuery),
		chromedp.SendKeys(`[data-testid="dns-addresses"]`, "203.0.113.70", chromedp.ByQuery),
		chromedp.SetValue(`#server`, srv.Addr, chromedp.ByQuery),
		chromedp.SetValue(`#zone`, srv.Zone, chromedp.ByQuery),
		chromedp.SetValue(`#keyName`, srv.KeyName, chromedp.ByQuery),
		chromedp.SendKeys(`#keySecret`, srv.KeySecret, chromedp.ByQuery),
		chromedp.SendKeys(`[data-testid="dns-form"] #password`, "password of dns-clicker", chromedp.ByQuery),
		chromedp.Click(`[data-testid="dns-save"]`, chromedp.ByQuery),
		chromedp.WaitVisible(`[data-testid="dns-key-secret-set"]`, chromedp.ByQuery),
		chromedp.Click(`[data-testid="dns-check"]`, chromedp.ByQuery),
		chromedp.WaitVisible(`[data-testid="dns-check-result"]`, chromedp.ByQuery),
		chromedp.Text(`[data-testid="dns-check-result"]`, &result, chromedp.ByQuery),
	))
	require.Contains(t, result, "DNS works")

	b.SyncDNS(t, cl.ID)
	b.EdgeReport(t, "edge-one", cl.ID, 2, 0)
	owner := testenv.Browser(t)
	browserSignIn(t, owner, b.Server.URL, userEmail, "password of dns-owner")
	var dnsState, edgeState string
	require.NoError(t, chromedp.Run(owner,
		chromedp.Navigate(fmt.Sprintf("%s/clusters/%d", b.Server.URL, cl.ID)),
		chromedp.WaitVisible(`[data-testid="cluster-edge"][data-reached="true"] [data-status="Ready"]`, chromedp.ByQuery),
		chromedp.Text(`[data-testid="cluster-endpoint-status"]`, &dnsState, chromedp.ByQuery),
		chromedp.Text(`[data-testid="cluster-edge"]`, &edgeState, chromedp.ByQuery),
	))
	require.Contains(t, dnsState, "published")
	require.Contains(t, dnsState, cl.Slug+".clusters.test → 203.0.113.70")
	require.Contains(t, edgeState, "edge-one")
	require.Contains(t, edgeState, "reaches it")
}
