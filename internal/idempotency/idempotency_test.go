package idempotency_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgtype"
	"github.com/stretchr/testify/require"

	"github.com/kubebyon/kubebyon/internal/idempotency"
	"github.com/kubebyon/kubebyon/internal/testenv"
	"github.com/kubebyon/kubebyon/queries"
)

func TestValidKey(t *testing.T) {
	t.Parallel()
	for key, want := range map[string]bool{
		"":                       false,
		"a":                      true,
		"7f1c-4a2e uuid or not":  true,
		strings.Repeat("k", 255): true,
		strings.Repeat("k", 256): false,
		"tab\there":              false,
		"é":                      false,
		"nul\x00":                false,
	} {
		require.Equal(t, want, idempotency.ValidKey(key), "%q", key)
	}
}

// TestClaim: a key is claimed once; its answer is given back for the same
// request, refused for another, waited for while the first runs, and
// claimable again once released, a day old, or its request died.
func TestClaim(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool := testenv.DB(t)
	s := &idempotency.Store{Pool: pool, Poll: 10 * time.Millisecond, Wait: 200 * time.Millisecond}
	u, err := queries.New(pool).UserCreate(ctx, queries.UserCreateParams{
		Email: "ada@example.com", Name: "Ada", Role: "user", EmailVerifiedAt: pgtype.Timestamptz{Time: time.Now(), Valid: true},
	})
	require.NoError(t, err)
	h := idempotency.Hash("POST", "/api/v1/clusters", []byte(`{"name":"a"}`))
	other := idempotency.Hash("POST", "/api/v1/clusters", []byte(`{"name":"b"}`))
	require.NotEqual(t, h, other)

	claimed, _, err := s.Claim(ctx, u.ID, "k1", h)
	require.NoError(t, err)
	require.True(t, claimed)

	// Still running: a second waits, then is told so.
	_, _, err = s.Claim(ctx, u.ID, "k1", h)
	require.ErrorIs(t, err, idempotency.ErrInFlight)
	_, _, err = s.Claim(ctx, u.ID, "k1", other)
	require.ErrorIs(t, err, idempotency.ErrKeyReused)

	// A second waiting while the first finishes gets its answer.
	answer := idempotency.Answer{Status: 201, ContentType: "application/json", Location: "/api/v1/clusters/9", Body: []byte(`{"id":9}`)}
	done := make(chan idempotency.Answer)
	go func() {
		slow := &idempotency.Store{Pool: pool, Poll: 10 * time.Millisecond, Wait: 5 * time.Second}
		claimed, first, err := slow.Claim(ctx, u.ID, "k1", h)
		if err != nil || claimed {
			first = idempotency.Answer{}
		}
		done <- first
	}()
	time.Sleep(50 * time.Millisecond)
	require.NoError(t, s.Finish(ctx, u.ID, "k1", h, answer))
	require.Equal(t, answer, <-done)

	claimed, first, err := s.Claim(ctx, u.ID, "k1", h)
	require.NoError(t, err)
	require.False(t, claimed)
	require.Equal(t, answer, first)
	_, _, err = s.Claim(ctx, u.ID, "k1", other)
	require.ErrorIs(t, err, idempotency.ErrKeyReused, "a finished key with another request")

	// Keys are per user.
	eve, err := queries.New(pool).UserCreate(ctx, queries.UserCreateParams{Email: "eve@example.com", Name: "Eve", Role: "user"})
	require.NoError(t, err)
	claimed, _, err = s.Claim(ctx, eve.ID, "k1", other)
	require.NoError(t, err)
	require.True(t, claimed)

	// Released (a server error): claimed again.
	claimed, _, err = s.Claim(ctx, u.ID, "k2", h)
	require.NoError(t, err)
	require.True(t, claimed)
	require.NoError(t, s.Release(ctx, u.ID, "k2", h))
	claimed, _, err = s.Claim(ctx, u.ID, "k2", other)
	require.NoError(t, err)
	require.True(t, claimed, "released, the key is free for any request")

	// A day old, or a request that died: claimed again.
	_, err = pool.Exec(ctx, "UPDATE api_idempotency SET created_at = now() - interval '25 hours' WHERE key = 'k1' AND user_id = $1", u.ID)
	require.NoError(t, err)
	claimed, _, err = s.Claim(ctx, u.ID, "k1", other)
	require.NoError(t, err)
	require.True(t, claimed, "a day old")
	_, err = pool.Exec(ctx, "UPDATE api_idempotency SET created_at = now() - interval '6 minutes' WHERE key = 'k2' AND user_id = $1", u.ID)
	require.NoError(t, err)
	claimed, _, err = s.Claim(ctx, u.ID, "k2", h)
	require.NoError(t, err)
	require.True(t, claimed, "its request died")

	n, err := queries.New(pool).IdempotencyDeleteOld(ctx)
	require.NoError(t, err)
	require.Zero(t, n, "nothing is a day old now")
}
