package handlers_test

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/kubebyon/kubebyon/handlers/handlerstest"
	"github.com/kubebyon/kubebyon/queries"
)

// TestClusterTabs: every page of a cluster shows its breadcrumbs, its
// name and the cluster's tab bar, with the page's own tab marked current
// and no other.
func TestClusterTabs(t *testing.T) {
	t.Parallel()
	b := handlerstest.Setup(t)
	c, _ := b.SignedUpUser(t, "tabs")
	cl, _ := b.ReadyVirtualCluster(t, c, "tabbed")
	base := fmt.Sprintf("/clusters/%d", cl.ID)
	tabs := []string{"cluster-overview", "cluster-nodes", "cluster-join-tokens", "cluster-ingress-tab", "cluster-metrics", "cluster-activity", "cluster-settings"}
	current := regexp.MustCompile(`data-testid="(cluster-[a-z-]+)" aria-current="page"`)

	for _, tt := range []struct {
		path, tab, crumb string
	}{
		{base, "cluster-overview", ""},
		{base + "/nodes", "cluster-nodes", "Nodes"},
		{base + "/tokens", "cluster-join-tokens", "Join tokens"},
		{base + "/ingress", "cluster-ingress-tab", "Managed ingress"},
		{base + "/metrics", "cluster-metrics", "Metrics"},
		{base + "/activity", "cluster-activity", "Events"},
		{base + "/edit", "cluster-settings", "Settings"},
		{base + "/delete", "cluster-settings", "Delete"},
	} {
		t.Run(strings.TrimPrefix(tt.path, base), func(t *testing.T) {
			code, body := c.Get(tt.path)
			require.Equal(t, http.StatusOK, code, body)
			require.Contains(t, body, `data-testid="breadcrumbs"`)
			require.Contains(t, body, `<a href="/clusters">Clusters</a>`)
			if tt.crumb == "" {
				require.Contains(t, body, `<span aria-current="page">tabbed</span>`, "the overview's last crumb is the cluster")
			} else {
				require.Contains(t, body, `<a href="`+base+`">tabbed</a>`)
			}
			require.Contains(t, body, `data-testid="tabs"`)
			for _, tab := range tabs {
				require.Contains(t, body, `data-testid="`+tab+`"`, tab)
			}
			m := current.FindAllStringSubmatch(body, -1)
			require.Len(t, m, 1, "one tab is current")
			require.Equal(t, tt.tab, m[0][1])
		})
	}

	// The header's actions: Download kubeconfig and Add node, not Delete,
	// which is in Settings' danger zone.
	_, body := c.Get(base)
	require.Contains(t, body, `data-testid="cluster-kubeconfig"`)
	require.Contains(t, body, `href="`+base+`/tokens" role="button" data-testid="cluster-add-node"`)
	require.NotContains(t, body, `data-testid="cluster-delete"`)
	_, body = c.Get(base + "/edit")
	require.Contains(t, body, `data-testid="cluster-danger-zone"`)
	require.Contains(t, body, `href="`+base+`/delete" role="button" class="danger-button" data-confirm-dialog data-testid="cluster-delete"`, "a confirmation in a dialog, with a script")
	require.Contains(t, body, `data-testid="stale-cleanup-form"`)

	// The Events tab lists every event; the overview the latest few.
	for i := 0; i < 8; i++ {
		b.Event(t, cl.ID, "info", "Provisioning", "")
	}
	_, body = c.Get(base + "/activity")
	all := strings.Count(body, `data-testid="cluster-event"`)
	require.GreaterOrEqual(t, all, 8)
	_, body = c.Get(base)
	require.Equal(t, 5, strings.Count(body, `data-testid="cluster-event"`))
	require.Contains(t, body, `href="`+base+`/activity" data-testid="cluster-all-events"`)
}

