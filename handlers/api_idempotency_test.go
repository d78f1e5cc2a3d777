package handlers_test

import (
	"context"
	"net/http"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/kubebyon/kubebyon/handlers/handlerstest"
)

// postWithKey POSTs a JSON body with an Idempotency-Key.
func postWithKey(t *testing.T, b *handlerstest.Bundle, path, key, idemKey, body string) handlerstest.APIResponse {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, b.Server.URL+path, strings.NewReader(body))
	require.NoError(t, err)
	req.Header.Set("Authorization", "Bearer "+key)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Idempotency-Key", idemKey)
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	return handlerstest.APIResponse{Status: resp.StatusCode, Header: resp.Header, Body: handlerstest.ReadBody(t, resp)}
}

// TestAPIIdempotencyKey: the same POST twice with one key makes one
// cluster and answers the same, and so do concurrent replays; the key
// with another body is 422, a malformed key 400; an answer refused (422)
// is kept too, and other users' keys are their own.
func TestAPIIdempotencyKey(t *testing.T) {
	t.Parallel()
	b := handlerstest.Setup(t)
	b.ConnectHost(t)
	c, _ := b.SignedUpUser(t, "retrier")
	key := c.CreateKey("ci")
	count := func(name string) int {
		var n int
		require.NoError(t, b.Pool.QueryRow(context.Background(), "SELECT count(*) FROM clusters WHERE name = $1", name).Scan(&n))
		return n
	}

	first := postWithKey(t, b, "/api/v1/clusters", key, "run-1", `{"name":"once"}`)
	require.Equal(t, http.StatusCreated, first.Status, first.Body)
	require.Empty(t, first.Header.Get("Idempotent-Replayed"))
	again := postWithKey(t, b, "/api/v1/clusters", key, "run-1", `{"name":"once"}`)
	require.Equal(t, http.StatusCreated, again.Status, again.Body)
	require.Equal(t, "true", again.Header.Get("Idempotent-Replayed"))
	require.Equal(t, first.Body, again.Body)
	require.Equal(t, first.Header.Get("Location"), again.Header.Get("Location"))
	require.Equal(t, 1, count("once"))

	// Concurrent replays: one cluster, one answer.
	var wg sync.WaitGroup
	answers := make([]handlerstest.APIResponse, 6)
	for i := range answers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			answers[i] = postWithKey(t, b, "/api/v1/clusters", key, "run-2", `{"name":"raced"}`)
		}()
	}
	wg.Wait()
	for i, a := range answers {
		require.Equal(t, http.StatusCreated, a.Status, "answer %d: %s", i, a.Body)
		require.Equal(t, answers[0].Body, a.Body, "answer %d", i)
	}
	require.Equal(t, 1, count("raced"))

	r := postWithKey(t, b, "/api/v1/clusters", key, "run-1", `{"name":"another"}`)
	require.Equal(t, http.StatusUnprocessableEntity, r.Status, r.Body)
	require.Equal(t, "idempotency_key_reused", handlerstest.DecodeAs[handlerstest.APIErrorJSON](t, r).Error.Code)
	require.Zero(t, count("another"))
	for _, bad := range []string{strings.Repeat("k", 256), "tab\tkey"} {
		r = postWithKey(t, b, "/api/v1/clusters", key, bad, `{"name":"bad-key"}`)
		require.Equal(t, http.StatusBadRequest, r.Status, r.Body)
		require.Equal(t, "invalid_idempotency_key", handlerstest.DecodeAs[handlerstest.APIErrorJSON](t, r).Error.Code)
	}
	require.Zero(t, count("bad-key"))

	// A refusal is an answer too: kept, and given again.
	refused := postWithKey(t, b, "/api/v1/clusters", key, "run-3", `{"name":"Bad_Name"}`)
	require.Equal(t, http.StatusUnprocessableEntity, refused.Status, refused.Body)
	again = postWithKey(t, b, "/api/v1/clusters", key, "run-3", `{"name":"Bad_Name"}`)
	require.Equal(t, refused.Body, again.Body)
	require.Equal(t, "true", again.Header.Get("Idempotent-Replayed"))

	// Another user's "run-1" is theirs.
	other, _ := b.SignedUpUser(t, "other")
	otherKey := other.CreateKey("ci")
	r = postWithKey(t, b, "/api/v1/clusters", otherKey, "run-1", `{"name":"theirs"}`)
	require.Equal(t, http.StatusCreated, r.Status, r.Body)
	require.Empty(t, r.Header.Get("Idempotent-Replayed"))
	require.Equal(t, 1, count("theirs"))
}
