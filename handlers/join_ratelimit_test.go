package handlers_test

import (
	"context"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/kubebyon/kubebyon/handlers/handlerstest"
	"github.com/kubebyon/kubebyon/internal/ratelimit"
)

// TestJoinRateLimits hits each join endpoint from one address one more
// time than its limit allows: every hit up to the limit is answered as
// usual (an unknown token here), the next is refused with Retry-After, and
// by then PostgreSQL has counted every hit (the process's limiter sends
// them in batches, and each near the limit).
func TestJoinRateLimits(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		rule    ratelimit.Rule
		request func(base string) (*http.Request, error)
		// usual tells the usual answer, refused the limit's refusal.
		usual, refused func(*http.Response) bool
	}{
		{"join script", ratelimit.JoinScriptPerIP,
			func(base string) (*http.Request, error) {
				return http.NewRequest(http.MethodGet, base+"/join/abcdef.0123456789abcdef", nil)
			},
			func(r *http.Response) bool { return r.Header.Get("X-KubeBYON-Join-Refused") == "unknown" },
			func(r *http.Response) bool {
				return r.StatusCode == http.StatusOK && r.Header.Get("X-KubeBYON-Join-Refused") == "rate-limited"
			}},
		{"join reports", ratelimit.JoinEventsPerIP,
			func(base string) (*http.Request, error) {
				req, err := http.NewRequest(http.MethodPost, base+"/join/abcdef.0123456789abcdef/events",
					strings.NewReader(url.Values{"step": {"curl"}, "status": {"ok"}}.Encode()))
				req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
				return req, err
			},
			func(r *http.Response) bool { return r.StatusCode == http.StatusNotFound },
			func(r *http.Response) bool { return r.StatusCode == http.StatusTooManyRequests }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			b := handlerstest.Setup(t)
			hit := func() *http.Response {
				req, err := tt.request(b.Server.URL)
				require.NoError(t, err)
				resp, err := http.DefaultClient.Do(req)
				require.NoError(t, err)
				handlerstest.ReadBody(t, resp)
				return resp
			}
			for i := range int(tt.rule.Limit) {
				resp := hit()
				require.True(t, tt.usual(resp), "hit %d of %d: %d %v", i+1, tt.rule.Limit, resp.StatusCode, resp.Header)
			}
			resp := hit()
			require.True(t, tt.refused(resp), "%d %v", resp.StatusCode, resp.Header)
			require.NotEmpty(t, resp.Header.Get("Retry-After"))

			var counted int32
			require.NoError(t, b.Pool.QueryRow(context.Background(),
				`SELECT coalesce(sum(count), 0)::int FROM rate_limits WHERE key = $1`, tt.rule.Name+":127.0.0.1").Scan(&counted))
			require.Equal(t, tt.rule.Limit+1, counted)
		})
	}
}
