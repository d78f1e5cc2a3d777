package browsertest_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/require"

	"github.com/kubebyon/kubebyon/handlers/handlerstest"
	"github.com/kubebyon/kubebyon/internal/testenv"
)

// TestAdminSettingsInBrowser: an admin opens Settings, uploads a
// kubeconfig, tests it (htmx puts the permission table under the button,
// without a page load), then saves it.
func TestAdminSettingsInBrowser(t *testing.T) {
	t.Parallel()
	b := handlerstest.Setup(t)
	_, adminEmail := b.SignedUpAdmin(t, "clicker")
	kubeconfig := filepath.Join(t.TempDir(), "kubeconfig.yaml")
	require.NoError(t, os.WriteFile(kubeconfig, testenv.HostKube(t).Kubeconfig(t), 0o600))
	ctx := testenv.Browser(t)
	browserSignIn(t, ctx, b.Server.URL, adminEmail, "password of clicker")

	var notice, verdict, source string
	var rows int
	var samePage bool
	require.NoError(t, chromedp.Run(ctx,
		chromedp.Navigate(b.Server.URL+"/admin/users"),
		chromedp.Click(`[data-testid="admin-nav-settings"]`, chromedp.ByQuery),
		chromedp.WaitVisible(`[data-testid="settings-form"]`, chromedp.ByQuery),
		chromedp.Text(`[data-testid="settings-no-host"]`, &notice, chromedp.ByQuery),
		// A mark on the page: a full page load would lose it.
		chromedp.Evaluate(`window.kubebyonMark = 1`, nil),
		chromedp.SetUploadFiles(`#hostKubeconfigFile`, []string{kubeconfig}, chromedp.ByQuery),
		chromedp.Click(`[data-testid="settings-test"]`, chromedp.ByQuery),
		chromedp.WaitVisible(`[data-testid="settings-permissions"]`, chromedp.ByQuery),
		chromedp.Text(`[data-testid="settings-test-verdict"]`, &verdict, chromedp.ByQuery),
		chromedp.Evaluate(`document.querySelectorAll('[data-testid="settings-permissions"] td[data-allowed="true"]').length`, &rows),
		chromedp.Evaluate(`window.kubebyonMark === 1`, &samePage),
	))
	require.Contains(t, notice, "No host cluster is connected.")
	require.Contains(t, verdict, "every permission the platform needs is granted")
	require.Equal(t, 61+36, rows, "with the platform edge's")
	require.True(t, samePage, "htmx swapped in the result")

	var flash string
	require.NoError(t, chromedp.Run(ctx,
		chromedp.SendKeys(`#password`, "password of clicker", chromedp.ByQuery),
		chromedp.Click(`[data-testid="settings-save"]`, chromedp.ByQuery),
		chromedp.WaitVisible(`[data-testid="flash"]`, chromedp.ByQuery),
		chromedp.Text(`[data-testid="flash"]`, &flash, chromedp.ByQuery),
		chromedp.AttributeValue(`[data-testid="settings-host-source"]`, "data-source", &source, nil, chromedp.ByQuery),
	))
	require.Equal(t, "Settings saved.", strings.TrimSpace(flash))
	require.Equal(t, "stored", source)
	require.Equal(t, strings.TrimSpace(string(testenv.HostKube(t).Kubeconfig(t))), b.LoadSettings(t).HostKubeconfig)
}
