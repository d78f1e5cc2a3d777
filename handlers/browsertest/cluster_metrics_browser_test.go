package browsertest_test

import (
	"context"
	"fmt"
	"sync"
	"testing"

	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/require"

	"github.com/kubebyon/kubebyon/handlers/handlerstest"
	"github.com/kubebyon/kubebyon/internal/testenv"
)

// drawnCharts is what each chart of the metrics page says it drew, with
// the size of its canvas.
const drawnCharts = `[...document.querySelectorAll('.metrics-chart')].map(el => {
	const canvas = el.querySelector('canvas');
	return {
		chart: el.dataset.chart, state: el.dataset.state || '', range: el.dataset.range || '',
		points: Number(el.dataset.points || -1), canvasWidth: canvas ? canvas.getBoundingClientRect().width : 0,
	};
})`

type drawnChart struct {
	Chart       string  `json:"chart"`
	State       string  `json:"state"`
	Range       string  `json:"range"`
	Points      int     `json:"points"`
	CanvasWidth float64 `json:"canvasWidth"`
}

// watchCSP collects, from the next page on, what the Content Security
// Policy refused (window.cspViolations), and the page's uncaught
// exceptions.
func watchCSP(t *testing.T, ctx context.Context) func() []string {
	t.Helper()
	var mu sync.Mutex
	var thrown []string
	chromedp.ListenTarget(ctx, func(ev any) {
		if e, ok := ev.(*runtime.EventExceptionThrown); ok {
			mu.Lock()
			thrown = append(thrown, e.ExceptionDetails.Error())
			mu.Unlock()
		}
	})
	require.NoError(t, chromedp.Run(ctx, chromedp.ActionFunc(func(ctx context.Context) error {
		_, err := page.AddScriptToEvaluateOnNewDocument(`window.cspViolations = [];
			document.addEventListener('securitypolicyviolation', e => window.cspViolations.push(e.violatedDirective + ' ' + e.blockedURI));`).Do(ctx)
		return err
	})))
	return func() []string {
		var violations []string
		require.NoError(t, chromedp.Run(ctx, chromedp.Evaluate(`window.cspViolations || []`, &violations)))
		mu.Lock()
		defer mu.Unlock()
		return append(violations, thrown...)
	}
}

