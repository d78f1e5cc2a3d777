package testenv

import "testing"

// skipInShort skips the test in -short mode (make test-fast), which runs
// without Chromium and without a kube-apiserver: what names what it
// needs. make test, which CI runs, never runs in -short mode, so every
// test skipped here runs there.
func skipInShort(t testing.TB, what string) {
	t.Helper()
	if testing.Short() {
		t.Skipf("testenv: needs %s, which -short (make test-fast) leaves out; make test runs it", what)
	}
}
