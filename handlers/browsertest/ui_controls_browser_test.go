package browsertest_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/kb"
	"github.com/stretchr/testify/require"

	"github.com/kubebyon/kubebyon/handlers/handlerstest"
	"github.com/kubebyon/kubebyon/internal/clusters"
	"github.com/kubebyon/kubebyon/internal/testenv"
)

// navState is what the side navigation looks like: its width, whether the
// body is folded, the button's aria-expanded, and the Clusters link's
// label's width and the link's name.
const navState = `(() => {
	const nav = document.getElementById('sidenav');
	const button = document.querySelector('[data-testid="nav-collapse"]');
	const link = document.querySelector('[data-testid="nav-clusters"]');
	return {
		width: nav.getBoundingClientRect().width,
		collapsed: document.body.classList.contains('nav-collapsed'),
		expanded: button.getAttribute('aria-expanded'),
		buttonShown: getComputedStyle(button).display !== 'none' && !button.hidden,
		labelWidth: link.querySelector('.nav-label').getBoundingClientRect().width,
		name: link.textContent.trim(),
		title: link.title,
	};
})()`

type navLook struct {
	Width       float64
	Collapsed   bool
	Expanded    string
	ButtonShown bool
	LabelWidth  float64
	Name        string
	Title       string
}

// screenshot writes the page as it is under the test output, for review.
func screenshot(name string) chromedp.Action {
	var png []byte
	return chromedp.Tasks{
		chromedp.FullScreenshot(&png, 100),
		chromedp.ActionFunc(func(context.Context) error {
			dir := os.Getenv("SCREENSHOTS")
			if dir == "" {
				dir = filepath.Join("..", "..", "test-output", "screenshots")
			}
			if err := os.MkdirAll(dir, 0o755); err != nil {
				return err
			}
			return os.WriteFile(filepath.Join(dir, name), png, 0o644)
		}),
	}
}

// TestNavCollapseInBrowser: on a laptop's screen the side navigation's
// button folds it to its icons, the links keeping their names and a
// tooltip; the next page is drawn folded by the server, from the cookie;
// unfolding it is remembered too. On a phone the button is not there (the
// drawer is).
func TestNavCollapseInBrowser(t *testing.T) {
	t.Parallel()
	b := handlerstest.Setup(t)
	_, email := b.SignedUpUser(t, "folder")
	ctx := testenv.Browser(t)
	require.NoError(t, chromedp.Run(ctx, chromedp.EmulateViewport(1280, 900)))
	browserSignIn(t, ctx, b.Server.URL, email, "password of folder")

	var open, folded, next, unfolded navLook
	var served string
	require.NoError(t, chromedp.Run(ctx,
		chromedp.Navigate(b.Server.URL+"/clusters"),
		chromedp.WaitVisible(`[data-testid="nav-collapse"]`, chromedp.ByQuery),
		chromedp.Evaluate(navState, &open),
		chromedp.Click(`[data-testid="nav-collapse"]`, chromedp.ByQuery),
		chromedp.Evaluate(navState, &folded),
		screenshot("nav-collapsed-en-1280.png"),
	))
	require.Equal(t, navLook{Width: open.Width, Expanded: "true", ButtonShown: true, LabelWidth: open.LabelWidth, Name: "Clusters", Title: "Clusters"}, open)
	require.Greater(t, open.Width, 150.0)
	require.True(t, folded.Collapsed)
	require.Equal(t, "false", folded.Expanded)
	require.Less(t, folded.Width, 80.0, "icons only")
	require.LessOrEqual(t, folded.LabelWidth, 1.0, "the label is hidden but for screen readers")
	require.Equal(t, "Clusters", folded.Name, "the link keeps its name")
	require.Equal(t, "Clusters", folded.Title, "and a tooltip")

	// The next page comes folded from the server: no flash of the wide
	// navigation.
	_, html := b.Client(t).Get("/")
	require.NotContains(t, html, "nav-collapsed", "not for another browser")
	require.NoError(t, chromedp.Run(ctx,
		chromedp.Navigate(b.Server.URL+"/settings/profile"),
		chromedp.WaitVisible(`[data-testid="nav-collapse"]`, chromedp.ByQuery),
		chromedp.Evaluate(`document.body.className`, &served),
		chromedp.Evaluate(navState, &next),
		chromedp.Click(`[data-testid="nav-collapse"]`, chromedp.ByQuery),
		chromedp.Reload(),
		chromedp.WaitVisible(`[data-testid="nav-collapse"]`, chromedp.ByQuery),
		chromedp.Evaluate(navState, &unfolded),
	))
	require.Contains(t, served, "nav-collapsed")
	require.True(t, next.Collapsed)
	require.Equal(t, "false", next.Expanded)
	require.Less(t, next.Width, 80.0)
	require.False(t, unfolded.Collapsed, "unfolding is remembered too")
	require.Equal(t, "true", unfolded.Expanded)
	require.Greater(t, unfolded.Width, 150.0)

	var phone navLook
	require.NoError(t, chromedp.Run(ctx,
		chromedp.EmulateViewport(390, 800),
		chromedp.Reload(),
		chromedp.WaitVisible(`[data-testid="nav-toggle"]`, chromedp.ByQuery),
		chromedp.Evaluate(navState, &phone),
	))
	require.False(t, phone.ButtonShown, "a phone has the drawer")
}