// TestClusterMetricsInBrowser opens a cluster's metrics from its page:
// the five charts draw the seeded hour, under the page's CSP; the table
// has the same points; a click on 24 h draws the 5-minute rollups
// without a page load; on a phone's screen nothing sticks out.
func TestClusterMetricsInBrowser(t *testing.T) {
	t.Parallel()
	b := handlerstest.Setup(t)
	_, email := b.SignedUpUser(t, "charter")
	cl := b.MetricsCluster(t, email, "charted")

	ctx := testenv.Browser(t)
	refused := watchCSP(t, ctx)
	browserSignIn(t, ctx, b.Server.URL, email, "password of charter")
	// Seeded now, so that the hour range holds every sample while the
	// test runs.
	times := b.SeedMetrics(t, cl.ID)
	windows := b.RollUpMetrics(t, times)

	var charts []drawnChart
	var rows, unreachable int
	var current string
	require.NoError(t, chromedp.Run(ctx,
		chromedp.EmulateViewport(1280, 900),
		chromedp.Navigate(fmt.Sprintf("%s/clusters/%d", b.Server.URL, cl.ID)),
		// The endpoint panel loads after the page and pushes the buttons
		// down: a click before it lands where the button was.
		chromedp.WaitVisible(`[data-testid="cluster-endpoint-status"]`, chromedp.ByQuery),
		chromedp.Click(`[data-testid="cluster-metrics"]`, chromedp.ByQuery),
		chromedp.WaitVisible(`[data-testid="metrics-chart-nodes"][data-state="drawn"]`, chromedp.ByQuery),
		chromedp.Evaluate(drawnCharts, &charts),
		chromedp.Text(`[data-testid="metrics-range"][aria-current="page"]`, &current, chromedp.ByQuery),
		// The table is folded away; opened, it has every point of the hour.
		chromedp.Click(`[data-testid="metrics-table-details"] summary`, chromedp.ByQuery),
		chromedp.WaitVisible(`[data-testid="metrics-table"]`, chromedp.ByQuery),
		chromedp.Evaluate(`document.querySelectorAll('[data-testid="metrics-row"]').length`, &rows),
		chromedp.Evaluate(`document.querySelectorAll('[data-testid="metrics-row-unreachable"]').length`, &unreachable),
	))
	require.Equal(t, "1 h", current)
	require.Len(t, charts, 5)
	for _, c := range charts {
		require.Equal(t, drawnChart{Chart: c.Chart, State: "drawn", Range: "1h", Points: handlerstest.SeededPoints, CanvasWidth: c.CanvasWidth}, c)
		require.Greater(t, c.CanvasWidth, 300.0, "%s: a canvas as wide as its column", c.Chart)
	}
	require.Equal(t, []string{"requests", "errors", "latency", "objects", "nodes"}, chartNames(charts))
	require.Equal(t, handlerstest.SeededPoints, rows)
	require.Equal(t, 1, unreachable, "the scrape that did not reach the control plane")

	// 24 h: the rollups, drawn in place.
	var samePage bool
	var search string
	require.NoError(t, chromedp.Run(ctx,
		chromedp.Evaluate(`window.kubebyonSamePage = true`, nil),
		chromedp.Click(`[data-testid="metrics-range"][data-range="24h"]`, chromedp.ByQuery),
		chromedp.WaitVisible(`[data-testid="metrics-chart-nodes"][data-range="24h"][data-state="drawn"]`, chromedp.ByQuery),
		chromedp.Evaluate(drawnCharts, &charts),
		chromedp.Text(`[data-testid="metrics-range"][aria-current="page"]`, &current, chromedp.ByQuery),
		chromedp.Evaluate(`document.querySelectorAll('[data-testid="metrics-row"]').length`, &rows),
		chromedp.Evaluate(`window.kubebyonSamePage === true`, &samePage),
		chromedp.Evaluate(`location.search`, &search),
	))
	require.True(t, samePage, "the range switched without a page load")
	require.Equal(t, "?range=24h", search, "the address keeps the range, for a reload")
	require.Equal(t, "24 h", current)
	require.Len(t, charts, 5)
	for _, c := range charts {
		require.Equal(t, "drawn", c.State, c.Chart)
		require.Equal(t, "24h", c.Range, c.Chart)
		require.Equal(t, windows, c.Points, "%s: the seeded hour's 5-minute windows", c.Chart)
	}
	require.Equal(t, windows, rows)
	require.Empty(t, refused(), "nothing refused by the CSP, nothing thrown")

	// On a phone's screen, charts and all.
	var out []string
	require.NoError(t, chromedp.Run(ctx,
		chromedp.EmulateViewport(390, 900),
		chromedp.Navigate(fmt.Sprintf("%s/clusters/%d/metrics", b.Server.URL, cl.ID)),
		chromedp.WaitVisible(`[data-testid="metrics-chart-nodes"][data-state="drawn"]`, chromedp.ByQuery),
		chromedp.Click(`[data-testid="metrics-table-details"] summary`, chromedp.ByQuery),
		chromedp.WaitVisible(`[data-testid="metrics-table"]`, chromedp.ByQuery),
		chromedp.Evaluate(drawnCharts, &charts),
		chromedp.Evaluate(overflowing, &out),
	))
	require.Empty(t, out, "the metrics page at 390px")
	for _, c := range charts {
		require.Equal(t, handlerstest.SeededPoints, c.Points, c.Chart)
		require.LessOrEqual(t, c.CanvasWidth, 390.0, c.Chart)
	}
	// The cluster page's actions, the metrics among them, wrap.
	require.NoError(t, chromedp.Run(ctx,
		chromedp.Navigate(fmt.Sprintf("%s/clusters/%d", b.Server.URL, cl.ID)),
		chromedp.WaitVisible(`[data-testid="cluster-metrics"]`, chromedp.ByQuery),
		chromedp.Evaluate(overflowing, &out),
	))
	require.Empty(t, out, "the cluster page at 390px")
	require.Empty(t, refused(), "nothing refused by the CSP, nothing thrown")
}

func chartNames(charts []drawnChart) []string {
	names := make([]string, len(charts))
	for i, c := range charts {
		names[i] = c.Chart
	}
	return names
}