// TestClusterFirstNode: a ready cluster with no node offers, at the top
// of its overview and on its empty nodes page, a button that makes a join
// token; its answer is the join command with the token, its copy button
// and the token's live diagnostics, and the next visits show that
// command. Once a node is recorded, the card goes.
func TestClusterFirstNode(t *testing.T) {
	t.Parallel()
	b := handlerstest.Setup(t)
	c, _ := b.SignedUpUser(t, "first")
	cl, _ := b.ReadyVirtualCluster(t, c, "fresh")
	base := fmt.Sprintf("/clusters/%d", cl.ID)

	for _, page := range []string{base, base + "/nodes"} {
		_, body := c.Get(page)
		require.Contains(t, body, `data-testid="first-node"`, page)
		require.Contains(t, body, "Add your first node", page)
		require.Contains(t, body, `hx-post="`+base+`/tokens/first"`, page)
		require.Contains(t, body, `data-testid="first-node-create"`, page)
		require.NotContains(t, body, `data-testid="join-command"`, page)
	}

	resp, frag := c.PostHTMX(base, base+"/tokens/first", nil)
	require.Equal(t, http.StatusCreated, resp.StatusCode, frag)
	require.Equal(t, "no-store", resp.Header.Get("Cache-Control"))
	m := handlerstest.JoinCommandToken.FindStringSubmatch(frag)
	require.NotNil(t, m, frag)
	token := m[1]
	require.Contains(t, frag, `data-testid="join-command"`)
	require.Contains(t, frag, `data-copy-target="first-node-join-command-`)
	require.Contains(t, frag, `data-testid="join-token-live"`)
	require.Contains(t, frag, "/live\"", "the token's diagnostics refresh themselves")
	var lifetime, uses string
	require.NoError(t, b.Pool.QueryRow(context.Background(),
		"SELECT (expires_at > now() + interval '50 minutes' AND expires_at < now() + interval '70 minutes')::text, max_uses::text FROM join_tokens WHERE cluster_id = $1", cl.ID).Scan(&lifetime, &uses))
	require.Equal(t, "true", lifetime, "the form's default lifetime: one hour")
	require.Equal(t, "1", uses)

	// The next visits show the active token's command directly.
	for _, page := range []string{base, base + "/nodes"} {
		_, body := c.Get(page)
		require.Contains(t, body, `data-testid="first-node"`, page)
		require.Contains(t, body, "/join/"+token+" | sudo sh", page)
		require.NotContains(t, body, `data-testid="first-node-create"`, page)
	}

	// Without htmx, the button makes a token and comes back.
	resp = c.Post(base, base+"/tokens/first", nil)
	require.Equal(t, http.StatusSeeOther, resp.StatusCode)
	require.Equal(t, base, resp.Header.Get("Location"))

	// A recorded node: the card goes.
	require.NoError(t, queries.New(b.Pool).NodeUpsert(context.Background(), queries.NodeUpsertParams{
		ClusterID: cl.ID, Name: "worker-1", Ready: true, Conditions: []byte("[]"), Addresses: []byte("[]")}))
	for _, page := range []string{base, base + "/nodes"} {
		_, body := c.Get(page)
		require.NotContains(t, body, `data-testid="first-node"`, page)
	}

	// Another user's cluster: no token made.
	someone, _ := b.SignedUpUser(t, "first-other")
	resp, _ = someone.PostHTMX("/clusters", base+"/tokens/first", nil)
	require.Equal(t, http.StatusNotFound, resp.StatusCode)
}

