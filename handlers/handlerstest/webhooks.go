package handlerstest

import (
	"io"
	"net/http"
	"net/http/httptest"
	"testing"
)

// HookServer is a webhook receiver the test runs; it hands over each
// request's headers and body.
type HookRequest struct {
	Header http.Header
	Body   []byte
}

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
