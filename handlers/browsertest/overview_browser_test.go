package browsertest_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"

	"github.com/kubebyon/kubebyon/handlers/handlerstest"
	"github.com/kubebyon/kubebyon/internal/testenv"
)

// TestOverviewFitsTheScreen: the user's overview (half its checklist
// done, clusters, nodes, events) and the admin overview fit a laptop's
// screen and a phone's. SCREENSHOTS=<dir> keeps a picture of each.
func TestOverviewFitsTheScreen(t *testing.T) {
	t.Parallel()
	b := handlerstest.SetupWorking(t)
	admin, email := b.SignedUpAdmin(t, "overview")
	cl, virt := b.ReadyVirtualCluster(t, admin, "overview-production-cluster-east-0123")
	handlerstest.AddNode(t, virt.Client(t), "worker-01-rack-b.datacenter-east.example.com", corev1.ConditionTrue, time.Now().Add(-time.Hour))
	handlerstest.AddNode(t, virt.Client(t), "worker-02-down", corev1.ConditionFalse, time.Now().Add(-time.Hour))
	b.RunNodeHealth(t, cl.ID)
	b.NewCluster(t, admin, "overview-second")

	pages := []struct{ path, ready string }{
		{"/", `[data-testid="overview-checklist"]`},
		{"/admin", `[data-testid="admin-checklist"]`},
	}
	shots := os.Getenv("SCREENSHOTS")
	for _, width := range []int64{1280, 390} {
		for i, p := range pages {
			t.Run(fmt.Sprintf("%d%s", width, p.path), func(t *testing.T) {
				bctx := testenv.Browser(t)
				require.NoError(t, chromedp.Run(bctx, chromedp.EmulateViewport(width, 900)))
				browserSignIn(t, bctx, b.Server.URL, email, "password of overview")
				var out []string
				actions := []chromedp.Action{
					chromedp.Navigate(b.Server.URL + p.path),
					chromedp.WaitVisible(p.ready, chromedp.ByQuery),
					chromedp.Evaluate(overflowing, &out),
				}
				if shots != "" {
					var png []byte
					actions = append(actions, chromedp.FullScreenshot(&png, 100), chromedp.ActionFunc(func(context.Context) error {
						return os.WriteFile(filepath.Join(shots, fmt.Sprintf("overview-%d-%d.png", width, i)), png, 0o644)
					}))
				}
				require.NoError(t, chromedp.Run(bctx, actions...))
				// The closed navigation drawer of a phone waits, hidden
				// (visibility: hidden), left of the screen.
				out = slices.DeleteFunc(out, func(s string) bool { return strings.HasPrefix(s, "nav[sidenav]") })
				require.Empty(t, out, "%s at %dpx", p.path, width)
			})
		}
	}
}
