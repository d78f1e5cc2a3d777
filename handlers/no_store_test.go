package handlers_test

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/kubebyon/kubebyon/handlers/handlerstest"
)

// TestSecretPagesNotStored: every page that shows a join command or a new
// API key tells browsers and proxies not to keep it.
func TestSecretPagesNotStored(t *testing.T) {
	t.Parallel()
	b := handlerstest.Setup(t)
	c, _ := b.SignedUpUser(t, "nostore")
	cl, _ := b.ReadyVirtualCluster(t, c, "nostore")
	token := handlerstest.CreateJoinToken(t, c, cl, url.Values{"description": {"rack"}, "lifetime": {"24h"}, "uses": {"unlimited"}})
	page := fmt.Sprintf("/clusters/%d/tokens", cl.ID)

	resp, err := c.HTTP.Get(c.Base + page)
	require.NoError(t, err)
	body := handlerstest.ReadBody(t, resp)
	require.Equal(t, http.StatusOK, resp.StatusCode)
	require.Contains(t, body, token, "the page shows the join command")
	require.Equal(t, "no-store", resp.Header.Get("Cache-Control"), "the tokens page")

	// The form shown again with an error lists the tokens too.
	resp = c.Post(page, page, url.Values{"description": {"rack"}, "lifetime": {"24h"}, "uses": {"n"}, "max_uses": {"0"}})
	body = handlerstest.ReadBody(t, resp)
	require.Equal(t, http.StatusUnprocessableEntity, resp.StatusCode)
	require.Contains(t, body, token)
	require.Equal(t, "no-store", resp.Header.Get("Cache-Control"), "the tokens page with a form error")

	id, _, _ := strings.Cut(token, ".")
	var rowID int64
	require.NoError(t, b.Pool.QueryRow(context.Background(), "SELECT id FROM join_tokens WHERE token_id = $1", id).Scan(&rowID))
	resp, body = c.HTMX(fmt.Sprintf("%s/%d/live", page, rowID))
	require.Equal(t, http.StatusOK, resp.StatusCode, body)
	require.Equal(t, "no-store", resp.Header.Get("Cache-Control"), "the live fragment")

	resp = c.PostKeyForm(url.Values{"name": {"ci"}, "expiry": {"never"}})
	body = handlerstest.ReadBody(t, resp)
	require.Equal(t, http.StatusOK, resp.StatusCode)
	require.Regexp(t, handlerstest.NewKeyInPage, body)
	require.Equal(t, "no-store", resp.Header.Get("Cache-Control"), "the new API key page")
}
