package adminusers_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/kubebyon/kubebyon/internal/adminusers"
	"github.com/kubebyon/kubebyon/internal/audit"
	"github.com/kubebyon/kubebyon/internal/orgs"
	"github.com/kubebyon/kubebyon/internal/testenv"
)

// TestDeleteWithOrganizations: deleting an account takes its personal
// organization and the teams of which it is the only member with it; it
// is refused while it is the only owner of a team that has other members
// (which would be left without an owner), and goes once another member
// owns that team too.
func TestDeleteWithOrganizations(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool := testenv.DB(t)
	admin := createUser(t, pool, "admin@orgs.test", "admin", "admin password 1")
	ann := createUser(t, pool, "ann@orgs.test", "user", "ann password 12")
	bob := createUser(t, pool, "bob@orgs.test", "user", "bob password 12")
	svc := &adminusers.Service{Pool: pool}
	org := &orgs.Service{Pool: pool}
	annActor := audit.Actor{UserID: ann.ID, Email: ann.Email}
	adminActor := audit.Actor{UserID: admin.ID, Email: admin.Email}

	solo, err := org.Create(ctx, "Solo", annActor)
	require.NoError(t, err)
	team, err := org.Create(ctx, "Team", annActor)
	require.NoError(t, err)
	_, err = pool.Exec(ctx, "INSERT INTO organization_members (org_id, user_id, role) VALUES ($1, $2, 'member')", team.ID, bob.ID)
	require.NoError(t, err)

	require.ErrorIs(t, svc.Delete(ctx, ann.ID, ann.Email, "admin password 1", adminActor), adminusers.ErrSoleOwner)
	require.NoError(t, org.SetRole(ctx, team.ID, bob.ID, orgs.Owner, annActor))
	require.NoError(t, svc.Delete(ctx, ann.ID, ann.Email, "admin password 1", adminActor))

	var soloLeft, teamLeft, personalLeft int
	require.NoError(t, pool.QueryRow(ctx, `SELECT
		(SELECT count(*) FROM organizations WHERE id = $1),
		(SELECT count(*) FROM organizations WHERE id = $2),
		(SELECT count(*) FROM organizations WHERE personal_of = $3)`, solo.ID, team.ID, ann.ID).Scan(&soloLeft, &teamLeft, &personalLeft))
	require.Zero(t, soloLeft, "a team of one goes with its member")
	require.Equal(t, 1, teamLeft, "a team with an owner left stays")
	require.Zero(t, personalLeft)
}
