package browsertest_test

import (
	"context"
	"io"
	"net/http"
	"net/url"
	"regexp"
	"strconv"
	"testing"

	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/require"

	"github.com/kubebyon/kubebyon/handlers/handlerstest"
	"github.com/kubebyon/kubebyon/internal/testenv"
	"github.com/kubebyon/kubebyon/queries"
)

var clusterPageURL = regexp.MustCompile(`/clusters/(\d+)$`)

// TestClusterInBrowser creates a cluster in the form, then plays the
// reconcile worker: the detail page shows its events and, once ready, the
// kubeconfig button, without being reloaded.
func TestClusterInBrowser(t *testing.T) {
	t.Parallel()
	b := handlerstest.Setup(t)
	b.ConnectHost(t)
	_, email := b.SignedUpUser(t, "captain")
	ctx := testenv.Browser(t)
	browserSignIn(t, ctx, b.Server.URL, email, "password of captain")

	var location, status string
	require.NoError(t, chromedp.Run(ctx,
		chromedp.Navigate(b.Server.URL+"/clusters"),
		chromedp.WaitVisible(`[data-testid="clusters-empty"]`, chromedp.ByQuery),
		chromedp.Click(`[data-testid="cluster-create-link"]`, chromedp.ByQuery),
		chromedp.WaitVisible(`[data-testid="cluster-form"]`, chromedp.ByQuery),
		chromedp.SendKeys(`#name`, "voyager", chromedp.ByQuery),
		chromedp.SetValue(`#kubernetes_version`, "v1.33.4", chromedp.ByQuery),
		chromedp.SendKeys(`#description`, "made in the browser", chromedp.ByQuery),
		chromedp.Submit(`[data-testid="cluster-form"]`, chromedp.ByQuery),
		chromedp.WaitVisible(`#cluster-state`, chromedp.ByQuery),
		chromedp.Location(&location),
		chromedp.Text(`#cluster-state [data-testid="cluster-status"]`, &status, chromedp.ByQuery),
		chromedp.WaitVisible(`[data-reason="Created"]`, chromedp.ByQuery),
		// Survives only if the page is never reloaded.
		chromedp.Evaluate(`window.kubebyonSamePage = true`, nil),
	))
	require.Equal(t, "Pending", status)
	m := clusterPageURL.FindStringSubmatch(location)
	require.NotNil(t, m, location)
	id, err := strconv.ParseInt(m[1], 10, 64)
	require.NoError(t, err)
	cl := b.Cluster(t, id)
	require.Equal(t, "voyager", cl.Name)
	require.Equal(t, "v1.33.4", cl.KubernetesVersion)
	require.Equal(t, "made in the browser", cl.Description)

	// The worker starts.
	b.Event(t, id, "info", "Provisioning", "")
	require.NoError(t, queries.New(b.Pool).ClusterSetStatus(context.Background(), queries.ClusterSetStatusParams{ID: id, Status: "provisioning"}))
	require.NoError(t, chromedp.Run(ctx,
		chromedp.WaitVisible(`[data-reason="Provisioning"]`, chromedp.ByQuery),
		chromedp.WaitVisible(`#cluster-state [data-status="provisioning"]`, chromedp.ByQuery),
	))

	// And finishes.
	handlerstest.PutKubeconfigSecret(t, cl)
	b.Event(t, id, "info", "Installing", "")
	b.MarkReady(t, cl)
	var href, endpoint string
	var samePage, polling bool
	var events []string
	require.NoError(t, chromedp.Run(ctx,
		chromedp.WaitVisible(`[data-testid="cluster-kubeconfig"]`, chromedp.ByQuery),
		chromedp.Text(`#cluster-state [data-testid="cluster-status"]`, &status, chromedp.ByQuery),
		chromedp.Text(`[data-testid="cluster-endpoint"]`, &endpoint, chromedp.ByQuery),
		chromedp.AttributeValue(`[data-testid="cluster-kubeconfig"]`, "href", &href, nil, chromedp.ByQuery),
		chromedp.Evaluate(`window.kubebyonSamePage === true`, &samePage),
		chromedp.Evaluate(`document.getElementById('cluster-poller') !== null`, &polling),
		chromedp.Evaluate(`[...document.querySelectorAll('[data-testid="cluster-event"]')].map(e => e.dataset.reason)`, &events),
	))
	require.Equal(t, "Ready", status)
	require.Equal(t, "https://"+cl.Slug+".clusters.test", endpoint)
	require.True(t, samePage, "the page updated itself")
	require.False(t, polling, "polling stopped once the cluster was ready")
	require.Equal(t, []string{"Created", "Provisioning", "Installing", "Ready"}, events, "each event once, in order")

	// Download with the browser's session.
	var cookies []*network.Cookie
	require.NoError(t, chromedp.Run(ctx, chromedp.ActionFunc(func(ctx context.Context) error {
		var err error
		cookies, err = network.GetCookies().WithURLs([]string{b.Server.URL}).Do(ctx)
		return err
	})))
	c := b.Client(t)
	u, err := url.Parse(b.Server.URL)
	require.NoError(t, err)
	var jar []*http.Cookie
	for _, ck := range cookies {
		jar = append(jar, &http.Cookie{Name: ck.Name, Value: ck.Value})
	}
	c.HTTP.Jar.SetCookies(u, jar)
	resp, err := c.HTTP.Get(b.Server.URL + href)
	require.NoError(t, err)
	defer resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode)
	require.Equal(t, `attachment; filename="voyager.kubeconfig"`, resp.Header.Get("Content-Disposition"))
	raw, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	handlerstest.RequireKubeconfigFor(t, cl, raw)
}
