package handlers

import (
	"bytes"
	"context"
	"testing"
	"time"

	"github.com/alexedwards/scs/v2"
	"github.com/jackc/pgx/v5/pgtype"
	"github.com/stretchr/testify/require"

	"github.com/kubebyon/kubebyon/internal/secrets"
	"github.com/kubebyon/kubebyon/internal/testenv"
	"github.com/kubebyon/kubebyon/queries"
)

// TestSessionStoreReadsTheUserWithTheSession checks that the store reads
// a signed-in browser's session and its user in one go, and every other
// session (none signed in, signed out elsewhere, saved before the rows
// named their user session) as a session alone, which loadUser then
// authenticates itself.
func TestSessionStoreReadsTheUserWithTheSession(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool := testenv.DB(t)
	box, err := secrets.New(bytes.Repeat([]byte{3}, 32))
	require.NoError(t, err)
	q := queries.New(pool)
	store := sessionStore{pool: pool, box: box, idle: func() time.Duration { return time.Hour }}
	u, err := q.UserCreate(ctx, queries.UserCreateParams{
		Email: "store@example.com", Name: "Store", Role: "user",
		EmailVerifiedAt: pgtype.Timestamptz{Time: time.Now(), Valid: true},
	})
	require.NoError(t, err)
	for _, sid := range []string{"sid-live", "sid-ended"} {
		require.NoError(t, q.UserSessionCreate(ctx, queries.UserSessionCreateParams{ID: sid, UserID: u.ID}))
	}
	require.NoError(t, q.UserSessionEnd(ctx, "sid-ended"))
	_, err = q.NotificationCreate(ctx, queries.NotificationCreateParams{UserID: u.ID, Kind: "test", Message: "TestMessage", Params: []byte("{}")})
	require.NoError(t, err)

	expiry := time.Now().Add(time.Hour)
	save := func(token string, values map[string]any, codec scs.Codec) []byte {
		b, err := codec.Encode(expiry, values)
		require.NoError(t, err)
		require.NoError(t, store.CommitCtx(ctx, token, b, expiry))
		return b
	}
	tests := []struct {
		name     string
		values   map[string]any
		codec    scs.Codec
		signedIn bool
	}{
		{"signed in", map[string]any{sessionID: "sid-live", sessionCSRF: "c"}, sessionCodec{}, true},
		{"not signed in", map[string]any{sessionCSRF: "c"}, sessionCodec{}, false},
		{"signed out elsewhere", map[string]any{sessionID: "sid-ended"}, sessionCodec{}, false},
		{"no such user session", map[string]any{sessionID: "sid-gone"}, sessionCodec{}, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			token := "token-" + tc.name
			want := save(token, tc.values, tc.codec)
			holder := &signedIn{}
			got, found, err := store.FindCtx(context.WithValue(ctx, signedInKey{}, holder), token)
			require.NoError(t, err)
			require.True(t, found)
			require.Equal(t, want, got)
			row, ok := signedInFrom(context.WithValue(ctx, signedInKey{}, holder))
			require.Equal(t, tc.signedIn, ok)
			if ok {
				require.Equal(t, u.ID, row.User.ID)
				require.Equal(t, "sid-live", row.UserSessionID)
				require.EqualValues(t, 1, row.Unread)
			}
		})
	}

	// A row saved before the column, by gob: read alone, then named at
	// its next save.
	old, err := scs.GobCodec{}.Encode(expiry, map[string]any{sessionID: "sid-live"})
	require.NoError(t, err)
	_, err = pool.Exec(ctx, "INSERT INTO sessions (token, data, expiry) VALUES ($1, $2, $3)", store.tokenHash("old"), old, expiry)
	require.NoError(t, err)
	holder := &signedIn{}
	got, found, err := store.FindCtx(context.WithValue(ctx, signedInKey{}, holder), "old")
	require.NoError(t, err)
	require.True(t, found)
	require.Equal(t, old, got)
	require.False(t, holder.found)
	require.NoError(t, store.CommitCtx(ctx, "old", old, expiry))
	_, _, err = store.FindCtx(context.WithValue(ctx, signedInKey{}, holder), "old")
	require.NoError(t, err)
	require.True(t, holder.found, "the gob session names its user session once saved again")

	// Without a place for the user (outside a request), and for a token
	// never saved.
	got, found, err = store.FindCtx(ctx, "old")
	require.NoError(t, err)
	require.True(t, found)
	require.Equal(t, old, got)
	_, found, err = store.FindCtx(context.WithValue(ctx, signedInKey{}, &signedIn{}), "never")
	require.NoError(t, err)
	require.False(t, found)
}
