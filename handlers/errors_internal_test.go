package handlers

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/labstack/echo/v4"
	"github.com/stretchr/testify/require"
)

// TestClientClosedRequest: a request whose client went away (its context
// cancelled, the handler's error that cancellation) is answered and
// logged as 499 at info, not as a server error.
func TestClientClosedRequest(t *testing.T) {
	t.Parallel()
	var logs bytes.Buffer
	h := &Handlers{Deps: Deps{Logger: slog.New(slog.NewTextHandler(&logs, nil))}}
	e := echo.New()
	e.HTTPErrorHandler = h.handleError
	e.Use(h.logRequests())
	e.GET("/slow", func(c echo.Context) error {
		<-c.Request().Context().Done()
		return fmt.Errorf("load the page: %w", c.Request().Context().Err())
	})

	ctx, cancel := context.WithCancel(context.Background())
	cancel() // the client is gone
	rec := httptest.NewRecorder()
	e.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/slow", nil).WithContext(ctx))
	require.Equal(t, StatusClientClosedRequest, rec.Code)
	require.Contains(t, logs.String(), "level=INFO msg=\"http request\"")
	require.Contains(t, logs.String(), "status=499")
	require.NotContains(t, logs.String(), "level=ERROR")
}
