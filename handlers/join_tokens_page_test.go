package handlers_test

import (
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/kubebyon/kubebyon/handlers/handlerstest"
)

// TestJoinTokenCreatedSaidOnce: the page after a new token says once that
// it was made.
func TestJoinTokenCreatedSaidOnce(t *testing.T) {
	t.Parallel()
	b := handlerstest.Setup(t)
	c, _ := b.SignedUpUser(t, "once")
	cl, _ := b.ReadyVirtualCluster(t, c, "once")
	page := fmt.Sprintf("/clusters/%d/tokens", cl.ID)
	resp := c.Post(page, page, url.Values{"description": {"rack"}, "lifetime": {"1h"}, "uses": {"1"}})
	require.Equal(t, http.StatusSeeOther, resp.StatusCode, handlerstest.ReadBody(t, resp))
	_, body := c.Get(page)
	require.Equal(t, 1, strings.Count(body, "Join token created. Copy the command below."), body)
	require.Equal(t, 1, strings.Count(body, `data-testid="flash"`))
}
