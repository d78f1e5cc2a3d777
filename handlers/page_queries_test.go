package handlers_test

import (
	"context"
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/kubebyon/kubebyon/handlers"
	"github.com/kubebyon/kubebyon/handlers/handlerstest"
	"github.com/kubebyon/kubebyon/internal/sessioncache"
	"github.com/kubebyon/kubebyon/internal/testenv"
)

// TestPageQueries checks that the pages a signed-in browser asks for most
// (the cluster list, the overview, the cluster page, its nodes page, the
// admin user list) read the session with its user and the organization
// it works in in one query, and what they show in one query each (the
// cluster page its cluster with its events; the nodes page two: the
// cluster, then its nodes as plain rows, which cost less than the same
// rows as JSON in one statement; the overview two: its figures with its
// newest clusters and events, then notifications), and show it to its
// owner, or an admin, alone. With the session cache (serve's), a page
// whose session is kept makes the page's queries alone.
func TestPageQueries(t *testing.T) {
	t.Parallel()
	for _, cached := range []bool{false, true} {
		t.Run(fmt.Sprintf("session kept %v", cached), func(t *testing.T) {
			t.Parallel()
			pageQueries(t, cached)
		})
	}
}

func pageQueries(t *testing.T, cached bool) {
	trips := &testenv.RoundTrips{}
	var opts []func(*handlers.Deps)
	if cached {
		opts = append(opts, handlerstest.WithSessionCache(t, time.Hour, sessioncache.Channel))
	}
	b := handlerstest.SetupTraced(t, trips, opts...)
	ctx := context.Background()
	owner, ownerEmail := b.SignedUpUser(t, "preload-owner")
	other, _ := b.SignedUpUser(t, "preload-other")
	admin, _ := b.SignedUpAdmin(t, "preload-admin")
	id := b.InsertCluster(t, b.UserID(t, ownerEmail), "preloaded", "preloaded-p1q2r3", "v1.34.0", "nodeport", "ready")
	// A ready cluster has its endpoint: the page need not work one out.
	_, err := b.Pool.Exec(ctx, `UPDATE clusters SET endpoint = 'preloaded.example.test:443' WHERE id = $1`, id)
	require.NoError(t, err)
	_, err = b.Pool.Exec(ctx, `INSERT INTO nodes (cluster_id, name, ready, conditions, addresses)
		VALUES ($1, 'preload-node', true, '[{"type":"Ready","status":"True"}]', '[]')`, id)
	require.NoError(t, err)
	b.Event(t, id, "info", "Ready", "preloaded event")

	pages := []struct {
		name    string
		c       *handlerstest.Client
		path    string
		shows   string
		queries int
	}{
		{"cluster list", owner, "/clusters", "preloaded", 2},
		{"overview", owner, "/", "The cluster is ready.", 3},
		{"cluster page", owner, fmt.Sprintf("/clusters/%d", id), "preloaded event", 2},
		{"nodes page", owner, fmt.Sprintf("/clusters/%d/nodes", id), "preload-node", 3},
		{"admin user list", admin, "/admin/users", ownerEmail, 2},
		{"admin user search", admin, "/admin/users?q=preload-owner", ownerEmail, 2},
	}
	for _, p := range pages {
		// The first page of a session may save it (keepSessionAlive) and
		// fill caches; the next ones are as every later page is.
		code, _ := p.c.Get(p.path)
		require.Equal(t, http.StatusOK, code, p.name)
		if cached {
			// The page's queries alone once the session is kept.
			body := servedKept(t, trips, p.c, p.path, p.queries-1)
			require.Contains(t, body, p.shows, p.name)
			require.Zero(t, trips.Batches(), p.name)
			continue
		}
		trips.Reset()
		code, body := p.c.Get(p.path)
		require.Equal(t, http.StatusOK, code, p.name)
		require.Contains(t, body, p.shows, p.name)
		require.Len(t, trips.Statements(), p.queries, "%s: the session with its user, then the page's", p.name)
		require.Zero(t, trips.Batches(), p.name)
	}

	// Shown to no one else.
	for _, path := range []string{fmt.Sprintf("/clusters/%d", id), fmt.Sprintf("/clusters/%d/nodes", id), "/admin/users"} {
		code, body := other.Get(path)
		require.Equal(t, http.StatusNotFound, code, path)
		require.NotContains(t, body, "preloaded", path)
		require.NotContains(t, body, ownerEmail, path)
	}
	// A bad ID is the page's to refuse, as without a session.
	code, _ := owner.Get("/clusters/not-a-number/nodes")
	require.Equal(t, http.StatusNotFound, code)
	// Signed out, the pages ask for a sign-in.
	anonymous := b.Client(t)
	resp, err := anonymous.HTTP.Get(anonymous.Base + fmt.Sprintf("/clusters/%d/nodes", id))
	require.NoError(t, err)
	resp.Body.Close()
	require.Equal(t, http.StatusSeeOther, resp.StatusCode)
}
