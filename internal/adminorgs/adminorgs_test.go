package adminorgs_test

import (
	"context"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/kubebyon/kubebyon/internal/adminorgs"
	"github.com/kubebyon/kubebyon/internal/audit"
	"github.com/kubebyon/kubebyon/internal/orgs"
	"github.com/kubebyon/kubebyon/internal/testenv"
)

func TestMain(m *testing.M) { testenv.Main(m) }

// newUser makes an account (and so its personal organization).
func newUser(t *testing.T, pool *pgxpool.Pool, email, name string) audit.Actor {
	t.Helper()
	var id int64
	require.NoError(t, pool.QueryRow(context.Background(),
		"INSERT INTO users (email, name) VALUES ($1, $2) RETURNING id", email, name).Scan(&id))
	return audit.Actor{UserID: id, Email: email}
}

// newTeam makes a team organization owned by owner, with members in
// their roles.
func newTeam(t *testing.T, pool *pgxpool.Pool, name string, owner audit.Actor, members map[int64]orgs.Role) int64 {
	t.Helper()
	ctx := context.Background()
	o, err := (&orgs.Service{Pool: pool}).Create(ctx, name, owner)
	require.NoError(t, err)
	for id, role := range members {
		_, err := pool.Exec(ctx, "INSERT INTO organization_members (org_id, user_id, role) VALUES ($1, $2, $3)", o.ID, id, role)
		require.NoError(t, err)
	}
	return o.ID
}

// names reads every page of the list, size a page, and gives the names in
// the order shown and the size of each page.
func names(t *testing.T, s *adminorgs.Service, search string, size int) ([]string, []int) {
	t.Helper()
	var out []string
	var sizes []int
	before := int64(0)
	for {
		p, err := s.List(context.Background(), search, before, size)
		require.NoError(t, err)
		sizes = append(sizes, len(p.Orgs))
		for _, o := range p.Orgs {
			out = append(out, o.Name)
		}
		if p.NextBefore == 0 {
			return out, sizes
		}
		before = p.NextBefore
	}
}

// TestList: every organization, newest first, a page at a time, with its
// kind, the personal one's account and the number of members; searched by
// name or by a member's email, in any case, the search taken literally.
func TestList(t *testing.T) {
	t.Parallel()
	pool := testenv.DB(t)
	ctx := context.Background()
	s := &adminorgs.Service{Pool: pool}
	ann := newUser(t, pool, "ann@example.com", "Ann")
	bob := newUser(t, pool, "bob@example.org", "")
	cy := newUser(t, pool, "cy_100%@example.net", "Cy")
	newTeam(t, pool, "Platform Team", ann, map[int64]orgs.Role{bob.UserID: orgs.Viewer})
	newTeam(t, pool, "Data_Science 100%", cy, nil)

	all, sizes := names(t, s, "", 2)
	require.Equal(t, []string{"Data_Science 100%", "Platform Team", "Cy", "bob@example.org", "Ann"}, all)
	require.Equal(t, []int{2, 2, 1}, sizes)

	p, err := s.List(ctx, "", 0, adminorgs.PageSize)
	require.NoError(t, err)
	require.Zero(t, p.NextBefore)
	byName := map[string]adminorgs.Org{}
	for _, o := range p.Orgs {
		byName[o.Name] = o
	}
	require.Equal(t, adminorgs.Team, byName["Platform Team"].Kind)
	require.Equal(t, int64(2), byName["Platform Team"].MemberCount)
	require.Zero(t, byName["Platform Team"].PersonalUserID)
	require.Empty(t, byName["Platform Team"].PersonalEmail)
	require.Equal(t, adminorgs.Personal, byName["Ann"].Kind)
	require.Equal(t, ann.UserID, byName["Ann"].PersonalUserID)
	require.Equal(t, "ann@example.com", byName["Ann"].PersonalEmail)
	require.Equal(t, int64(1), byName["Ann"].MemberCount)
	require.False(t, byName["Ann"].CreatedAt.IsZero())

	for _, tt := range []struct {
		search string
		want   []string
	}{
		{"platform", []string{"Platform Team"}},
		{"  TEAM ", []string{"Platform Team"}},
		// A member's email: bob's personal organization and the team he
		// is a viewer of.
		{"BOB@example", []string{"Platform Team", "bob@example.org"}},
		{"example.", []string{"Data_Science 100%", "Platform Team", "Cy", "bob@example.org", "Ann"}},
		// _ and % are themselves, not wildcards.
		{"a_s", []string{"Data_Science 100%"}},
		{"100%", []string{"Data_Science 100%", "Cy"}},
		{"y_1", []string{"Data_Science 100%", "Cy"}},
		{"%", []string{"Data_Science 100%", "Cy"}},
		{"nobody", nil},
	} {
		got, _ := names(t, s, tt.search, 1)
		require.Equal(t, tt.want, got, tt.search)
	}
}

