package adminsignup_test

import (
	"bytes"
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgtype"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/riverqueue/river"
	"github.com/riverqueue/river/riverdriver/riverpgxv5"
	"github.com/stretchr/testify/require"

	"github.com/kubebyon/kubebyon/internal/accounts"
	"github.com/kubebyon/kubebyon/internal/adminauth"
	"github.com/kubebyon/kubebyon/internal/adminsignup"
	"github.com/kubebyon/kubebyon/internal/audit"
	"github.com/kubebyon/kubebyon/internal/input"
	"github.com/kubebyon/kubebyon/internal/notify"
	"github.com/kubebyon/kubebyon/internal/secrets"
	"github.com/kubebyon/kubebyon/internal/signup"
	"github.com/kubebyon/kubebyon/internal/testenv"
	"github.com/kubebyon/kubebyon/queries"
)

func TestMain(m *testing.M) { testenv.Main(m) }

type testBundle struct {
	pool     *pgxpool.Pool
	box      *secrets.Box
	now      time.Time
	admin    audit.Actor
	svc      *adminsignup.Service
	accounts *accounts.Service
}

// setup is the service on a database of the test's own, a clock the test
// moves, and an admin to act as. River only inserts: the test reads the
// email jobs.
func setup(t *testing.T) *testBundle {
	t.Helper()
	pool := testenv.DB(t)
	rc, err := river.NewClient(riverpgxv5.New(pool), &river.Config{})
	require.NoError(t, err)
	box, err := secrets.New(bytes.Repeat([]byte{9}, 32))
	require.NoError(t, err)
	b := &testBundle{pool: pool, box: box, now: time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)}
	clock := func() time.Time { return b.now }
	u, err := queries.New(pool).UserCreate(context.Background(), queries.UserCreateParams{
		Email: "admin@example.com", Name: "Admin", Role: adminauth.RoleAdmin,
		EmailVerifiedAt: pgtype.Timestamptz{Time: b.now, Valid: true},
	})
	require.NoError(t, err)
	b.admin = audit.Actor{UserID: u.ID, Email: u.Email}
	b.svc = &adminsignup.Service{Pool: pool, River: rc, Box: box, Now: clock}
	b.accounts = &accounts.Service{Pool: pool, River: rc, Box: box, Now: clock}
	return b
}

// lastMail is the newest email job's recipient, template and data.
func (b *testBundle) lastMail(t *testing.T) (string, string, map[string]any) {
	t.Helper()
	var raw []byte
	require.NoError(t, b.pool.QueryRow(context.Background(),
		"SELECT args FROM river_job WHERE kind = 'email' ORDER BY id DESC LIMIT 1").Scan(&raw))
	var args notify.EmailArgs
	require.NoError(t, json.Unmarshal(raw, &args))
	data, err := b.box.Open(args.Sealed)
	require.NoError(t, err)
	m := map[string]any{}
	require.NoError(t, json.Unmarshal(data, &m))
	return args.To, args.Template, m
}

func (b *testBundle) mails(t *testing.T) int {
	t.Helper()
	var n int
	require.NoError(t, b.pool.QueryRow(context.Background(), "SELECT count(*) FROM river_job WHERE kind = 'email'").Scan(&n))
	return n
}

// audits are the events of an action as their target and details.
func (b *testBundle) audits(t *testing.T, action string) []map[string]any {
	t.Helper()
	rows, err := b.pool.Query(context.Background(),
		"SELECT details FROM audit_events WHERE action = $1 AND actor_id = $2 ORDER BY id", action, b.admin.UserID)
	require.NoError(t, err)
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (map[string]any, error) {
		m := map[string]any{}
		var raw []byte
		if err := r.Scan(&raw); err != nil {
			return nil, err
		}
		return m, json.Unmarshal(raw, &m)
	})
	require.NoError(t, err)
	return out
}

func (b *testBundle) invite(t *testing.T, email string) (queries.Invitation, string) {
	t.Helper()
	inv, err := b.svc.Invite(context.Background(), email, "en", b.admin)
	require.NoError(t, err)
	to, template, data := b.lastMail(t)
	require.Equal(t, inv.Email, to)
	require.Equal(t, notify.EmailInvitation, template)
	require.Equal(t, b.admin.Email, data["Inviter"])
	return inv, data["Token"].(string)
}

func (b *testBundle) state(t *testing.T, email string) string {
	t.Helper()
	list, err := b.svc.List(context.Background())
	require.NoError(t, err)
	for _, i := range list {
		if i.Email == email {
			return i.State
		}
	}
	t.Fatalf("no invitation of %s", email)
	return ""
}

