package webhooks_test

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/kubebyon/kubebyon/internal/webhooks"
	"github.com/kubebyon/kubebyon/queries"
)

// TestStandby: while the database answers, the platform's channels are
// kept in memory; once every ping has failed for StandbyDownAfter (a real
// pool to a port nothing listens on), the channel is told, once, from
// memory; and once more when the database answers again. Users' channels
// are never told.
func TestStandby(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()
	b.allowLoopback(t)
	_, admin := b.user(t, "standby-admin@example.com", "admin")
	u, ua := b.user(t, "standby-user@example.com", "user")

	got := make(chan webhooks.Event, 10)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		var e webhooks.Event
		if json.Unmarshal(body, &e) == nil {
			got <- e
		}
	}))
	t.Cleanup(srv.Close)
	_, err := b.svc.Create(ctx, webhooks.Platform, "en", webhooks.Input{Name: "ops", Kind: webhooks.Generic, URL: srv.URL + "/platform"}, admin)
	require.NoError(t, err)
	_, err = b.svc.Create(ctx, b.personal(t, u.ID), "en", webhooks.Input{Name: "mine", Kind: webhooks.Generic, URL: srv.URL + "/user"}, ua)
	require.NoError(t, err)

	dead, err := pgxpool.New(ctx, "postgres://nobody@127.0.0.1:1/none?connect_timeout=1")
	require.NoError(t, err)
	t.Cleanup(dead.Close)
	ping := b.svc.Pool.Ping
	now := time.Now()
	s := &webhooks.Standby{
		Queries: queries.New(b.svc.Pool), Webhooks: b.svc, Logger: slog.New(slog.NewTextHandler(io.Discard, nil)),
		Ping: func(ctx context.Context) error { return ping(ctx) },
		Now:  func() time.Time { return now },
	}
	step := func(at time.Duration) {
		t.Helper()
		now = now.Add(at)
		s.Step(ctx)
	}
	none := func(msg string) {
		t.Helper()
		select {
		case e := <-got:
			t.Fatalf("%s: told %q", msg, e.Title)
		case <-time.After(200 * time.Millisecond):
		}
	}

	step(0) // up: the channels are read
	ping = dead.Ping
	step(0)
	step(webhooks.StandbyDownAfter - time.Second)
	none("down for less than StandbyDownAfter")
	step(time.Second)
	select {
	case e := <-got:
		require.Equal(t, webhooks.EventDatabase, e.Kind)
		require.Equal(t, "The platform's database does not answer", e.Title)
		require.Contains(t, e.Body, "3 minutes")
	case <-time.After(10 * time.Second):
		t.Fatal("the platform channel was not told the database is down")
	}
	step(time.Minute)
	none("told once")

	ping = b.svc.Pool.Ping
	step(time.Minute)
	select {
	case e := <-got:
		require.Equal(t, "The platform's database answers again", e.Title)
		require.Contains(t, e.Body, "5 minutes")
	case <-time.After(10 * time.Second):
		t.Fatal("the platform channel was not told the database is back")
	}
	step(time.Minute)
	none("back, once; the user's channel never")

	// A short outage is not told, neither down nor back.
	ping = dead.Ping
	step(time.Minute)
	ping = b.svc.Pool.Ping
	step(time.Minute)
	none("a short outage")
}
