package handlers

import "testing"

func TestRedactPath(t *testing.T) {
	t.Parallel()
	tests := map[string]string{
		"/join/abcdef.0123456789abcdef":        "/join/[redacted]",
		"/join/abcdef.0123456789abcdef/events": "/join/[redacted]/events",
		"/clusters/1":                          "/clusters/1",
		"/webhooks/node-quota/7/SECRETKEY":     "/webhooks/node-quota/7/[redacted]",
		"/joined":                              "/joined",
	}
	for in, want := range tests {
		if got := redactPath(in); got != want {
			t.Errorf("redactPath(%q) = %q, want %q", in, got, want)
		}
	}
}
