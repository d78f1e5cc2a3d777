package apikeys_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/kubebyon/kubebyon/internal/apikeys"
	"github.com/kubebyon/kubebyon/internal/audit"
	"github.com/kubebyon/kubebyon/queries"
)

// TestPage: a user's keys read a page at a time, newest first, revoked
// ones included; another user's never.
func TestPage(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()
	ann, bob := b.user(t, "ann@example.com", true), b.user(t, "bob@example.com", true)
	var ids []int64
	for range 3 {
		ids = append(ids, b.create(t, ann, apikeys.Expiry{Choice: apikeys.ExpiryNever}).Key.ID)
	}
	b.create(t, bob, apikeys.Expiry{Choice: apikeys.ExpiryNever})
	require.NoError(t, b.svc.Revoke(ctx, ann.ID, ids[1], actorOf(ann)))

	first, err := b.svc.Page(ctx, ann.ID, 0, 2)
	require.NoError(t, err)
	require.Equal(t, []int64{ids[2], ids[1]}, keyIDs(first))
	require.True(t, first[1].RevokedAt.Valid)
	rest, err := b.svc.Page(ctx, ann.ID, ids[1], 2)
	require.NoError(t, err)
	require.Equal(t, []int64{ids[0]}, keyIDs(rest))
	bobs, err := b.svc.Page(ctx, bob.ID, 0, 10)
	require.NoError(t, err)
	require.Len(t, bobs, 1, "bob's own key only")
	require.Equal(t, bob.ID, bobs[0].UserID)
}

// TestWithin: a key may make keys of its own scope or below.
func TestWithin(t *testing.T) {
	t.Parallel()
	tests := []struct {
		scope, max string
		want       bool
	}{
		{apikeys.ScopeRead, apikeys.ScopeRead, true},
		{apikeys.ScopeWrite, apikeys.ScopeRead, false},
		{apikeys.ScopeRead, apikeys.ScopeWrite, true},
		{apikeys.ScopeWrite, apikeys.ScopeWrite, true},
		{apikeys.ScopeAdmin, apikeys.ScopeWrite, false},
		{apikeys.ScopeAdmin, apikeys.ScopeAdmin, true},
		{apikeys.ScopeWrite, apikeys.ScopeAdmin, true},
		{"root", apikeys.ScopeAdmin, false},
		{"", apikeys.ScopeAdmin, false},
		{apikeys.ScopeRead, "", false},
	}
	for _, tt := range tests {
		require.Equal(t, tt.want, apikeys.Within(tt.scope, tt.max), "%q within %q", tt.scope, tt.max)
	}
}

func actorOf(u queries.User) audit.Actor { return audit.Actor{UserID: u.ID, Email: u.Email} }

func keyIDs(keys []queries.ApiKey) []int64 {
	out := make([]int64, len(keys))
	for i, k := range keys {
		out[i] = k.ID
	}
	return out
}