// TestJoinTokensGroups: the tokens page shows the active tokens first,
// with their commands, and folds the used-up, expired and revoked ones
// under their counts.
func TestJoinTokensGroups(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	b := handlerstest.Setup(t)
	c, _ := b.SignedUpUser(t, "groups")
	cl, _ := b.ReadyVirtualCluster(t, c, "grouped")
	page := fmt.Sprintf("/clusters/%d/tokens", cl.ID)

	_, body := c.Get(page)
	require.Contains(t, body, `data-testid="join-tokens-empty"`)
	require.NotContains(t, body, `data-testid="join-tokens-active"`)

	for _, d := range []string{"keep", "expire", "revoke", "revoke too"} {
		handlerstest.CreateJoinToken(t, c, cl, url.Values{"description": {d}, "lifetime": {"24h"}, "uses": {"unlimited"}})
	}
	_, err := b.Pool.Exec(ctx, "UPDATE join_tokens SET expires_at = now() - interval '1 minute' WHERE cluster_id = $1 AND description = 'expire'", cl.ID)
	require.NoError(t, err)
	for _, d := range []string{"revoke", "revoke too"} {
		var id int64
		require.NoError(t, b.Pool.QueryRow(ctx, "SELECT id FROM join_tokens WHERE cluster_id = $1 AND description = $2", cl.ID, d).Scan(&id))
		revoke := fmt.Sprintf("%s/%d/revoke", page, id)
		resp := c.Post(revoke, revoke, nil)
		require.Equal(t, http.StatusSeeOther, resp.StatusCode, handlerstest.ReadBody(t, resp))
	}

	_, body = c.Get(page)
	group := func(name string) string {
		t.Helper()
		start := strings.Index(body, `data-testid="join-tokens-`+name+`"`)
		require.GreaterOrEqual(t, start, 0, name)
		rest := body[start:]
		if end := strings.Index(rest[1:], `class="join-token-group"`); end >= 0 {
			rest = rest[:end+1]
		}
		return rest
	}
	active, expired, revoked := group("active"), group("expired"), group("revoked")
	require.True(t, strings.HasPrefix(active, `data-testid="join-tokens-active" data-count="1"`), active)
	require.Contains(t, active, "Active (1)")
	require.Contains(t, active, " keep")
	require.Contains(t, active, `data-testid="join-command"`)
	require.True(t, strings.HasPrefix(expired, `data-testid="join-tokens-expired" data-count="1"`), expired)
	require.Contains(t, expired, "Expired (1)")
	require.Contains(t, expired, " expire")
	require.NotContains(t, expired, `data-testid="join-command"`)
	require.True(t, strings.HasPrefix(revoked, `data-testid="join-tokens-revoked" data-count="2"`), revoked)
	require.Contains(t, revoked, "Revoked (2)")
	require.NotContains(t, revoked, `data-testid="join-command"`)
	require.Less(t, strings.Index(body, `data-testid="join-tokens-active"`), strings.Index(body, `data-testid="join-tokens-expired"`), "active first")
	require.Less(t, strings.Index(body, `data-testid="join-tokens-expired"`), strings.Index(body, `data-testid="join-tokens-revoked"`))
	require.Contains(t, body, `<details class="join-token-group" data-testid="join-tokens-revoked"`, "folded")
	require.NotContains(t, body, `data-testid="join-tokens-used_up"`, "no group without tokens")
}

// TestClusterEventsTabLive: the Events tab of a cluster being made asks
// its live updates for the events alone: they bring no state or progress,
// which the tab does not show (htmx would find no place for them), while
// the overview's still do.
func TestClusterEventsTabLive(t *testing.T) {
	t.Parallel()
	b := handlerstest.Setup(t)
	b.ConnectHost(t)
	c, _ := b.SignedUpUser(t, "timeline")
	cl := b.NewCluster(t, c, "timeline")
	base := fmt.Sprintf("/clusters/%d", cl.ID)

	_, page := c.Get(base + "/activity")
	require.NotContains(t, page, `id="cluster-state"`)
	require.Regexp(t, `hx-get="/clusters/\d+/events\?after=\d+&amp;only=events"`, page)
	require.Regexp(t, `sse-connect="/clusters/\d+/stream\?after=\d+&amp;only=events"`, page)
	_, frag := c.HTMX(base + "/events?after=0&only=events")
	require.Contains(t, frag, `data-testid="cluster-event"`)
	require.NotContains(t, frag, `id="cluster-state"`)
	require.NotContains(t, frag, `id="cluster-progress"`)
	require.Contains(t, frag, `only=events`, "the next poller asks the same")

	_, page = c.Get(base)
	require.Contains(t, page, `id="cluster-state"`)
	require.NotContains(t, page, "only=events")
	_, frag = c.HTMX(base + "/events?after=0")
	require.Contains(t, frag, `id="cluster-state"`)
}
