package orgs_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/kubebyon/kubebyon/internal/audit"
	"github.com/kubebyon/kubebyon/internal/input"
	"github.com/kubebyon/kubebyon/internal/orgs"
	"github.com/kubebyon/kubebyon/internal/testenv"
)

func newUser(t *testing.T, pool *pgxpool.Pool, name string) audit.Actor {
	t.Helper()
	var id int64
	email := name + "@example.com"
	require.NoError(t, pool.QueryRow(context.Background(),
		"INSERT INTO users (email, name) VALUES ($1, $2) RETURNING id", email, name).Scan(&id))
	return audit.Actor{UserID: id, Email: email}
}

// TestPersonalOrganization: a new account, however it is made, has a
// personal organization of which it is the only member, as its owner; it
// cannot leave it nor stop owning it.
func TestPersonalOrganization(t *testing.T) {
	t.Parallel()
	pool := testenv.DB(t)
	ctx := context.Background()
	s := &orgs.Service{Pool: pool}
	ann := newUser(t, pool, "ann")

	mine, err := s.List(ctx, ann.UserID)
	require.NoError(t, err)
	require.Len(t, mine, 1)
	require.True(t, mine[0].Personal())
	require.Equal(t, orgs.Owner, mine[0].Role)
	require.Equal(t, "ann", mine[0].Org.Name)
	personal, err := s.Personal(ctx, ann.UserID)
	require.NoError(t, err)
	require.Equal(t, mine[0].Org.ID, personal.Org.ID)

	id := personal.Org.ID
	require.ErrorIs(t, s.Remove(ctx, id, ann.UserID, ann), orgs.ErrPersonalOwner)
	// Even with a second owner, the personal organization's stays one.
	bob := newUser(t, pool, "bob")
	_, err = pool.Exec(ctx, "INSERT INTO organization_members (org_id, user_id, role) VALUES ($1, $2, 'owner')", id, bob.UserID)
	require.NoError(t, err)
	require.ErrorIs(t, s.SetRole(ctx, id, ann.UserID, orgs.Admin, bob), orgs.ErrPersonalOwner)
	require.ErrorIs(t, s.Remove(ctx, id, ann.UserID, bob), orgs.ErrPersonalOwner)
}

// TestCreate: the maker of an organization is its owner; nobody else sees
// it; a name is needed.
func TestCreate(t *testing.T) {
	t.Parallel()
	pool := testenv.DB(t)
	ctx := context.Background()
	s := &orgs.Service{Pool: pool}
	ann, eve := newUser(t, pool, "ann"), newUser(t, pool, "eve")

	o, err := s.Create(ctx, "  Platform team ", ann)
	require.NoError(t, err)
	require.Equal(t, "Platform team", o.Name)
	m, err := s.Get(ctx, ann.UserID, o.ID)
	require.NoError(t, err)
	require.Equal(t, orgs.Owner, m.Role)
	require.False(t, m.Personal())
	mine, err := s.List(ctx, ann.UserID)
	require.NoError(t, err)
	require.Len(t, mine, 2)
	require.True(t, mine[0].Personal(), "the personal organization first")

	_, err = s.Get(ctx, eve.UserID, o.ID)
	require.ErrorIs(t, err, orgs.ErrNotFound)
	_, err = s.Members(ctx, eve.UserID, o.ID)
	require.ErrorIs(t, err, orgs.ErrNotFound)

	for _, name := range []string{"", "   ", string(make([]rune, 101))} {
		_, err = s.Create(ctx, name, ann)
		var fe input.Errors
		require.ErrorAs(t, err, &fe, "%q", name)
		require.Contains(t, fe, orgs.FieldName)
	}
	var audits int
	require.NoError(t, pool.QueryRow(ctx, "SELECT count(*) FROM audit_events WHERE action = 'org.create' AND actor_id = $1", ann.UserID).Scan(&audits))
	require.Equal(t, 1, audits)
}

// team is an organization with one member of each role, a second owner
// and an outsider.
type team struct {
	id                                   int64
	owner, owner2, admin, member, viewer audit.Actor
	outsider                             audit.Actor
}

func newTeam(t *testing.T, pool *pgxpool.Pool, s *orgs.Service, prefix string) team {
	t.Helper()
	ctx := context.Background()
	tm := team{owner: newUser(t, pool, prefix+"owner")}
	o, err := s.Create(ctx, prefix+" team", tm.owner)
	require.NoError(t, err)
	tm.id = o.ID
	for _, m := range []struct {
		who  *audit.Actor
		name string
		role orgs.Role
	}{
		{&tm.owner2, "owner2", orgs.Owner}, {&tm.admin, "admin", orgs.Admin},
		{&tm.member, "member", orgs.Member}, {&tm.viewer, "viewer", orgs.Viewer},
	} {
		*m.who = newUser(t, pool, prefix+m.name)
		_, err := pool.Exec(ctx, "INSERT INTO organization_members (org_id, user_id, role) VALUES ($1, $2, $3)", tm.id, m.who.UserID, m.role)
		require.NoError(t, err)
	}
	tm.outsider = newUser(t, pool, prefix+"outsider")
	return tm
}

