package orgs_test

import (
	"bytes"
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgtype"
	"github.com/riverqueue/river"
	"github.com/riverqueue/river/riverdriver/riverpgxv5"
	"github.com/stretchr/testify/require"

	"github.com/kubebyon/kubebyon/internal/audit"
	"github.com/kubebyon/kubebyon/internal/input"
	"github.com/kubebyon/kubebyon/internal/notify"
	"github.com/kubebyon/kubebyon/internal/orgs"
	"github.com/kubebyon/kubebyon/internal/secrets"
	"github.com/kubebyon/kubebyon/internal/testenv"
	"github.com/kubebyon/kubebyon/queries"
)

// TestInvitations: an owner or admin invites an address in a role; the
// link, mailed, is accepted once by the account with that address, who
// becomes a member in that role. Inviting again replaces the pending
// invitation; revoked and expired links do not work; admins cannot
// invite owners, members and viewers cannot invite; members see the list.
func TestInvitations(t *testing.T) {
	t.Parallel()
	pool := testenv.DB(t)
	ctx := context.Background()
	rc, err := river.NewClient(riverpgxv5.New(pool), &river.Config{})
	require.NoError(t, err)
	box, err := secrets.New(bytes.Repeat([]byte{7}, 32))
	require.NoError(t, err)
	// A frozen clock the test moves: expiry is counted from it.
	now := time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC)
	s := &orgs.Service{Pool: pool, Box: box, River: rc, Now: func() time.Time { return now }}
	tm := newTeam(t, pool, s, "inv")

	lastMail := func() (string, string, map[string]any) {
		t.Helper()
		var raw []byte
		require.NoError(t, pool.QueryRow(ctx, "SELECT args FROM river_job WHERE kind = 'email' ORDER BY id DESC LIMIT 1").Scan(&raw))
		var args notify.EmailArgs
		require.NoError(t, json.Unmarshal(raw, &args))
		data, err := box.Open(args.Sealed)
		require.NoError(t, err)
		m := map[string]any{}
		require.NoError(t, json.Unmarshal(data, &m))
		return args.To, args.Template, m
	}
	account := func(email string) queries.User {
		t.Helper()
		u, err := queries.New(pool).UserCreate(ctx, queries.UserCreateParams{
			Email: email, Name: email, Role: "user", EmailVerifiedAt: pgtype.Timestamptz{Time: now, Valid: true},
		})
		require.NoError(t, err)
		return u
	}

	// An admin invites a new address as member: mailed with the link.
	inv, err := s.Invite(ctx, tm.id, " New@Example.com ", orgs.Member, "en", tm.admin)
	require.NoError(t, err)
	require.Equal(t, "new@example.com", inv.Email)
	to, template, data := lastMail()
	require.Equal(t, "new@example.com", to)
	require.Equal(t, notify.EmailOrgInvitation, template)
	require.Equal(t, "inv team", data["Organization"])
	require.Equal(t, tm.admin.Email, data["Inviter"])
	first := data["Token"].(string)

	// Inviting the address again replaces the pending invitation.
	_, err = s.Invite(ctx, tm.id, "new@example.com", orgs.Viewer, "en", tm.owner)
	require.NoError(t, err)
	_, _, data = lastMail()
	second := data["Token"].(string)
	looked, err := s.Lookup(ctx, first)
	require.NoError(t, err)
	require.Equal(t, orgs.InvitationRevoked, looked.State)
	looked, err = s.Lookup(ctx, second)
	require.NoError(t, err)
	require.Equal(t, orgs.InvitationPending, looked.State)
	require.Equal(t, "inv team", looked.Organization)

	// Only the invited address's account accepts it, once.
	other := account("other@example.com")
	_, err = s.Accept(ctx, second, other, audit.Actor{UserID: other.ID, Email: other.Email})
	require.ErrorIs(t, err, orgs.ErrInvitationOtherEmail)
	_, err = s.Accept(ctx, first, other, audit.Actor{UserID: other.ID})
	require.ErrorIs(t, err, orgs.ErrInvitationNotPending)
	_, err = s.Accept(ctx, "nonsense", other, audit.Actor{UserID: other.ID})
	require.ErrorIs(t, err, orgs.ErrInvitationUnknown)
	newcomer := account("new@example.com")
	id, err := s.Accept(ctx, second, newcomer, audit.Actor{UserID: newcomer.ID, Email: newcomer.Email})
	require.NoError(t, err)
	require.Equal(t, tm.id, id)
	m, err := s.Get(ctx, newcomer.ID, tm.id)
	require.NoError(t, err)
	require.Equal(t, orgs.Viewer, m.Role, "the role of the invitation accepted")
	_, err = s.Accept(ctx, second, newcomer, audit.Actor{UserID: newcomer.ID})
	require.ErrorIs(t, err, orgs.ErrInvitationNotPending, "once")

	// A member's address is refused at the field.
	_, err = s.Invite(ctx, tm.id, "new@example.com", orgs.Member, "en", tm.owner)
	var fe input.Errors
	require.ErrorAs(t, err, &fe)
	require.Equal(t, "ErrOrgAlreadyMember", fe[orgs.FieldEmail])

	// Who may invite whom.
	_, err = s.Invite(ctx, tm.id, "boss@example.com", orgs.Owner, "en", tm.admin)
	require.ErrorIs(t, err, orgs.ErrForbidden)
	_, err = s.Invite(ctx, tm.id, "x@example.com", orgs.Viewer, "en", tm.member)
	require.ErrorIs(t, err, orgs.ErrForbidden)
	_, err = s.Invite(ctx, tm.id, "x@example.com", orgs.Viewer, "en", tm.outsider)
	require.ErrorIs(t, err, orgs.ErrNotFound)
	_, err = s.Invite(ctx, tm.id, "not an address", "root", "en", tm.owner)
	require.ErrorAs(t, err, &fe)
	require.Contains(t, fe, orgs.FieldEmail)
	require.Contains(t, fe, "role")
	boss, err := s.Invite(ctx, tm.id, "boss@example.com", orgs.Owner, "en", tm.owner)
	require.NoError(t, err)
	_, _, data = lastMail()
	bossToken := data["Token"].(string)

	// Revoked: the link stops working. Members see the list; outsiders
	// do not; a viewer cannot revoke.
	require.ErrorIs(t, s.RevokeInvitation(ctx, tm.id, boss.ID, tm.viewer), orgs.ErrForbidden)
	require.NoError(t, s.RevokeInvitation(ctx, tm.id, boss.ID, tm.admin))
	require.ErrorIs(t, s.RevokeInvitation(ctx, tm.id, boss.ID, tm.admin), orgs.ErrInvitationNotPending)
	bossUser := account("boss@example.com")
	_, err = s.Accept(ctx, bossToken, bossUser, audit.Actor{UserID: bossUser.ID})
	require.ErrorIs(t, err, orgs.ErrInvitationNotPending)
	list, err := s.Invitations(ctx, tm.viewer.UserID, tm.id)
	require.NoError(t, err)
	states := map[string]string{}
	for _, i := range list {
		states[i.Email+" "+i.Role] = i.State
	}
	require.Equal(t, map[string]string{
		"new@example.com member": orgs.InvitationRevoked, "new@example.com viewer": orgs.InvitationAccepted,
		"boss@example.com owner": orgs.InvitationRevoked,
	}, states)
	_, err = s.Invitations(ctx, tm.outsider.UserID, tm.id)
	require.ErrorIs(t, err, orgs.ErrNotFound)

	// One by its id, for members; an id the organization has none by is
	// not found, for reading as for revoking.
	one, err := s.Invitation(ctx, tm.viewer.UserID, tm.id, boss.ID)
	require.NoError(t, err)
	require.Equal(t, orgs.InvitationRevoked, one.State)
	require.Equal(t, tm.owner.Email, one.InvitedBy)
	_, err = s.Invitation(ctx, tm.outsider.UserID, tm.id, boss.ID)
	require.ErrorIs(t, err, orgs.ErrNotFound)
	_, err = s.Invitation(ctx, tm.viewer.UserID, tm.id, boss.ID+1000)
	require.ErrorIs(t, err, orgs.ErrInvitationNotFound)
	require.ErrorIs(t, s.RevokeInvitation(ctx, tm.id, boss.ID+1000, tm.admin), orgs.ErrInvitationNotFound)

	// Expired: past InvitationTTL the link no longer works.
	_, err = s.Invite(ctx, tm.id, "late@example.com", orgs.Member, "en", tm.owner)
	require.NoError(t, err)
	_, _, data = lastMail()
	late := account("late@example.com")
	now = now.Add(orgs.InvitationTTL)
	_, err = s.Accept(ctx, data["Token"].(string), late, audit.Actor{UserID: late.ID})
	require.ErrorIs(t, err, orgs.ErrInvitationNotPending)
	_, err = s.Get(ctx, late.ID, tm.id)
	require.ErrorIs(t, err, orgs.ErrNotFound)
}
