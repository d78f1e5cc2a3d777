package browsertest_test

import (
	"context"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubebyon/kubebyon/handlers/handlerstest"
	"github.com/kubebyon/kubebyon/internal/audit"
	"github.com/kubebyon/kubebyon/internal/testenv"
	"github.com/kubebyon/kubebyon/queries"
)

// overflowing lists what sticks out of the viewport: the page itself when
// it scrolls sideways, and every element whose box passes an edge of the
// viewport without a scrolling ancestor (a table's wrapper) to hold it; at
// 1280 px and more, also a table wider than its wrapper. Badges and the
// dates in tables must each stay on one line, and no part of a
// description's value is drawn over another.
const overflowing = `(() => {
	const vw = window.innerWidth, out = [];
	const name = el => el.tagName.toLowerCase() + (el.dataset.testid ? '[' + el.dataset.testid + ']' : '') + (el.className && typeof el.className === 'string' ? '.' + el.className.trim().split(/\s+/).join('.') : '');
	if (document.documentElement.scrollWidth > vw) {
		out.push('the page is ' + document.documentElement.scrollWidth + 'px wide');
	}
	const scrolls = el => {
		for (let p = el.parentElement; p && p !== document.body; p = p.parentElement) {
			if (/(auto|scroll)/.test(getComputedStyle(p).overflowX)) return true;
		}
		return false;
	};
	for (const el of document.body.querySelectorAll('*')) {
		const r = el.getBoundingClientRect();
		if (r.width === 0 || r.height === 0 || scrolls(el)) continue;
		if (r.right > vw + 0.5 || r.left < -0.5) {
			out.push(name(el) + ' spans ' + Math.round(r.left) + '..' + Math.round(r.right));
		}
	}
	// On a laptop's screen the tables fit: their wrappers need not scroll.
	if (vw >= 1280) {
		for (const el of document.querySelectorAll('.overflow-auto')) {
			if (el.scrollWidth > el.clientWidth) out.push(name(el.firstElementChild) + ' is ' + el.scrollWidth + 'px in ' + el.clientWidth + 'px');
		}
	}
	for (const el of document.querySelectorAll('.badge, .node-badge, .cluster-badge, .admin-badge, td time')) {
		const r = el.getBoundingClientRect(), fs = parseFloat(getComputedStyle(el).fontSize);
		if (r.height > 2.2 * fs) out.push(name(el) + ' wraps: ' + Math.round(r.height) + 'px high');
	}
	// Nothing in a description list is drawn over anything else in it (a
	// hint over its value).
	const box = n => {
		if (n.nodeType === Node.TEXT_NODE) {
			if (!n.textContent.trim()) return null;
			const r = document.createRange();
			r.selectNodeContents(n);
			return r.getBoundingClientRect();
		}
		return n.nodeType === Node.ELEMENT_NODE && n.tagName !== 'BR' ? n.getBoundingClientRect() : null;
	};
	for (const dd of document.querySelectorAll('dl dd')) {
		const parts = [...dd.childNodes].map(n => [n, box(n)]).filter(([, r]) => r && r.width > 0 && r.height > 0);
		for (let i = 0; i < parts.length; i++) {
			for (let j = i + 1; j < parts.length; j++) {
				const a = parts[i][1], b = parts[j][1];
				const w = Math.min(a.right, b.right) - Math.max(a.left, b.left), h = Math.min(a.bottom, b.bottom) - Math.max(a.top, b.top);
				if (w > 1 && h > 1) out.push((parts[j][0].nodeType === Node.ELEMENT_NODE ? name(parts[j][0]) : 'text') + ' is drawn over ' + (parts[i][0].nodeType === Node.ELEMENT_NODE ? name(parts[i][0]) : 'text') + ' by ' + Math.round(h) + 'px');
			}
		}
	}
	return out.slice(0, 20);
})()`