// TestConfirmDialogInBrowser: the cluster's Delete opens its confirmation
// in a dialog over the settings page; Escape closes it and gives the focus
// back to the link; the submit button waits for the cluster's name typed
// exactly; the submit deletes the cluster.
func TestConfirmDialogInBrowser(t *testing.T) {
	t.Parallel()
	b := handlerstest.Setup(t)
	c, email := b.SignedUpUser(t, "confirmer")
	cl, _ := b.ReadyVirtualCluster(t, c, "doomed")
	ctx := testenv.Browser(t)
	require.NoError(t, chromedp.Run(ctx, chromedp.EmulateViewport(1280, 900)))
	browserSignIn(t, ctx, b.Server.URL, email, "password of confirmer")
	settings := fmt.Sprintf("%s/clusters/%d/edit", b.Server.URL, cl.ID)

	var path, focused string
	var disabled, openAfterEscape bool
	require.NoError(t, chromedp.Run(ctx,
		chromedp.Navigate(settings),
		chromedp.WaitVisible(`[data-testid="cluster-delete"]`, chromedp.ByQuery),
		chromedp.Click(`[data-testid="cluster-delete"]`, chromedp.ByQuery),
		chromedp.WaitVisible(`dialog[open] [data-testid="cluster-delete-form"]`, chromedp.ByQuery),
		chromedp.Evaluate(`location.pathname`, &path),
		chromedp.Evaluate(`document.querySelector('dialog [data-testid="cluster-delete-submit"]').disabled`, &disabled),
		chromedp.KeyEvent(kb.Escape),
		chromedp.Poll(`!document.querySelector('dialog.confirm-modal').open`, nil),
		chromedp.Evaluate(`document.querySelector('dialog.confirm-modal').open`, &openAfterEscape),
		chromedp.Evaluate(`document.activeElement.dataset.testid || ''`, &focused),
	))
	require.Equal(t, fmt.Sprintf("/clusters/%d/edit", cl.ID), path, "the dialog is over the settings page")
	require.True(t, disabled, "nothing typed yet")
	require.False(t, openAfterEscape)
	require.Equal(t, "cluster-delete", focused, "the focus is back on the link")

	var wrong, right bool
	var flash string
	require.NoError(t, chromedp.Run(ctx,
		chromedp.Click(`[data-testid="cluster-delete"]`, chromedp.ByQuery),
		chromedp.WaitVisible(`dialog[open] #confirm`, chromedp.ByQuery),
		chromedp.SendKeys(`dialog #confirm`, "Doomed", chromedp.ByQuery),
		chromedp.Evaluate(`document.querySelector('dialog [data-testid="cluster-delete-submit"]').disabled`, &wrong),
		chromedp.Evaluate(`document.querySelector('dialog #confirm').value = ''`, nil),
		chromedp.SendKeys(`dialog #confirm`, "doomed", chromedp.ByQuery),
		chromedp.Evaluate(`document.querySelector('dialog [data-testid="cluster-delete-submit"]').disabled`, &right),
		screenshot("confirm-dialog-en-1280.png"),
		chromedp.Click(`dialog [data-testid="cluster-delete-submit"]`, chromedp.ByQuery),
		chromedp.WaitVisible(`[data-testid="flash"]`, chromedp.ByQuery),
		chromedp.Text(`[data-testid="flash"]`, &flash, chromedp.ByQuery),
	))
	require.True(t, wrong, "the name in another case does not confirm")
	require.False(t, right, "the exact name does")
	require.NotEmpty(t, strings.TrimSpace(flash))
	require.Contains(t, []string{clusters.StatusDeleting, clusters.StatusDeleted}, b.Cluster(t, cl.ID).Status)
}
