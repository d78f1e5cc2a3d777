package handlers_test

import (
	"net/http"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/kubebyon/kubebyon/handlers/handlerstest"
)

// TestErrorPageNextSteps: a page that is not there offers the reader's
// clusters, the overview and the area they came from.
func TestErrorPageNextSteps(t *testing.T) {
	t.Parallel()
	b := handlerstest.Setup(t)
	c, _ := b.SignedUpUser(t, "lost")
	code, page := c.Get("/settings/no-such-page")
	require.Equal(t, http.StatusNotFound, code)
	require.Contains(t, page, `data-testid="error-next-steps"`)
	require.Contains(t, page, `href="/clusters" role="button" data-testid="error-clusters"`)
	require.Contains(t, page, `data-testid="error-overview"`)
	require.Contains(t, page, `href="/settings" role="button" class="secondary outline" data-testid="error-up"`)

	code, page = b.Client(t).Get("/no-such-page")
	require.Equal(t, http.StatusNotFound, code)
	require.Contains(t, page, `data-testid="error-overview"`)
	require.NotContains(t, page, `data-testid="error-clusters"`, "a visitor has no clusters")
	require.NotContains(t, page, `data-testid="error-up"`)
}
