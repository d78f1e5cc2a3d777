package testenv

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/target"
	"github.com/chromedp/chromedp"
)

// chromium is the package's one headless Chromium, started by the first
// test that asks for a browser and stopped when the tests end
// (stopChromium). Each test gets a tab of its own in a browser context of
// its own: its cookies and storage are its own, as in a browser of its
// own.
var chromium struct {
	once    sync.Once
	err     error
	ctx     context.Context // the browser's; tabs are made from it
	cancel  func()
	profile string
}

func startChromium() {
	path, err := chromiumPath()
	if err != nil {
		chromium.err = fmt.Errorf("testenv: no Chromium found (install the Debian package 'chromium' or set CHROMIUM): %w", err)
		return
	}
	// Not a test's TempDir: the browser outlives every test, and its
	// helper processes may still write there for a moment after it exits.
	profile, err := os.MkdirTemp("", "kubebyon-chromium-")
	if err != nil {
		chromium.err = fmt.Errorf("testenv: %w", err)
		return
	}
	opts := append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(path),
		chromedp.NoSandbox,
		chromedp.DisableGPU,
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true),
		chromedp.Flag("disable-quic", true),
		chromedp.NoFirstRun,
		chromedp.UserDataDir(profile),
	)
	allocCtx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	ctx, cancelCtx := chromedp.NewContext(allocCtx)
	chromium.ctx, chromium.profile = ctx, profile
	chromium.cancel = func() { cancelCtx(); cancelAlloc() }
	// Start the browser now, so that a broken install fails here, clearly.
	if err := chromedp.Run(ctx); err != nil {
		chromium.err = fmt.Errorf("testenv: start Chromium %s: %w", path, err)
	}
}

// stopChromium stops the browser, if a test started it.
func stopChromium() {
	if chromium.cancel != nil {
		chromium.cancel()
	}
	if chromium.profile != "" {
		_ = os.RemoveAll(chromium.profile)
	}
}

// chromiumPath finds Debian's chromium (or $CHROMIUM).
func chromiumPath() (string, error) {
	if p := os.Getenv("CHROMIUM"); p != "" {
		return p, nil
	}
	var err error
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome"} {
		var p string
		if p, err = exec.LookPath(name); err == nil {
			return p, nil
		}
	}
	return "", err
}

// Browser returns a chromedp context for a tab of t's own, in a browser
// context of its own (cookies, storage), on the package's one headless
// Chromium; the tab is closed when t ends. A missing Chromium fails the
// test: install the Debian package 'chromium'.
func Browser(t testing.TB) context.Context {
	t.Helper()
	skipInShort(t, "Chromium")
	chromium.once.Do(startChromium)
	if chromium.err != nil {
		t.Fatal(chromium.err)
	}
	ctx, cancelCtx, err := newTab()
	if err != nil {
		t.Fatalf("testenv: open a Chromium tab: %v", err)
	}
	t.Cleanup(func() {
		if t.Failed() {
			logPage(t, ctx)
		}
		cancelCtx()
	})
	// A bound on a whole browser test, with room for a loaded CI machine
	// (browser tests run in parallel with the rest of the package, and with
	// other packages' control planes and real nodes: one took 3 minutes
	// there that takes 30 seconds alone).
	bounded, cancelTimeout := context.WithTimeout(ctx, 5*time.Minute)
	t.Cleanup(cancelTimeout)
	return bounded
}

// newTab opens a tab in a browser context of its own on the package's
// Chromium; cancel closes both. (chromedp's WithNewBrowserContext opens
// its tab without a window, which headless Chromium refuses: "no browser
// is open".)
func newTab() (_ context.Context, cancel func(), err error) {
	browser := cdp.WithExecutor(chromium.ctx, chromedp.FromContext(chromium.ctx).Browser)
	id, err := target.CreateBrowserContext().Do(browser)
	if err != nil {
		return nil, nil, fmt.Errorf("create browser context: %w", err)
	}
	dispose := func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = target.DisposeBrowserContext(id).Do(cdp.WithExecutor(ctx, chromedp.FromContext(chromium.ctx).Browser))
	}
	tab, err := target.CreateTarget("about:blank").WithBrowserContextID(id).WithNewWindow(true).Do(browser)
	if err != nil {
		dispose()
		return nil, nil, fmt.Errorf("create tab: %w", err)
	}
	ctx, cancelCtx := chromedp.NewContext(chromium.ctx, chromedp.WithTargetID(tab))
	// Attach now, so that a broken browser fails here, clearly. The tab
	// lives as long as this context: not bounded, so that a test that
	// runs out of time can still be looked at.
	if err := chromedp.Run(ctx); err != nil {
		cancelCtx()
		dispose()
		return nil, nil, fmt.Errorf("attach: %w", err)
	}
	return ctx, func() { cancelCtx(); dispose() }, nil
}

// logPage logs where a failed test's tab was and what it showed, so that
// a test that timed out on a loaded machine says which page it was stuck
// on.
func logPage(t testing.TB, tab context.Context) {
	ctx, cancel := context.WithTimeout(tab, 10*time.Second)
	defer cancel()
	var location, text string
	if err := chromedp.Run(ctx, chromedp.Location(&location), chromedp.Evaluate(`document.body ? document.body.innerText : ""`, &text)); err != nil {
		t.Logf("testenv: the failed test's page could not be read: %v", err)
		return
	}
	if len(text) > 4000 {
		text = text[:4000] + "…"
	}
	t.Logf("testenv: the failed test's tab was at %s, showing:\n%s", location, text)
}
