package browsertest_test

import (
	"context"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubebyon/kubebyon/handlers/handlerstest"
	"github.com/kubebyon/kubebyon/internal/audit"
	"github.com/kubebyon/kubebyon/internal/testenv"
	"github.com/kubebyon/kubebyon/queries"
)

// axeScript is axe-core, from npm (package.json), injected into each page
// by the test, never served by the platform.
func axeScript(t *testing.T) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "..", "node_modules", "axe-core", "axe.min.js"))
	require.NoError(t, err, "axe-core comes from npm: run make assets")
	return string(b)
}

// axeSerious runs axe-core on the page (WCAG 2.1 A and AA, and its best
// practices) and lists the serious and critical violations, each with the
// first elements it names.
const axeSerious = `(async () => {
	const r = await axe.run(document, {runOnly: {type: 'tag', values: ['wcag2a', 'wcag2aa', 'wcag21a', 'wcag21aa', 'best-practice']}});
	return r.violations.filter(v => v.impact === 'serious' || v.impact === 'critical')
		.map(v => v.id + ' (' + v.impact + '): ' + v.help + ' at ' + v.nodes.slice(0, 3).map(n => n.target.join(' ')).join(', '));
})()`

// consolePage is one page the console shows: its path, and for the main pages the
// name its screenshot is kept under.
type consolePage struct {
	path, shot string
}

