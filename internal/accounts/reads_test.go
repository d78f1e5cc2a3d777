package accounts_test

import (
	"context"
	"testing"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/kubebyon/kubebyon/internal/accounts"
	"github.com/kubebyon/kubebyon/internal/audit"
	"github.com/kubebyon/kubebyon/internal/avatars"
	"github.com/kubebyon/kubebyon/internal/testenv"
)

func TestMain(m *testing.M) { testenv.Main(m) }

// person makes a verified account; its id.
func person(t *testing.T, pool *pgxpool.Pool, email string) int64 {
	t.Helper()
	var id int64
	require.NoError(t, pool.QueryRow(context.Background(),
		`INSERT INTO users (email, name, email_verified_at) VALUES ($1, $1, now()) RETURNING id`, email).Scan(&id))
	return id
}

// TestNotificationsRead: the inbox is the user's own; marking it read
// marks theirs only and is audited once, when there was something to mark.
func TestNotificationsRead(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool := testenv.DB(t)
	s := &accounts.Service{Pool: pool}
	ann, bob := person(t, pool, "ann@example.com"), person(t, pool, "bob@example.com")
	for _, u := range []int64{ann, ann, bob} {
		_, err := pool.Exec(ctx, `INSERT INTO notifications (user_id, kind, title) VALUES ($1, 'test', 'hello')`, u)
		require.NoError(t, err)
	}
	audited := func() (n int) {
		require.NoError(t, pool.QueryRow(ctx, `SELECT count(*) FROM audit_events WHERE action = 'notification.read_all'`).Scan(&n))
		return n
	}
	tests := []struct {
		name    string
		user    int64
		marked  int64
		audited int
	}{
		{"ann's two", ann, 2, 1},
		{"none left", ann, 0, 1},
		{"bob's one", bob, 1, 2},
	}
	for _, tt := range tests {
		n, err := s.MarkNotificationsRead(ctx, tt.user, audit.Actor{UserID: tt.user})
		require.NoError(t, err, tt.name)
		require.Equal(t, tt.marked, n, tt.name)
		require.Equal(t, tt.audited, audited(), tt.name)
	}
	rows, err := s.Notifications(ctx, ann, 0, 1)
	require.NoError(t, err)
	require.Len(t, rows, 1, "up to n")
	require.Equal(t, ann, rows[0].UserID)
	require.True(t, rows[0].ReadAt.Valid)
}

// TestAvatarAndSession: a user without a picture has their initials; an
// unknown user has none; an ended session signs no one in.
func TestAvatarAndSession(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool := testenv.DB(t)
	s := &accounts.Service{Pool: pool}
	ann := person(t, pool, "ann@example.com")

	a, err := s.Avatar(ctx, ann)
	require.NoError(t, err)
	require.Equal(t, "image/svg+xml", a.ContentType)
	require.Equal(t, avatars.ETag(a.Body), a.ETag)
	_, err = s.Avatar(ctx, ann+1000)
	require.ErrorIs(t, err, accounts.ErrUserNotFound)

	_, err = pool.Exec(ctx, `INSERT INTO user_sessions (id, user_id) VALUES ('live', $1), ('ended', $1)`, ann)
	require.NoError(t, err)
	_, err = pool.Exec(ctx, `UPDATE user_sessions SET ended_at = now() WHERE id = 'ended'`)
	require.NoError(t, err)
	tests := []struct {
		sid string
		err error
	}{
		{"live", nil},
		{"ended", accounts.ErrNoSession},
		{"unknown", accounts.ErrNoSession},
	}
	for _, tt := range tests {
		row, err := s.SessionUser(ctx, tt.sid)
		if tt.err != nil {
			require.ErrorIs(t, err, tt.err, tt.sid)
			continue
		}
		require.NoError(t, err, tt.sid)
		require.Equal(t, ann, row.User.ID)
		require.NoError(t, s.TouchSession(ctx, tt.sid))
		etag, has, err := s.AvatarETag(ctx, row.User)
		require.NoError(t, err)
		require.False(t, has, "no picture uploaded")
		require.Equal(t, a.ETag, etag, "the initials' version")
	}
}