// TestLayoutFitsTheScreen visits the main pages, with data, at a laptop's
// width and a phone's: nothing may stick out of the screen, wide tables
// scroll inside their own wrapper. SCREENSHOTS=<dir> keeps a picture of
// each page.
func TestLayoutFitsTheScreen(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	b := handlerstest.SetupWorking(t)
	admin, email := b.SignedUpAdmin(t, "layout")
	cl, virt := b.ReadyVirtualCluster(t, admin, "layout-production-cluster")
	kc := virt.Client(t)
	for i := range 6 {
		handlerstest.AddNode(t, kc, fmt.Sprintf("worker-%02d-rack-b.datacenter-east.example.com", i), corev1.ConditionTrue, time.Now().Add(-time.Hour))
	}
	handlerstest.AddNode(t, kc, "worker-99-down", corev1.ConditionFalse, time.Now().Add(-time.Hour))
	n, err := kc.CoreV1().Nodes().Get(ctx, "worker-00-rack-b.datacenter-east.example.com", metav1.GetOptions{})
	require.NoError(t, err)
	n.Spec.Unschedulable = true
	_, err = kc.CoreV1().Nodes().Update(ctx, n, metav1.UpdateOptions{})
	require.NoError(t, err)
	// The nodes page lists the health check's snapshot.
	b.RunNodeHealth(t, cl.ID)
	failed := b.NewCluster(t, admin, "layout-failed")
	err = queries.New(b.Pool).ClusterMarkFailed(ctx, queries.ClusterMarkFailedParams{ID: failed.ID, StatusMessage: "the control plane did not become ready within 10m0s"})
	require.NoError(t, err)
	handlerstest.CreateJoinToken(t, admin, cl, url.Values{"description": {"rack b, second row"}, "lifetime": {"24h"}, "uses": {"unlimited"}})
	require.NoError(t, audit.Record(ctx, queries.New(b.Pool), audit.Actor{Email: email, IP: "2001:db8:1234:5678::1"}, audit.Event{
		Action: "admin.settings_update", TargetType: "settings", TargetID: "runtime",
		Details: map[string]any{"changed": []string{"chartRepo", "chartVersion", "platformHost", "apiBaseDomain", "allowedVersions", "nodePortMin", "nodePortMax"}, "note": "a-very-long-value-without-any-space-to-break-it-at-0123456789abcdef0123456789abcdef"},
	}))

	pages := []struct {
		path, ready string
	}{
		{"/clusters", `[data-testid="clusters"]`},
		{fmt.Sprintf("/clusters/%d", cl.ID), `[data-testid="cluster-events"]`},
		{fmt.Sprintf("/clusters/%d", failed.ID), `[data-testid="cluster-events"]`},
		{fmt.Sprintf("/clusters/%d/nodes", cl.ID), `[data-testid="node-row"][data-node="worker-99-down"]`},
		{fmt.Sprintf("/clusters/%d/tokens", cl.ID), `[data-testid="join-token"]`},
		{"/admin/users", `[data-testid="admin-users-results"]`},
		{"/admin/clusters", `[data-testid="admin-clusters"]`},
		{fmt.Sprintf("/admin/clusters/%d", failed.ID), `[data-testid="admin-cluster-delete-form"]`},
		{fmt.Sprintf("/admin/clusters/%d", cl.ID), `[data-testid="admin-cluster-tokens"]`},
		{"/admin/activity", `[data-testid="activity-details"]`},
		{"/admin/settings", `[data-testid="settings-form"]`},
	}
	shots := os.Getenv("SCREENSHOTS")
	for _, width := range []int64{1280, 390} {
		for i, p := range pages {
			// A browser per page: a slow machine stays within its deadline.
			t.Run(fmt.Sprintf("%d%s", width, p.path), func(t *testing.T) {
				bctx := testenv.Browser(t)
				require.NoError(t, chromedp.Run(bctx, chromedp.EmulateViewport(width, 900)))
				browserSignIn(t, bctx, b.Server.URL, email, "password of layout")
				actions := []chromedp.Action{
					chromedp.Navigate(b.Server.URL + p.path),
					chromedp.WaitVisible(p.ready, chromedp.ByQuery),
				}
				if p.path == "/admin/settings" {
					// The permission table comes with a test of the connection.
					actions = append(actions,
						chromedp.SetUploadFiles(`#hostKubeconfigFile`, []string{b.HostKubeconfig}, chromedp.ByQuery),
						chromedp.Click(`[data-testid="settings-test"]`, chromedp.ByQuery),
						chromedp.WaitVisible(`[data-testid="settings-permissions"]`, chromedp.ByQuery))
				}
				var out []string
				actions = append(actions, chromedp.Evaluate(overflowing, &out))
				if shots != "" {
					var png []byte
					actions = append(actions, chromedp.FullScreenshot(&png, 100), chromedp.ActionFunc(func(context.Context) error {
						return os.WriteFile(filepath.Join(shots, fmt.Sprintf("%d-%d.png", width, i)), png, 0o644)
					}))
				}
				require.NoError(t, chromedp.Run(bctx, actions...))
				require.Empty(t, out, "%s at %dpx", p.path, width)
			})
		}
	}
}