// TestGet: one organization with who made it, its members (owners first)
// and its invitations in their states; ErrNotFound for none.
func TestGet(t *testing.T) {
	t.Parallel()
	pool := testenv.DB(t)
	ctx := context.Background()
	now := time.Date(2030, 5, 6, 7, 8, 9, 0, time.UTC)
	s := &adminorgs.Service{Pool: pool, Now: func() time.Time { return now }}
	ann := newUser(t, pool, "ann@example.com", "Ann")
	bob := newUser(t, pool, "bob@example.com", "Bob")
	cy := newUser(t, pool, "cy@example.com", "Cy")
	id := newTeam(t, pool, "Ops", ann, map[int64]orgs.Role{bob.UserID: orgs.Viewer, cy.UserID: orgs.Admin})
	for _, inv := range []struct{ email, role, state string }{
		{"p@example.com", "member", "pending"},
		{"a@example.com", "viewer", "accepted"},
		{"r@example.com", "admin", "revoked"},
		{"e@example.com", "owner", "expired"},
	} {
		_, err := pool.Exec(ctx, `INSERT INTO org_invitations (org_id, email, role, token_hash, invited_by, created_at, expires_at, accepted_at, revoked_at)
			VALUES ($1, $2, $3, $2, $4, $5::timestamptz - interval '1 day',
				CASE WHEN $6 = 'expired' THEN $5::timestamptz - interval '1 second' ELSE $5::timestamptz + interval '6 days' END,
				CASE WHEN $6 = 'accepted' THEN $5::timestamptz END, CASE WHEN $6 = 'revoked' THEN $5::timestamptz END)`,
			id, inv.email, inv.role, ann.UserID, now, inv.state)
		require.NoError(t, err)
	}

	d, err := s.Get(ctx, id)
	require.NoError(t, err)
	require.Equal(t, "Ops", d.Name)
	require.Equal(t, adminorgs.Team, d.Kind)
	require.Equal(t, int64(3), d.MemberCount)
	require.Equal(t, ann.UserID, d.CreatedByID)
	require.Equal(t, "ann@example.com", d.CreatedByEmail)
	var members []string
	for _, m := range d.Members {
		members = append(members, m.Email+" "+string(m.Role))
	}
	require.Equal(t, []string{"ann@example.com owner", "cy@example.com admin", "bob@example.com viewer"}, members)
	var invs []string
	for _, i := range d.Invitations {
		invs = append(invs, i.Email+" "+string(i.Role)+" "+i.State+" "+i.InvitedByEmail)
	}
	require.Equal(t, []string{
		"e@example.com owner expired ann@example.com", "r@example.com admin revoked ann@example.com",
		"a@example.com viewer accepted ann@example.com", "p@example.com member pending ann@example.com",
	}, invs)
	require.Equal(t, now, d.Invitations[1].RevokedAt.UTC())
	require.Equal(t, now, d.Invitations[2].AcceptedAt.UTC())

	// Who made it left: the organization stays, its maker unknown.
	_, err = pool.Exec(ctx, "DELETE FROM users WHERE id = $1", ann.UserID)
	require.NoError(t, err)
	d, err = s.Get(ctx, id)
	require.NoError(t, err)
	require.Zero(t, d.CreatedByID)
	require.Empty(t, d.CreatedByEmail)
	require.Len(t, d.Members, 2)
	require.Empty(t, d.Invitations[0].InvitedByEmail)

	// A personal organization names its account.
	mine, err := s.ForUser(ctx, bob.UserID)
	require.NoError(t, err)
	d, err = s.Get(ctx, mine[0].ID)
	require.NoError(t, err)
	require.Equal(t, adminorgs.Personal, d.Kind)
	require.Equal(t, "bob@example.com", d.PersonalEmail)
	require.Empty(t, d.Invitations)

	_, err = s.Get(ctx, id+1000)
	require.ErrorIs(t, err, adminorgs.ErrNotFound)
}

// TestForUser: an account's organizations with its role in each, the
// personal one first, then by name; none for an unknown account.
func TestForUser(t *testing.T) {
	t.Parallel()
	pool := testenv.DB(t)
	ctx := context.Background()
	s := &adminorgs.Service{Pool: pool}
	ann := newUser(t, pool, "ann@example.com", "Ann")
	bob := newUser(t, pool, "bob@example.com", "Bob")
	newTeam(t, pool, "zeta", ann, map[int64]orgs.Role{bob.UserID: orgs.Member})
	newTeam(t, pool, "Alpha", bob, map[int64]orgs.Role{ann.UserID: orgs.Viewer})

	mine, err := s.ForUser(ctx, bob.UserID)
	require.NoError(t, err)
	var got []string
	for _, m := range mine {
		got = append(got, m.Name+" "+string(m.Kind)+" "+string(m.Role))
		require.False(t, m.Since.IsZero())
	}
	require.Equal(t, []string{"Bob personal owner", "Alpha team owner", "zeta team member"}, got)
	require.Equal(t, int64(2), mine[2].MemberCount)

	none, err := s.ForUser(ctx, bob.UserID+1000)
	require.NoError(t, err)
	require.Empty(t, none)
}
