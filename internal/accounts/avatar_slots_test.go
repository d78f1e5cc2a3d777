package accounts

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/kubebyon/kubebyon/internal/audit"
)

// TestAvatarSlots: no more than AvatarsAtOnce uploads decode at once; the
// next waits for a slot, and gives up with its request.
func TestAvatarSlots(t *testing.T) {
	t.Parallel()
	s := &Service{}
	ctx := context.Background()
	var releases []func()
	for range AvatarsAtOnce {
		release, err := s.avatarSlot(ctx)
		require.NoError(t, err)
		releases = append(releases, release)
	}
	short, cancel := context.WithTimeout(ctx, 50*time.Millisecond)
	defer cancel()
	err := s.SetAvatar(short, 1, []byte("not decoded"), audit.Actor{})
	require.True(t, errors.Is(err, context.DeadlineExceeded), "waited for a slot: %v", err)

	releases[0]()
	release, err := s.avatarSlot(ctx)
	require.NoError(t, err, "a freed slot is taken at once")
	release()
	releases[1]()
}

// TestAvatarOneAtATimePerUser: while one upload of a user's is processed,
// their next is refused with a field error at once; other users go ahead.
func TestAvatarOneAtATimePerUser(t *testing.T) {
	t.Parallel()
	s := &Service{}
	ctx := context.Background()
	release, ok := s.avatarUserSlot(1)
	require.True(t, ok)

	err := s.SetAvatar(ctx, 1, []byte("not a picture"), audit.Actor{})
	require.Equal(t, FieldErrors{"avatar": "ErrAvatarBusy"}, err)
	// Another user's upload is processed (and refused for what it is).
	err = s.SetAvatar(ctx, 2, []byte("not a picture"), audit.Actor{})
	require.Equal(t, FieldErrors{"avatar": "ErrAvatarType"}, err)

	release()
	err = s.SetAvatar(ctx, 1, []byte("not a picture"), audit.Actor{})
	require.Equal(t, FieldErrors{"avatar": "ErrAvatarType"}, err, "the user's next upload goes ahead")
}