func TestApplyAuditsTheFieldsChanged(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()

	changed, err := b.svc.Apply(ctx, signup.Settings{Policy: signup.PolicyInviteOnly}, b.admin)
	require.NoError(t, err)
	require.Equal(t, []string{signup.FieldPolicy}, changed)
	changed, err = b.svc.Apply(ctx, signup.Settings{Policy: signup.PolicyInviteOnly, AllowedDomains: []string{"example.com"}}, b.admin)
	require.NoError(t, err)
	require.Equal(t, []string{signup.FieldDomains}, changed)
	changed, err = b.svc.Apply(ctx, signup.Settings{Policy: signup.PolicyInviteOnly, AllowedDomains: []string{"example.com"}}, b.admin)
	require.NoError(t, err)
	require.Empty(t, changed, "nothing changed, nothing written")

	_, err = b.svc.Apply(ctx, signup.Settings{Policy: "nobody", AllowedDomains: []string{"not a domain"}}, b.admin)
	var errs input.Errors
	require.ErrorAs(t, err, &errs)
	require.Equal(t, input.Errors{signup.FieldPolicy: "ErrSignUpPolicy", signup.FieldDomains: "ErrSignUpDomainInvalid"}, errs)

	require.Equal(t, []map[string]any{
		{"changed": []any{"policy"}, "policy": "invite_only"},
		{"changed": []any{"allowedDomains"}, "allowedDomains": []any{"example.com"}},
	}, b.audits(t, adminsignup.ActionUpdate))
	st, err := b.svc.Load(ctx)
	require.NoError(t, err)
	require.Equal(t, signup.Settings{Policy: signup.PolicyInviteOnly, AllowedDomains: []string{"example.com"}}, st)

	// Only an active admin changes them.
	_, err = b.pool.Exec(ctx, "UPDATE users SET role = 'user' WHERE id = $1", b.admin.UserID)
	require.NoError(t, err)
	_, err = b.svc.Apply(ctx, signup.Settings{Policy: signup.PolicyOpen}, b.admin)
	require.ErrorIs(t, err, adminauth.ErrNotAdmin)
}

// TestInvitationLifecycle: an invitation is mailed, admits its address
// once whatever the policy, and then is used up.
func TestInvitationLifecycle(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()
	_, err := b.svc.Apply(ctx, signup.Settings{Policy: signup.PolicyClosed}, b.admin)
	require.NoError(t, err)

	inv, token := b.invite(t, " grace@example.net ")
	require.Equal(t, "grace@example.net", inv.Email)
	require.Equal(t, b.now.Add(signup.InvitationTTL), inv.ExpiresAt.Time.UTC())
	require.NotContains(t, inv.TokenHash, token, "only the token's hash is kept")
	require.Equal(t, signup.StatePending, b.state(t, "grace@example.net"))
	require.Equal(t, []map[string]any{{"email": "grace@example.net", "expires_at": "2026-03-08T12:00:00Z"}}, b.audits(t, adminsignup.ActionInvite))

	// A second invitation of the address, or of an account's, is refused.
	_, err = b.svc.Invite(ctx, "GRACE@example.net", "en", b.admin)
	require.Equal(t, input.Errors{adminsignup.FieldEmail: "ErrInvitationPending"}, err)
	_, err = b.svc.Invite(ctx, "admin@example.com", "en", b.admin)
	require.Equal(t, input.Errors{adminsignup.FieldEmail: "ErrInvitationEmailTaken"}, err)
	_, err = b.svc.Invite(ctx, "not an address", "en", b.admin)
	require.Equal(t, input.Errors{adminsignup.FieldEmail: "ErrEmailInvalid"}, err)

	got, err := b.accounts.Invitation(ctx, token)
	require.NoError(t, err)
	require.Equal(t, inv.ID, got.ID)
	u, err := b.accounts.SignUpInvited(ctx, accounts.InvitedSignUpInput{Token: token, Name: "Grace", Password: "a long enough password"}, audit.Actor{IP: "192.0.2.1"})
	require.NoError(t, err)
	require.Equal(t, "grace@example.net", u.Email)
	require.True(t, u.EmailVerifiedAt.Valid)
	ok, err := b.accounts.Authenticate(ctx, "grace@example.net", "a long enough password")
	require.NoError(t, err)
	require.Equal(t, u.ID, ok.ID)
	require.Equal(t, signup.StateAccepted, b.state(t, "grace@example.net"))

	// Once only.
	_, err = b.accounts.Invitation(ctx, token)
	require.ErrorIs(t, err, signup.ErrInvitationAccepted)
	_, err = b.accounts.SignUpInvited(ctx, accounts.InvitedSignUpInput{Token: token, Name: "Again", Password: "a long enough password"}, audit.Actor{})
	require.ErrorIs(t, err, signup.ErrInvitationAccepted)
	_, err = b.svc.Revoke(ctx, inv.ID, b.admin)
	require.ErrorIs(t, err, adminsignup.ErrNotOpen)
	_, err = b.svc.Resend(ctx, inv.ID, "en", b.admin)
	require.ErrorIs(t, err, adminsignup.ErrNotOpen)
	_, err = b.accounts.Invitation(ctx, "not a token")
	require.ErrorIs(t, err, signup.ErrInvitationUnknown)
}