// TestEveryPage visits every page of the console, as a visitor, a user
// and the admin, with data, in English and in Chinese, at a laptop's width
// (1280 px) and a phone's (390 px): nothing may stick out of the screen
// (wide tables scroll inside their own wrapper), and axe-core finds no
// serious or critical accessibility violation. Screenshots of the main
// pages go to SCREENSHOTS (default: test-output/screenshots at the
// repository's root, which git ignores), for review.
func TestEveryPage(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	b := handlerstest.SetupWorking(t)
	admin, email := b.SignedUpAdmin(t, "everypage")
	adminID := b.UserID(t, email)
	// The pages follow the browser's language.
	_, err := b.Pool.Exec(ctx, `UPDATE users SET language = '' WHERE id = $1`, adminID)
	require.NoError(t, err)
	cl, virt := b.ReadyVirtualCluster(t, admin, "production-cluster-with-a-long-name")
	kc := virt.Client(t)
	for i := range 4 {
		handlerstest.AddNode(t, kc, fmt.Sprintf("worker-%02d-rack-b.datacenter-east.example.com", i), corev1.ConditionTrue, time.Now().Add(-time.Hour))
	}
	handlerstest.AddNode(t, kc, "worker-99-down", corev1.ConditionFalse, time.Now().Add(-time.Hour))
	n, err := kc.CoreV1().Nodes().Get(ctx, "worker-00-rack-b.datacenter-east.example.com", metav1.GetOptions{})
	require.NoError(t, err)
	n.Spec.Unschedulable = true
	_, err = kc.CoreV1().Nodes().Update(ctx, n, metav1.UpdateOptions{})
	require.NoError(t, err)
	b.RunNodeHealth(t, cl.ID)
	failed := b.NewCluster(t, admin, "failed")
	require.NoError(t, queries.New(b.Pool).ClusterMarkFailed(ctx, queries.ClusterMarkFailedParams{ID: failed.ID, StatusMessage: "the control plane did not become ready within 10m0s"}))
	handlerstest.CreateJoinToken(t, admin, cl, url.Values{"description": {"rack b, second row"}, "lifetime": {"24h"}, "uses": {"unlimited"}})
	admin.CreateKey("laptop")
	require.NoError(t, audit.Record(ctx, queries.New(b.Pool), audit.Actor{Email: email, IP: "2001:db8:1234:5678::1"}, audit.Event{
		Action: "admin.settings_update", TargetType: "settings", TargetID: "runtime",
		Details: map[string]any{"changed": []string{"chartRepo", "chartVersion", "platformHost", "apiBaseDomain"}, "note": "a-very-long-value-without-any-space-to-break-it-at-0123456789abcdef0123456789abcdef"},
	}))
	var tokenID, orgID, planID int64
	require.NoError(t, b.Pool.QueryRow(ctx, `SELECT id FROM join_tokens WHERE cluster_id = $1 LIMIT 1`, cl.ID).Scan(&tokenID))
	require.NoError(t, b.Pool.QueryRow(ctx, `SELECT id FROM organizations WHERE personal_of = $1`, adminID).Scan(&orgID))
	require.NoError(t, b.Pool.QueryRow(ctx, `SELECT id FROM plans ORDER BY id LIMIT 1`).Scan(&planID))
	c, f, node := fmt.Sprintf("/clusters/%d", cl.ID), fmt.Sprintf("/clusters/%d", failed.ID), "worker-99-down"

	visitor := []consolePage{{"/", "home"}, {"/login", "login"}, {"/signup", ""}, {"/password/reset", ""}, {"/no-such-page", ""}}
	signedIn := []consolePage{
		{"/", "overview"}, {"/clusters", "clusters"}, {"/clusters/new", ""},
		{c, "cluster"}, {c + "/edit", ""}, {c + "/delete", ""}, {c + "/ingress", ""}, {c + "/metrics", ""},
		{c + "/tokens", "tokens"}, {fmt.Sprintf("%s/tokens/%d/revoke", c, tokenID), ""},
		{c + "/nodes", "nodes"}, {c + "/nodes?sort=status&dir=desc", ""}, {c + "/nodes/" + node, "node"}, {c + "/nodes/" + node + "/drain", ""}, {c + "/nodes/" + node + "/delete", ""},
		{f, "cluster-failed"}, {f + "/nodes", ""},
		{"/notifications", ""}, {"/billing", ""}, {"/orgs", ""}, {fmt.Sprintf("/orgs/%d", orgID), ""},
		{"/settings/profile", ""}, {"/settings/sign-in", ""}, {"/settings/notifications", ""}, {"/settings/api-keys", ""},
		{"/settings/security", ""}, {"/settings/security/two-factor", ""},
		{"/clusters/999999", ""},
		{"/admin", "admin-overview"}, {"/admin/users", "admin-users"}, {fmt.Sprintf("/admin/users/%d", adminID), ""},
		{"/admin/organizations", ""}, {fmt.Sprintf("/admin/organizations/%d", orgID), ""},
		{"/admin/clusters", "admin-clusters"}, {"/admin/clusters?sort=nodes&dir=desc", ""}, {"/admin/clusters/" + fmt.Sprint(cl.ID), ""}, {"/admin/clusters/" + fmt.Sprint(failed.ID), ""},
		{"/admin/plans", ""}, {fmt.Sprintf("/admin/plans/%d", planID), ""}, {"/admin/orders", ""}, {"/admin/billing", ""},
		{"/admin/edge", ""}, {"/admin/jobs", ""}, {"/admin/metrics", ""}, {"/admin/activity", ""},
		{"/admin/mail", ""}, {"/admin/notifications", ""},
		{"/admin/settings", "admin-settings"}, {"/admin/settings/sign-up", ""}, {"/admin/settings/sign-in", ""}, {"/admin/settings/branding", ""},
	}

	axe := axeScript(t)
	shots := os.Getenv("SCREENSHOTS")
	if shots == "" {
		shots = filepath.Join("..", "..", "test-output", "screenshots")
	}
	require.NoError(t, os.MkdirAll(shots, 0o755))
	for _, lang := range []string{"en", "zh-CN"} {
		for _, width := range []int64{1280, 390} {
			t.Run(fmt.Sprintf("%s/%d", lang, width), func(t *testing.T) {
				t.Parallel()
				visit := func(t *testing.T, pages []consolePage, signIn bool) {
					bctx := testenv.Browser(t)
					require.NoError(t, chromedp.Run(bctx,
						network.Enable(),
						network.SetExtraHTTPHeaders(network.Headers{"Accept-Language": lang}),
						chromedp.EmulateViewport(width, 900)))
					if signIn {
						browserSignIn(t, bctx, b.Server.URL, email, "password of everypage")
					}
					var problems []string
					for _, p := range pages {
						var overflow, violations []string
						actions := []chromedp.Action{
							chromedp.Navigate(b.Server.URL + p.path),
							chromedp.WaitReady(`body`, chromedp.ByQuery),
							// What htmx loads when the page does.
							chromedp.Poll(`!document.querySelector('.htmx-request')`, nil, chromedp.WithPollingTimeout(5*time.Second)),
							chromedp.Evaluate(overflowing, &overflow),
							chromedp.Evaluate(axe, nil),
							chromedp.Evaluate(axeSerious, &violations, func(p *runtime.EvaluateParams) *runtime.EvaluateParams { return p.WithAwaitPromise(true) }),
						}
						if p.shot != "" {
							var png []byte
							name := fmt.Sprintf("%s-%s-%d.png", p.shot, lang, width)
							actions = append(actions, chromedp.FullScreenshot(&png, 100), chromedp.ActionFunc(func(context.Context) error {
								return os.WriteFile(filepath.Join(shots, name), png, 0o644)
							}))
						}
						require.NoError(t, chromedp.Run(bctx, actions...), p.path)
						for _, o := range overflow {
							problems = append(problems, p.path+": overflow: "+o)
						}
						for _, v := range violations {
							problems = append(problems, p.path+": axe: "+v)
						}
					}
					require.Empty(t, problems, "%s at %d px:\n%s", lang, width, strings.Join(problems, "\n"))
				}
				visit(t, visitor, false)
				visit(t, signedIn, true)
			})
		}
	}
}
