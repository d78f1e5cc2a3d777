package testenv

import (
	"context"
	"os"
	"os/exec"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

// profiles are the browsers' profile folders, removed when the tests end.
var profiles struct {
	sync.Mutex
	dirs []string
}

func removeProfiles() {
	profiles.Lock()
	defer profiles.Unlock()
	for _, d := range profiles.dirs {
		_ = os.RemoveAll(d)
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

// Browser starts a headless Chromium for t and returns a chromedp context
// for one tab; everything is closed when t ends. A missing Chromium fails
// the test: install the Debian package 'chromium'.
func Browser(t testing.TB) context.Context {
	t.Helper()
	skipInShort(t, "Chromium")
	path, err := chromiumPath()
	if err != nil {
		t.Fatalf("testenv: no Chromium found (install the Debian package 'chromium' or set CHROMIUM): %v", err)
	}
	// Not t.TempDir: Chromium's helper processes may still write there for
	// a moment after the browser exits, which would fail the test.
	profile, err := os.MkdirTemp("", "kubebyon-chromium-")
	if err != nil {
		t.Fatalf("testenv: %v", err)
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
	ctx, cancelCtx := chromedp.NewContext(allocCtx, chromedp.WithErrorf(t.Logf))
	profiles.Lock()
	profiles.dirs = append(profiles.dirs, profile)
	profiles.Unlock()
	t.Cleanup(func() {
		if t.Failed() {
			logPage(t, ctx)
		}
		cancelCtx()
		cancelAlloc()
	})
	// Start the browser now, so that a broken install fails here, clearly.
	// The browser lives as long as the context of this first run: not
	// bounded, so that a test that runs out of time can still be looked at.
	if err := chromedp.Run(ctx); err != nil {
		t.Fatalf("testenv: start Chromium %s: %v", path, err)
	}
	// A bound on a whole browser test, with room for a loaded CI machine
	// (browser tests run in parallel with the rest of the package, and with
	// other packages' control planes and real nodes: one took 3 minutes
	// there that takes 30 seconds alone).
	bounded, cancelTimeout := context.WithTimeout(ctx, 5*time.Minute)
	t.Cleanup(cancelTimeout)
	return bounded
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
