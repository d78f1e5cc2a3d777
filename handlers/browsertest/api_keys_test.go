package browsertest_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/require"

	"github.com/kubebyon/kubebyon/handlers/handlerstest"
	"github.com/kubebyon/kubebyon/internal/testenv"
)

// TestAPIKeyInBrowser is the whole journey: create a key in the settings,
// see it once, use it with the API, revoke it.
func TestAPIKeyInBrowser(t *testing.T) {
	t.Parallel()
	b := handlerstest.Setup(t)
	_, email := b.SignedUpUser(t, "keyholder")
	ctx := testenv.Browser(t)

	var key, copyLabel string
	var copyVisible bool
	require.NoError(t, chromedp.Run(ctx,
		chromedp.Navigate(b.Server.URL+"/settings/api-keys"),
		chromedp.WaitVisible(`[data-testid="login-form"]`, chromedp.ByQuery),
		chromedp.SendKeys(`#email`, email, chromedp.ByQuery),
		chromedp.SendKeys(`#password`, "password of keyholder", chromedp.ByQuery),
		chromedp.Submit(`[data-testid="login-form"]`, chromedp.ByQuery),
		chromedp.WaitVisible(`[data-testid="api-key-form"]`, chromedp.ByQuery),
		chromedp.WaitVisible(`[data-testid="api-keys-empty"]`, chromedp.ByQuery),
		chromedp.SendKeys(`#name`, "CI pipeline", chromedp.ByQuery),
		chromedp.Submit(`[data-testid="api-key-form"]`, chromedp.ByQuery),
		chromedp.WaitVisible(`[data-testid="new-api-key"]`, chromedp.ByQuery),
		chromedp.Value(`[data-testid="new-api-key"]`, &key, chromedp.ByQuery),
		// copy.js shows the copy button (it is hidden without JavaScript).
		chromedp.WaitVisible(`[data-testid="copy-api-key"]`, chromedp.ByQuery),
		chromedp.Evaluate(`!document.querySelector('[data-testid="copy-api-key"]').hidden`, &copyVisible),
		chromedp.Click(`[data-testid="copy-api-key"]`, chromedp.ByQuery),
		chromedp.Poll(`document.querySelector('[data-testid="copy-api-key"]').textContent === "Copied"`, nil),
		chromedp.Text(`[data-testid="copy-api-key"]`, &copyLabel, chromedp.ByQuery),
	))
	require.Regexp(t, `^kbn_[a-z2-7]{8}_[a-z2-7]{32}$`, key)
	require.True(t, copyVisible)
	require.Equal(t, "Copied", copyLabel)

	// Reloading sends the form again: that neither shows the key again nor
	// creates another; the list shows only the key's prefix.
	var html, flash, prefix, status string
	require.NoError(t, chromedp.Run(ctx,
		chromedp.Reload(),
		chromedp.WaitVisible(`[data-testid="api-keys"]`, chromedp.ByQuery),
		chromedp.Text(`[data-testid="flash"]`, &flash, chromedp.ByQuery),
		chromedp.OuterHTML(`html`, &html, chromedp.ByQuery),
		chromedp.Text(`[data-testid="api-key-prefix"]`, &prefix, chromedp.ByQuery),
		chromedp.Text(`[data-testid="api-key-status"]`, &status, chromedp.ByQuery),
	))
	require.Contains(t, flash, "No key was created")
	require.NotContains(t, html, key[13:])
	require.NotContains(t, html, `data-testid="new-api-key"`)
	require.Equal(t, key[:12]+"…", prefix)
	require.Equal(t, "Active", status)
	require.Contains(t, html, "CI pipeline")
	var n int
	require.NoError(t, b.Pool.QueryRow(context.Background(), "SELECT count(*) FROM api_keys").Scan(&n))
	require.Equal(t, 1, n)

	handlerstest.RequireMe(t, b.API(t, nil, "/api/v1/me", "Bearer "+key), email)
	var lastUsed string
	require.NoError(t, chromedp.Run(ctx,
		chromedp.Reload(),
		chromedp.Text(`[data-testid="api-key-last-used"]`, &lastUsed, chromedp.ByQuery),
	))
	require.NotEqual(t, "Never", lastUsed, "the use was recorded")

	require.NoError(t, chromedp.Run(ctx,
		chromedp.Click(`[data-testid="api-key-revoke"]`, chromedp.ByQuery),
		chromedp.WaitVisible(`[data-testid="api-key-revoke-form"]`, chromedp.ByQuery),
		chromedp.Click(`[data-testid="api-key-revoke-submit"]`, chromedp.ByQuery),
		chromedp.WaitVisible(`[data-testid="flash"]`, chromedp.ByQuery),
		chromedp.Text(`[data-testid="flash"]`, &flash, chromedp.ByQuery),
		chromedp.Text(`[data-testid="api-key-status"]`, &status, chromedp.ByQuery),
	))
	require.Equal(t, "The API key was revoked.", flash)
	require.Equal(t, "Revoked", status)
	handlerstest.RequireUnauthorized(t, b.API(t, nil, "/api/v1/me", "Bearer "+key))

	// Both changes were audited, as the key's owner.
	id := b.KeyID(t, key)
	for _, action := range []string{"api_key.create", "api_key.revoke"} {
		var actor string
		require.NoError(t, b.Pool.QueryRow(context.Background(),
			"SELECT actor_email FROM audit_events WHERE action = $1 AND target_type = 'api_key' AND target_id = $2",
			action, fmt.Sprint(id)).Scan(&actor), action)
		require.Equal(t, email, actor, action)
	}
}
