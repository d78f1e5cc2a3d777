package handlerstest

import (
	"io"
	"net/http"
	"net/http/httptest"
	"testing"
)

// HookRequest is a request a HookServer received.
type HookRequest struct {
	Header http.Header
	Body   []byte
}

// HookServer is a webhook receiver the test runs; it hands over each
// request's headers and body, and answers with answer.
func HookServer(t *testing.T, answer string) (*httptest.Server, <-chan HookRequest) {
	t.Helper()
	got := make(chan HookRequest, 10)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		got <- HookRequest{Header: r.Header.Clone(), Body: b}
		_, _ = io.WriteString(w, answer)
	}))
	t.Cleanup(srv.Close)
	return srv, got
}