// TestSetRole: who may give whom which role. Each case runs on a team of
// its own.
func TestSetRole(t *testing.T) {
	t.Parallel()
	pool := testenv.DB(t)
	ctx := context.Background()
	s := &orgs.Service{Pool: pool}
	for i, tt := range []struct {
		name   string
		actor  func(team) audit.Actor
		target func(team) audit.Actor
		role   orgs.Role
		want   error
	}{
		{"owner makes an admin owner", pick("owner"), pick("admin"), orgs.Owner, nil},
		{"owner demotes another owner", pick("owner"), pick("owner2"), orgs.Viewer, nil},
		{"owner demotes themselves while another owner remains", pick("owner"), pick("owner"), orgs.Admin, nil},
		{"admin makes a member viewer", pick("admin"), pick("member"), orgs.Viewer, nil},
		{"admin makes a viewer admin", pick("admin"), pick("viewer"), orgs.Admin, nil},
		{"admin makes a member owner", pick("admin"), pick("member"), orgs.Owner, orgs.ErrForbidden},
		{"admin makes themselves owner", pick("admin"), pick("admin"), orgs.Owner, orgs.ErrForbidden},
		{"admin demotes an owner", pick("admin"), pick("owner"), orgs.Admin, orgs.ErrForbidden},
		{"member makes a viewer member", pick("member"), pick("viewer"), orgs.Member, orgs.ErrForbidden},
		{"viewer makes themselves member", pick("viewer"), pick("viewer"), orgs.Member, orgs.ErrForbidden},
		{"outsider", pick("outsider"), pick("member"), orgs.Viewer, orgs.ErrNotFound},
		{"not a member", pick("owner"), pick("outsider"), orgs.Viewer, orgs.ErrMemberNotFound},
	} {
		tm := newTeam(t, pool, s, fmt.Sprintf("r%d", i))
		target := tt.target(tm)
		before := roleOf(t, pool, tm.id, target.UserID)
		err := s.SetRole(ctx, tm.id, target.UserID, tt.role, tt.actor(tm))
		if tt.want != nil {
			require.ErrorIs(t, err, tt.want, tt.name)
			require.Equal(t, before, roleOf(t, pool, tm.id, target.UserID), tt.name)
			continue
		}
		require.NoError(t, err, tt.name)
		require.Equal(t, string(tt.role), roleOf(t, pool, tm.id, target.UserID), tt.name)
	}

	// The last owner stays one; an unknown role is the field's error.
	tm := newTeam(t, pool, s, "last")
	require.NoError(t, s.SetRole(ctx, tm.id, tm.owner2.UserID, orgs.Admin, tm.owner))
	require.ErrorIs(t, s.SetRole(ctx, tm.id, tm.owner.UserID, orgs.Admin, tm.owner), orgs.ErrLastOwner)
	var fe input.Errors
	require.ErrorAs(t, s.SetRole(ctx, tm.id, tm.member.UserID, "root", tm.owner), &fe)
	require.Contains(t, fe, "role")
}

// TestRemove: members leave; owners remove anyone, admins members and
// viewers; the last owner cannot leave.
func TestRemove(t *testing.T) {
	t.Parallel()
	pool := testenv.DB(t)
	ctx := context.Background()
	s := &orgs.Service{Pool: pool}
	for i, tt := range []struct {
		name   string
		actor  func(team) audit.Actor
		target func(team) audit.Actor
		want   error
	}{
		{"viewer leaves", pick("viewer"), pick("viewer"), nil},
		{"member leaves", pick("member"), pick("member"), nil},
		{"owner leaves while another owner remains", pick("owner"), pick("owner"), nil},
		{"owner removes an owner", pick("owner"), pick("owner2"), nil},
		{"admin removes a member", pick("admin"), pick("member"), nil},
		{"admin removes an owner", pick("admin"), pick("owner"), orgs.ErrForbidden},
		{"member removes a viewer", pick("member"), pick("viewer"), orgs.ErrForbidden},
		{"viewer removes a member", pick("viewer"), pick("member"), orgs.ErrForbidden},
		{"outsider", pick("outsider"), pick("member"), orgs.ErrNotFound},
	} {
		tm := newTeam(t, pool, s, fmt.Sprintf("m%d", i))
		target := tt.target(tm)
		err := s.Remove(ctx, tm.id, target.UserID, tt.actor(tm))
		if tt.want != nil {
			require.ErrorIs(t, err, tt.want, tt.name)
			require.NotEmpty(t, roleOf(t, pool, tm.id, target.UserID), tt.name)
			continue
		}
		require.NoError(t, err, tt.name)
		require.Empty(t, roleOf(t, pool, tm.id, target.UserID), tt.name)
		_, err = s.Get(ctx, target.UserID, tm.id)
		require.ErrorIs(t, err, orgs.ErrNotFound, tt.name)
	}

	tm := newTeam(t, pool, s, "last")
	require.NoError(t, s.Remove(ctx, tm.id, tm.owner2.UserID, tm.owner2))
	require.ErrorIs(t, s.Remove(ctx, tm.id, tm.owner.UserID, tm.owner), orgs.ErrLastOwner)
	members, err := s.Members(ctx, tm.admin.UserID, tm.id)
	require.NoError(t, err)
	require.Equal(t, orgs.Owner, members[0].Role, "owners first")
	require.Len(t, members, 4)
}

func pick(who string) func(team) audit.Actor {
	return func(tm team) audit.Actor {
		return map[string]audit.Actor{
			"owner": tm.owner, "owner2": tm.owner2, "admin": tm.admin, "member": tm.member,
			"viewer": tm.viewer, "outsider": tm.outsider,
		}[who]
	}
}

// roleOf is userID's role in organization id, "" for none.
func roleOf(t *testing.T, pool *pgxpool.Pool, id, userID int64) string {
	t.Helper()
	var role string
	err := pool.QueryRow(context.Background(),
		"SELECT coalesce((SELECT role FROM organization_members WHERE org_id = $1 AND user_id = $2), '')", id, userID).Scan(&role)
	require.NoError(t, err)
	return role
}
