package apikeys_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/kubebyon/kubebyon/internal/apikeys"
	"github.com/kubebyon/kubebyon/internal/audit"
	"github.com/kubebyon/kubebyon/internal/orgs"
	"github.com/kubebyon/kubebyon/queries"
)

// TestKeyActsInItsOrganization: a key acts in its organization with its
// owner's role there (a read key as a viewer). A member removed from the
// organization loses their keys in it (401, and revoked for good); their
// keys elsewhere, and the other members' keys, still work.
func TestKeyActsInItsOrganization(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()
	orgSvc := &orgs.Service{Pool: b.pool}
	ann, bob := b.user(t, "ann@example.com", true), b.user(t, "bob@example.com", true)
	annActor, bobActor := audit.Actor{UserID: ann.ID, Email: ann.Email}, audit.Actor{UserID: bob.ID, Email: bob.Email}

	personal := b.create(t, bob, apikeys.Expiry{Choice: apikeys.ExpiryNever})
	caller, err := b.svc.Authenticate(ctx, personal.Value, "192.0.2.1")
	require.NoError(t, err)
	mine, err := orgSvc.Personal(ctx, bob.ID)
	require.NoError(t, err)
	require.Equal(t, mine.Org.ID, caller.OrgID, "a key acts in its owner's personal organization")
	require.Equal(t, orgs.Owner, caller.OrgRole)

	team, err := orgSvc.Create(ctx, "Team", annActor)
	require.NoError(t, err)
	_, err = b.pool.Exec(ctx, "INSERT INTO organization_members (org_id, user_id, role) VALUES ($1, $2, 'member')", team.ID, bob.ID)
	require.NoError(t, err)
	// Keys made in the team.
	never := apikeys.Expiry{Choice: apikeys.ExpiryNever}
	inTeam := func(u queries.User) orgs.Acting { return orgs.Acting{OrgID: team.ID, UserID: u.ID} }
	write, err := b.svc.Create(ctx, inTeam(bob), "writes", apikeys.ScopeWrite, never, bobActor)
	require.NoError(t, err)
	read, err := b.svc.Create(ctx, inTeam(bob), "reads", apikeys.ScopeRead, never, bobActor)
	require.NoError(t, err)
	annKey, err := b.svc.Create(ctx, inTeam(ann), "ann's", apikeys.ScopeWrite, never, annActor)
	require.NoError(t, err)
	// Not in an organization one is not a member of.
	outsider := b.user(t, "outsider@example.com", true)
	_, err = b.svc.Create(ctx, inTeam(outsider), "in", apikeys.ScopeWrite, never, annActor)
	require.ErrorIs(t, err, apikeys.ErrNotFound)
	for _, tt := range []struct {
		key  string
		role orgs.Role
	}{{write.Value, orgs.Member}, {read.Value, orgs.Viewer}, {annKey.Value, orgs.Owner}} {
		caller, err := b.svc.Authenticate(ctx, tt.key, "192.0.2.1")
		require.NoError(t, err)
		require.Equal(t, team.ID, caller.OrgID)
		require.Equal(t, tt.role, caller.OrgRole)
	}

	require.NoError(t, orgSvc.Remove(ctx, team.ID, bob.ID, annActor))
	for _, k := range []string{write.Value, read.Value} {
		_, err := b.svc.Authenticate(ctx, k, "192.0.2.1")
		require.ErrorIs(t, err, apikeys.ErrUnauthorized)
	}
	var revoked int
	require.NoError(t, b.pool.QueryRow(ctx, "SELECT count(*) FROM api_keys WHERE org_id = $1 AND user_id = $2 AND revoked_at IS NOT NULL", team.ID, bob.ID).Scan(&revoked))
	require.Equal(t, 2, revoked, "revoked, so that joining again does not bring them back")
	for _, k := range []string{personal.Value, annKey.Value} {
		_, err := b.svc.Authenticate(ctx, k, "192.0.2.1")
		require.NoError(t, err)
	}
}
