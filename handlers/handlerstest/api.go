package handlerstest

import (
	"context"
	"encoding/json"
	"net/http"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// APICall calls the JSON API with a method, an API key ("" for none) and a
// JSON body ("" for none).
func (b *Bundle) APICall(t *testing.T, method, path, key, body string) APIResponse {
	t.Helper()
	req, err := http.NewRequest(method, b.Server.URL+path, strings.NewReader(body))
	require.NoError(t, err)
	if key != "" {
		req.Header.Set("Authorization", "Bearer "+key)
	}
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	return APIResponse{Status: resp.StatusCode, Header: resp.Header, Body: ReadBody(t, resp)}
}

// DecodeAs decodes an API response's JSON body as a T.
func DecodeAs[T any](t *testing.T, r APIResponse) T {
	t.Helper()
	var v T
	require.NoError(t, json.Unmarshal([]byte(r.Body), &v), r.Body)
	return v
}

// APIErrorJSON is the API's error body.
type APIErrorJSON struct {
	Error struct {
		Code    string            `json:"code"`
		Message string            `json:"message"`
		Fields  map[string]string `json:"fields"`
	} `json:"error"`
}

// NewKeyInPage finds the API key a page shows once, just created.
var NewKeyInPage = regexp.MustCompile(`id="new-api-key"[^>]* value="(kbn_[a-z2-7]{8}_[a-z2-7]{32})"`)

// FormIDField finds the form id of a form that posts once.
var FormIDField = regexp.MustCompile(`name="form_id" value="([^"]+)"`)

// KeyID is the id of the key with this value, from the database.
func (b *Bundle) KeyID(t *testing.T, key string) int64 {
	t.Helper()
	var id int64
	require.NoError(t, b.Pool.QueryRow(context.Background(), "SELECT id FROM api_keys WHERE prefix = $1", key[:12]).Scan(&id))
	return id
}

// APIResponse is what an API call answered.
type APIResponse struct {
	Status int
	Header http.Header
	Body   string
}

// API calls the JSON API with the Authorization header values given (none,
// one, or several), through client c (nil: no cookies).
func (b *Bundle) API(t *testing.T, c *Client, path string, authorization ...string) APIResponse {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, b.Server.URL+path, nil)
	require.NoError(t, err)
	for _, a := range authorization {
		req.Header.Add("Authorization", a)
	}
	hc := http.DefaultClient
	if c != nil {
		hc = c.HTTP
	}
	resp, err := hc.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	return APIResponse{Status: resp.StatusCode, Header: resp.Header, Body: ReadBody(t, resp)}
}

// RequireUnauthorized checks the API's answer to a request without a
// working key.
func RequireUnauthorized(t *testing.T, r APIResponse, msgAndArgs ...any) {
	t.Helper()
	require.Equal(t, http.StatusUnauthorized, r.Status, msgAndArgs...)
	require.Equal(t, "application/json", r.Header.Get("Content-Type"), msgAndArgs...)
	require.True(t, strings.HasPrefix(r.Header.Get("WWW-Authenticate"), "Bearer"), msgAndArgs...)
	var body struct {
		Error struct{ Code, Message string }
	}
	require.NoError(t, json.Unmarshal([]byte(r.Body), &body), msgAndArgs...)
	require.Equal(t, "unauthorized", body.Error.Code, msgAndArgs...)
	require.Contains(t, body.Error.Message, "Send a valid API key", msgAndArgs...)
}

// RequireMe checks that GET /api/v1/me answered with the account of email.
func RequireMe(t *testing.T, r APIResponse, email string) {
	t.Helper()
	require.Equal(t, http.StatusOK, r.Status, r.Body)
	var me map[string]any
	require.NoError(t, json.Unmarshal([]byte(r.Body), &me))
	require.Equal(t, email, me["email"])
	require.ElementsMatch(t, []string{"id", "email", "name", "role", "language", "created_at"}, MapKeys(me))
	require.Equal(t, "user", me["role"])
}

// MapKeys are the keys of a JSON object, in no order.
func MapKeys(m map[string]any) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	return out
}
