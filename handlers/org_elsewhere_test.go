package handlers_test

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/kubebyon/kubebyon/handlers/handlerstest"
)

// TestClusterOfAnotherOrganization: a member working in another of their
// organizations who opens a link to the team's cluster (a notice's, a
// colleague's) is offered to switch to the team, and lands back on the
// cluster; someone outside the team gets the plain 404, which names
// neither the cluster nor the team.
func TestClusterOfAnotherOrganization(t *testing.T) {
	t.Parallel()
	b := handlerstest.Setup(t)
	tm := newOrgTeam(t, b, "elsewhere")
	page := fmt.Sprintf("/clusters/%d", tm.clusterID)

	viewer := tm.clients["viewer"]
	var personal int64
	require.NoError(t, b.Pool.QueryRow(context.Background(),
		"SELECT o.id FROM organizations o JOIN users u ON u.id = o.personal_of WHERE u.email = $1", tm.emails["viewer"]).Scan(&personal))
	resp := viewer.Post("/orgs", fmt.Sprintf("/orgs/%d/switch", personal), nil)
	require.Equal(t, http.StatusSeeOther, resp.StatusCode)

	for _, sub := range []string{"/tokens", "/nodes", "/metrics"} {
		code, body := viewer.Get(page + sub)
		require.Equal(t, http.StatusNotFound, code, sub)
		require.Contains(t, body, `data-testid="cluster-elsewhere"`, sub)
	}
	code, body := viewer.Get(page)
	require.Equal(t, http.StatusNotFound, code)
	require.Contains(t, body, `data-testid="cluster-elsewhere"`)
	require.Contains(t, body, "elsewhere")
	require.Contains(t, body, fmt.Sprintf(`action="/orgs/%d/switch"`, tm.orgID))
	require.Contains(t, body, fmt.Sprintf(`name="next" value="%s"`, page))

	resp = viewer.Post("/", fmt.Sprintf("/orgs/%d/switch", tm.orgID), url.Values{"next": {page}})
	require.Equal(t, http.StatusSeeOther, resp.StatusCode)
	require.Equal(t, page, resp.Header.Get("Location"))
	code, body = viewer.Get(page)
	require.Equal(t, http.StatusOK, code)
	require.Contains(t, body, tm.clusterName)

	// Not a member: the plain 404. An outside "next" goes nowhere.
	code, body = tm.clients["other"].Get(page)
	require.Equal(t, http.StatusNotFound, code)
	require.NotContains(t, body, `data-testid="cluster-elsewhere"`)
	require.NotContains(t, body, tm.clusterName)
	require.NotContains(t, body, fmt.Sprintf("/orgs/%d/", tm.orgID))
	resp = viewer.Post("/", fmt.Sprintf("/orgs/%d/switch", tm.orgID), url.Values{"next": {"https://evil.example/"}})
	require.Equal(t, "/", resp.Header.Get("Location"))
}