// TestInvitationExpiresAndResend: an expired link does not work; resending
// makes a new one (the old stays dead) valid for another week.
func TestInvitationExpiresAndResend(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()
	inv, token := b.invite(t, "late@example.net")

	b.now = b.now.Add(signup.InvitationTTL)
	_, err := b.accounts.Invitation(ctx, token)
	require.ErrorIs(t, err, signup.ErrInvitationExpired)
	_, err = b.accounts.SignUpInvited(ctx, accounts.InvitedSignUpInput{Token: token, Name: "Late", Password: "a long enough password"}, audit.Actor{})
	require.ErrorIs(t, err, signup.ErrInvitationExpired)
	require.Equal(t, signup.StateExpired, b.state(t, "late@example.net"))

	renewed, err := b.svc.Resend(ctx, inv.ID, "zh-CN", b.admin)
	require.NoError(t, err)
	require.Equal(t, b.now.Add(signup.InvitationTTL), renewed.ExpiresAt.Time.UTC())
	_, _, data := b.lastMail(t)
	fresh := data["Token"].(string)
	require.NotEqual(t, token, fresh)
	_, err = b.accounts.Invitation(ctx, token)
	require.ErrorIs(t, err, signup.ErrInvitationUnknown, "the old link stopped working")
	_, err = b.accounts.Invitation(ctx, fresh)
	require.NoError(t, err)
	require.Equal(t, signup.StatePending, b.state(t, "late@example.net"))
	require.Len(t, b.audits(t, adminsignup.ActionResend), 1)
}

// TestInvitationPages: the list reads a page at a time, newest first.
func TestInvitationPages(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()
	for _, email := range []string{"one@example.net", "two@example.net", "three@example.net"} {
		b.invite(t, email)
	}
	page, err := b.svc.Page(ctx, 0, 2)
	require.NoError(t, err)
	require.Equal(t, []string{"three@example.net", "two@example.net"}, []string{page[0].Email, page[1].Email})
	require.Equal(t, b.admin.Email, page[0].InvitedBy)
	page, err = b.svc.Page(ctx, page[1].ID, 2)
	require.NoError(t, err)
	require.Len(t, page, 1)
	require.Equal(t, "one@example.net", page[0].Email)
	require.Equal(t, signup.StatePending, page[0].State)
	all, err := b.svc.List(ctx)
	require.NoError(t, err)
	require.Len(t, all, 3)

	got, err := b.svc.Get(ctx, all[1].ID)
	require.NoError(t, err)
	require.Equal(t, all[1], got)
	_, err = b.svc.Get(ctx, all[0].ID+1)
	require.ErrorIs(t, err, adminsignup.ErrNotFound)
}

// TestInvitationRevoked: a revoked link does not work, and is not resent.
func TestInvitationRevoked(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()
	inv, token := b.invite(t, "withdrawn@example.net")
	mails := b.mails(t)

	_, err := b.svc.Revoke(ctx, inv.ID, b.admin)
	require.NoError(t, err)
	_, err = b.accounts.Invitation(ctx, token)
	require.ErrorIs(t, err, signup.ErrInvitationRevoked)
	_, err = b.accounts.SignUpInvited(ctx, accounts.InvitedSignUpInput{Token: token, Name: "W", Password: "a long enough password"}, audit.Actor{})
	require.ErrorIs(t, err, signup.ErrInvitationRevoked)
	require.Equal(t, signup.StateRevoked, b.state(t, "withdrawn@example.net"))
	_, err = b.svc.Resend(ctx, inv.ID, "en", b.admin)
	require.ErrorIs(t, err, adminsignup.ErrNotOpen)
	_, err = b.svc.Revoke(ctx, 999999, b.admin)
	require.ErrorIs(t, err, adminsignup.ErrNotFound)
	require.Equal(t, mails, b.mails(t), "nothing more was mailed")
	require.Equal(t, []map[string]any{{"email": "withdrawn@example.net"}}, b.audits(t, adminsignup.ActionRevoke))

	// A new invitation of the address works again.
	_, fresh := b.invite(t, "withdrawn@example.net")
	_, err = b.accounts.Invitation(ctx, fresh)
	require.NoError(t, err)
}
