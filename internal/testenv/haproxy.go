package testenv

import (
	"os"
	"os/exec"
	"testing"
)

// HAProxy is the path of Debian's haproxy (or $HAPROXY). A missing
// HAProxy fails the test: install the Debian package 'haproxy'.
func HAProxy(t testing.TB) string {
	t.Helper()
	if p := os.Getenv("HAPROXY"); p != "" {
		return p
	}
	p, err := exec.LookPath("haproxy")
	if err != nil {
		t.Fatalf("testenv: no HAProxy found (install the Debian package 'haproxy' or set HAPROXY): %v", err)
	}
	return p
}
