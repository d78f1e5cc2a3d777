package browsertest_test

import (
	"fmt"
	"testing"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/require"

	"github.com/kubebyon/kubebyon/handlers/handlerstest"
	"github.com/kubebyon/kubebyon/internal/ingress"
	"github.com/kubebyon/kubebyon/internal/testenv"
)

// TestAdminIngressInBrowser: in the browser, at a phone's width and a
// laptop's, the admin picks ingress-nginx and saves; the page warns that
// upstream retired it, and nothing of the section sticks out of the
// screen.
func TestAdminIngressInBrowser(t *testing.T) {
	t.Parallel()
	b := handlerstest.Setup(t)
	_, email := b.SignedUpAdmin(t, "ingress-clicker")
	for _, width := range []int64{390, 1280} {
		t.Run(fmt.Sprint(width), func(t *testing.T) {
			ctx := testenv.Browser(t)
			require.NoError(t, chromedp.Run(ctx, chromedp.EmulateViewport(width, 900)))
			browserSignIn(t, ctx, b.Server.URL, email, "password of ingress-clicker")
			domain := fmt.Sprintf("apps%d.example.com", width)
			var out []string
			require.NoError(t, chromedp.Run(ctx,
				chromedp.Navigate(b.Server.URL+"/admin/edge"),
				chromedp.WaitVisible(`[data-testid="ingress-form"]`, chromedp.ByQuery),
				chromedp.SetValue(`[data-testid="ingress-controller"]`, ingress.IngressNGINX, chromedp.ByQuery),
				chromedp.SetValue(`[data-testid="ingress-apps-base-domain"]`, domain, chromedp.ByQuery),
				chromedp.Click(`[data-testid="ingress-save"]`, chromedp.ByQuery),
				chromedp.WaitVisible(`[data-testid="flash"]`, chromedp.ByQuery),
				chromedp.WaitVisible(`[data-testid="ingress-retired"]`, chromedp.ByQuery),
				chromedp.Evaluate(overflowing, &out),
			))
			require.Empty(t, out, "/admin/edge at %dpx", width)
			require.Equal(t, ingress.IngressNGINX, b.IngressSettings(t).Controller)
			require.Equal(t, domain, b.IngressSettings(t).AppsBaseDomain)
		})
	}
}
