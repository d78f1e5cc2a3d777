package browsertest_test

import (
	"context"
	"testing"
	"time"

	"github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/chromedp"
	"github.com/pquerna/otp/totp"
	"github.com/stretchr/testify/require"

	"github.com/kubebyon/kubebyon/handlers/handlerstest"
	"github.com/kubebyon/kubebyon/internal/testenv"
)

// TestTwoFactorInBrowser: a user sets up two-factor authentication from
// the security settings at phone width (QR code, secret, a code from the
// app), sees their recovery codes once, and the next sign-in asks for a
// code. The recovery codes page and the code page fit the screen and pass
// axe-core.
func TestTwoFactorInBrowser(t *testing.T) {
	t.Parallel()
	b := handlerstest.Setup(t)
	_, email := b.SignedUpUser(t, "twofactorbrowser")
	password := "password of twofactorbrowser"
	axe := axeScript(t)
	fits := func(ctx context.Context, page string) {
		t.Helper()
		var overflow, violations []string
		require.NoError(t, chromedp.Run(ctx,
			chromedp.Evaluate(overflowing, &overflow),
			chromedp.Evaluate(axe, nil),
			chromedp.Evaluate(axeSerious, &violations, func(p *runtime.EvaluateParams) *runtime.EvaluateParams { return p.WithAwaitPromise(true) }),
		))
		require.Empty(t, overflow, page)
		require.Empty(t, violations, page)
	}

	ctx := testenv.Browser(t)
	require.NoError(t, chromedp.Run(ctx, chromedp.EmulateViewport(390, 900)))
	browserSignIn(t, ctx, b.Server.URL, email, password)
	var secret string
	var codes int
	require.NoError(t, chromedp.Run(ctx,
		chromedp.Navigate(b.Server.URL+"/settings/security"),
		chromedp.Click(`[data-testid="two-factor-setup"]`, chromedp.ByQuery),
		chromedp.WaitVisible(`[data-testid="two-factor-qr"]`, chromedp.ByQuery),
		chromedp.Value(`#two-factor-secret`, &secret, chromedp.ByQuery),
	))
	first, err := totp.GenerateCode(secret, time.Now().Add(-30*time.Second))
	require.NoError(t, err)
	require.NoError(t, chromedp.Run(ctx,
		chromedp.SendKeys(`#code`, first, chromedp.ByQuery),
		chromedp.Submit(`[data-testid="two-factor-enable-form"]`, chromedp.ByQuery),
		chromedp.WaitVisible(`[data-testid="recovery-codes"]`, chromedp.ByQuery),
		chromedp.Evaluate(`document.querySelectorAll('[data-testid="recovery-code"]').length`, &codes),
	))
	require.Equal(t, 10, codes)
	fits(ctx, "recovery codes")

	// Another browser signs in: the password, then a code.
	ctx2 := testenv.Browser(t)
	require.NoError(t, chromedp.Run(ctx2,
		chromedp.EmulateViewport(390, 900),
		chromedp.Navigate(b.Server.URL+"/login"),
		chromedp.WaitVisible(`[data-testid="login-form"]`, chromedp.ByQuery),
		chromedp.SendKeys(`#email`, email, chromedp.ByQuery),
		chromedp.SendKeys(`#password`, password, chromedp.ByQuery),
		chromedp.Submit(`[data-testid="login-form"]`, chromedp.ByQuery),
		chromedp.WaitVisible(`[data-testid="two-factor-form"]`, chromedp.ByQuery),
	))
	fits(ctx2, "two-factor sign-in")
	now, err := totp.GenerateCode(secret, time.Now())
	require.NoError(t, err)
	require.NoError(t, chromedp.Run(ctx2,
		chromedp.SendKeys(`#code`, now, chromedp.ByQuery),
		chromedp.Submit(`[data-testid="two-factor-form"]`, chromedp.ByQuery),
		chromedp.WaitVisible(`[data-testid="dashboard-greeting"]`, chromedp.ByQuery),
	))
}
