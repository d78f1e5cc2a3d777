package orgs_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/kubebyon/kubebyon/internal/audit"
	"github.com/kubebyon/kubebyon/internal/etag"
	"github.com/kubebyon/kubebyon/internal/input"
	"github.com/kubebyon/kubebyon/internal/orgs"
	"github.com/kubebyon/kubebyon/internal/testenv"
)

// TestUpdate: owners and admins rename an organization, only owners let
// its viewers download a kubeconfig; a change is made whole or not at
// all, over the tag it was read with when it says one.
func TestUpdate(t *testing.T) {
	t.Parallel()
	pool := testenv.DB(t)
	ctx := context.Background()
	s := &orgs.Service{Pool: pool}
	name := func(v string) *string { return &v }
	yes := true
	for i, tt := range []struct {
		name  string
		actor func(team) audit.Actor
		ch    orgs.Change
		want  error
	}{
		{"owner renames", pick("owner"), orgs.Change{Name: name(" Owners' ")}, nil},
		{"admin renames", pick("admin"), orgs.Change{Name: name("Admins'")}, nil},
		{"member renames", pick("member"), orgs.Change{Name: name("Members'")}, orgs.ErrForbidden},
		{"viewer renames", pick("viewer"), orgs.Change{Name: name("Viewers'")}, orgs.ErrForbidden},
		{"outsider renames", pick("outsider"), orgs.Change{Name: name("Outsiders'")}, orgs.ErrNotFound},
		{"owner lets viewers download a kubeconfig", pick("owner"), orgs.Change{ViewerKubeconfig: &yes}, nil},
		{"admin lets viewers download a kubeconfig", pick("admin"), orgs.Change{ViewerKubeconfig: &yes}, orgs.ErrForbidden},
		{"admin renames and lets viewers", pick("admin"), orgs.Change{Name: name("Both"), ViewerKubeconfig: &yes}, orgs.ErrForbidden},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			tm := newTeam(t, pool, s, fmt.Sprintf("u%d", i))
			before, err := s.Detail(ctx, tm.owner.UserID, tm.id)
			require.NoError(t, err)
			err = s.Update(ctx, tm.id, tt.ch, tt.actor(tm))
			after, derr := s.Detail(ctx, tm.owner.UserID, tm.id)
			require.NoError(t, derr)
			if tt.want != nil {
				require.ErrorIs(t, err, tt.want)
				require.Equal(t, before.Org, after.Org, "nothing changed")
				return
			}
			require.NoError(t, err)
			if tt.ch.Name != nil {
				require.Equal(t, strings.TrimSpace(*tt.ch.Name), after.Org.Name)
			}
			if tt.ch.ViewerKubeconfig != nil {
				require.Equal(t, *tt.ch.ViewerKubeconfig, after.Org.ViewerKubeconfig)
			}
			var audits int
			require.NoError(t, pool.QueryRow(ctx, "SELECT count(*) FROM audit_events WHERE action = 'org.update' AND target_id = $1", fmt.Sprint(after.Org.ID)).Scan(&audits))
			require.Equal(t, 1, audits)
		})
	}
}

// TestUpdateIfMatch: a change sent over a tag the organization no longer
// has is refused, one over its tag is made; Detail counts the members.
func TestUpdateIfMatch(t *testing.T) {
	t.Parallel()
	pool := testenv.DB(t)
	ctx := context.Background()
	s := &orgs.Service{Pool: pool}
	tm := newTeam(t, pool, s, "ifmatch")

	d, err := s.Detail(ctx, tm.viewer.UserID, tm.id)
	require.NoError(t, err)
	require.Equal(t, orgs.Viewer, d.Role)
	require.EqualValues(t, 5, d.MemberCount)
	_, err = s.Detail(ctx, tm.outsider.UserID, tm.id)
	require.ErrorIs(t, err, orgs.ErrNotFound)

	read, err := orgs.Tag(d.Org)
	require.NoError(t, err)
	over := func(tag string) context.Context {
		return etag.WithMatch(ctx, func(t string) bool { return t == tag })
	}
	first, second := "First", "Second"
	require.NoError(t, s.Update(over(read), tm.id, orgs.Change{Name: &first}, tm.owner))
	require.ErrorIs(t, s.Update(over(read), tm.id, orgs.Change{Name: &second}, tm.owner), etag.ErrPreconditionFailed)
	d, err = s.Detail(ctx, tm.owner.UserID, tm.id)
	require.NoError(t, err)
	require.Equal(t, first, d.Org.Name)
	now, err := orgs.Tag(d.Org)
	require.NoError(t, err)
	require.NotEqual(t, read, now)
	require.NoError(t, s.Update(over(now), tm.id, orgs.Change{Name: &second}, tm.owner))

	blank := "  "
	var fe input.Errors
	require.ErrorAs(t, s.Update(ctx, tm.id, orgs.Change{Name: &blank}, tm.owner), &fe)
	require.Equal(t, "ErrOrgNameRequired", fe[orgs.FieldName])
}

// TestMember: a member reads another; the role's change is refused over
// a tag the member no longer has.
func TestMember(t *testing.T) {
	t.Parallel()
	pool := testenv.DB(t)
	ctx := context.Background()
	s := &orgs.Service{Pool: pool}
	tm := newTeam(t, pool, s, "member")

	p, err := s.Member(ctx, tm.viewer.UserID, tm.id, tm.member.UserID)
	require.NoError(t, err)
	require.Equal(t, orgs.Member, p.Role)
	require.Equal(t, tm.member.Email, p.Email)
	require.False(t, p.Joined.IsZero())
	_, err = s.Member(ctx, tm.outsider.UserID, tm.id, tm.member.UserID)
	require.ErrorIs(t, err, orgs.ErrNotFound)
	_, err = s.Member(ctx, tm.viewer.UserID, tm.id, tm.outsider.UserID)
	require.ErrorIs(t, err, orgs.ErrMemberNotFound)

	read, err := orgs.MemberTag(p.UserID, p.Role)
	require.NoError(t, err)
	over := etag.WithMatch(ctx, func(t string) bool { return t == read })
	require.NoError(t, s.SetRole(over, tm.id, tm.member.UserID, orgs.Viewer, tm.admin))
	require.ErrorIs(t, s.SetRole(over, tm.id, tm.member.UserID, orgs.Admin, tm.admin), etag.ErrPreconditionFailed)
	require.Equal(t, "viewer", roleOf(t, pool, tm.id, tm.member.UserID))
}
