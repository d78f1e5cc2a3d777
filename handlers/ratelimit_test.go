package handlers_test

import (
	"fmt"
	"net/http"
	"net/url"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/kubebyon/kubebyon/handlers/handlerstest"
)

// TestRateLimits hits each limited form one more time than its limit
// allows (signed in for the settings forms): the last answer is 429 with
// Retry-After and a message saying when to try again.
func TestRateLimits(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name     string
		page     string
		path     string
		limit    int
		form     func(i int) url.Values
		signedIn bool
	}{
		{"sign-up per IP", "/signup", "/signup", 10, func(i int) url.Values {
			return url.Values{"email": {fmt.Sprintf("new%d@example.com", i)}, "name": {"N"}, "password": {"long enough password"}}
		}, false},
		{"sign-in per IP", "/login", "/login", 50, func(i int) url.Values {
			return url.Values{"email": {fmt.Sprintf("who%d@example.com", i)}, "password": {"guess"}}
		}, false},
		{"code verification per IP", "/signup", "/signup/verify", 30, func(i int) url.Values {
			return url.Values{"email": {"someone@example.com"}, "code": {fmt.Sprintf("%06d", i)}}
		}, false},
		{"password reset per account", "/password/reset", "/password/reset", 5, func(int) url.Values {
			return url.Values{"email": {"target@example.com"}}
		}, false},
		{"password reset per IP", "/password/reset", "/password/reset", 10, func(i int) url.Values {
			return url.Values{"email": {fmt.Sprintf("target%d@example.com", i)}}
		}, false},
		// Each save is an audit event.
		{"profile saves per user", "/settings/profile", "/settings/profile", 30, func(i int) url.Values {
			return url.Values{"name": {fmt.Sprintf("Name %d", i)}, "language": {""}}
		}, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			b := handlerstest.Setup(t) // counters live in the test's own database
			c := b.Client(t)
			if tt.signedIn {
				c, _ = b.SignedUpUser(t, "limited")
			}
			for i := 0; i < tt.limit; i++ {
				resp := c.Post(tt.page, tt.path, tt.form(i))
				require.NotEqual(t, http.StatusTooManyRequests, resp.StatusCode, "request %d of %d", i+1, tt.limit)
			}
			resp := c.Post(tt.page, tt.path, tt.form(tt.limit))
			require.Equal(t, http.StatusTooManyRequests, resp.StatusCode)
			require.NotEmpty(t, resp.Header.Get("Retry-After"))
			require.Contains(t, handlerstest.ReadBody(t, resp), "Too many attempts. Try again in")
		})
	}
}
