package accounts_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/kubebyon/kubebyon/internal/accounts"
	"github.com/kubebyon/kubebyon/internal/audit"
	"github.com/kubebyon/kubebyon/internal/notify"
	"github.com/kubebyon/kubebyon/internal/testenv"
)

// TestNotificationsPagedAndMarkedOneByOne: the inbox reads a page at a
// time, newest first; marking named notifications read marks those of the
// user only, counts them, and is audited once something was marked.
func TestNotificationsPagedAndMarkedOneByOne(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool := testenv.DB(t)
	s := &accounts.Service{Pool: pool}
	ann, bob := person(t, pool, "ann@example.com"), person(t, pool, "bob@example.com")
	insert := func(user int64) int64 {
		var id int64
		require.NoError(t, pool.QueryRow(ctx, `INSERT INTO notifications (user_id, kind, title) VALUES ($1, 'test', 'hello') RETURNING id`, user).Scan(&id))
		return id
	}
	a1, a2, a3, b1 := insert(ann), insert(ann), insert(ann), insert(bob)

	page, err := s.Notifications(ctx, ann, 0, 2)
	require.NoError(t, err)
	require.Equal(t, []int64{a3, a2}, []int64{page[0].ID, page[1].ID})
	page, err = s.Notifications(ctx, ann, a2, 2)
	require.NoError(t, err)
	require.Len(t, page, 1)
	require.Equal(t, a1, page[0].ID)

	audited := func() (n int) {
		require.NoError(t, pool.QueryRow(ctx, `SELECT count(*) FROM audit_events WHERE action = 'notification.read'`).Scan(&n))
		return n
	}
	tests := []struct {
		name    string
		ids     []int64
		marked  int64
		audited int
		unread  int64
	}{
		{"bob's is not ann's", []int64{b1}, 0, 0, 3},
		{"two of ann's, and bob's", []int64{a1, a3, b1}, 2, 1, 1},
		{"again", []int64{a1, a3}, 0, 1, 1},
		{"none", []int64{}, 0, 1, 1},
		{"the last", []int64{a2, a2}, 1, 2, 0},
	}
	for _, tt := range tests {
		n, err := s.MarkSomeNotificationsRead(ctx, ann, tt.ids, audit.Actor{UserID: ann})
		require.NoError(t, err, tt.name)
		require.Equal(t, tt.marked, n, tt.name)
		require.Equal(t, tt.audited, audited(), tt.name)
		unread, err := s.UnreadNotifications(ctx, ann)
		require.NoError(t, err)
		require.Equal(t, tt.unread, unread, tt.name)
	}
	unread, err := s.UnreadNotifications(ctx, bob)
	require.NoError(t, err)
	require.Equal(t, int64(1), unread, "bob's stays unread")
}

// TestSetSomeNotificationPreferences: the channels a change leaves out
// keep their value, as do the kinds it leaves out.
func TestSetSomeNotificationPreferences(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool := testenv.DB(t)
	s := &accounts.Service{Pool: pool}
	ann := person(t, pool, "ann@example.com")
	before, err := s.NotificationPreferences(ctx, ann)
	require.NoError(t, err)

	flipped := !before[notify.ClusterFailed][notify.Email]
	change := accounts.Preferences{notify.ClusterFailed: {notify.Email: flipped}}
	require.NoError(t, s.SetNotificationPreferences(ctx, ann, change, audit.Actor{UserID: ann}))
	after, err := s.NotificationPreferences(ctx, ann)
	require.NoError(t, err)
	want := before
	want[notify.ClusterFailed][notify.Email] = flipped
	require.Equal(t, want, after)
	var rows int
	require.NoError(t, pool.QueryRow(ctx, `SELECT count(*) FROM notification_preferences WHERE user_id = $1`, ann).Scan(&rows))
	require.Equal(t, 1, rows, "only the channel named is stored")
}
