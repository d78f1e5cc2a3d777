// Package adminsignup is how admins set who may sign up and invite people.
// Each action runs in one transaction with its audit event and, for an
// invitation, the River job that mails it.
//
// Package signup holds the settings and the invitations' rules, which the
// account actions (internal/accounts) follow.
package adminsignup

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgtype"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/riverqueue/river"

	"github.com/kubebyon/kubebyon/internal/adminauth"
	"github.com/kubebyon/kubebyon/internal/audit"
	"github.com/kubebyon/kubebyon/internal/input"
	"github.com/kubebyon/kubebyon/internal/notify"
	"github.com/kubebyon/kubebyon/internal/secrets"
	"github.com/kubebyon/kubebyon/internal/signup"
	"github.com/kubebyon/kubebyon/queries"
)

// Audit actions.
const (
	ActionUpdate = "admin.signup_update"
	ActionInvite = "admin.invitation_create"
	ActionResend = "admin.invitation_resend"
	ActionRevoke = "admin.invitation_revoke"
)

// FieldEmail is the invitation form's address field.
const FieldEmail = "email"

// ListLimit is how many invitations the admins' list shows, newest first.
const ListLimit = 200

// Errors of the invitation actions.
var (
	// ErrNotFound: no invitation has that id.
	ErrNotFound = errors.New("adminsignup: no such invitation")
	// ErrNotOpen: the invitation was accepted or revoked; it cannot be
	// resent or revoked (catalog message ID).
	ErrNotOpen = errors.New("ErrInvitationNotOpen")
)

// Service carries what the actions need.
type Service struct {
	Pool  *pgxpool.Pool
	River *river.Client[pgx.Tx]
	Box   *secrets.Box
	Now   func() time.Time
}

func (s *Service) now() time.Time {
	if s.Now != nil {
		return s.Now()
	}
	return time.Now()
}

// Load reads the sign-up settings.
func (s *Service) Load(ctx context.Context) (signup.Settings, error) {
	return signup.Load(ctx, queries.New(s.Pool))
}

// Apply stores next on behalf of the admin actor.UserID and returns the
// names of the fields it changed, sorted; none means nothing was written.
// Errors: input.Errors and adminauth.ErrNotAdmin.
func (s *Service) Apply(ctx context.Context, next signup.Settings, actor audit.Actor) ([]string, error) {
	if next.AllowedDomains == nil {
		next.AllowedDomains = []string{}
	}
	if err := next.Validate(); err != nil {
		return nil, err
	}
	var changed []string
	err := adminauth.SaveSettings(ctx, s.Pool, actor.UserID, signup.SettingsKey, adminauth.Confirm{}, func(q *queries.Queries) error {
		cur, err := signup.Load(ctx, q)
		if err != nil {
			return err
		}
		if changed, err = signup.Diff(cur, next); err != nil || len(changed) == 0 {
			return err
		}
		if err := signup.Save(ctx, q, next); err != nil {
			return err
		}
		d := map[string]any{"changed": changed}
		for _, f := range changed {
			switch f {
			case signup.FieldPolicy:
				d[f] = next.Policy
			case signup.FieldDomains:
				d[f] = next.AllowedDomains
			}
		}
		return audit.Record(ctx, q, actor, audit.Event{
			Action: ActionUpdate, TargetType: "settings", TargetID: "signup", Details: d,
		})
	})
	if err != nil {
		return nil, err
	}
	return changed, nil
}

// Invitation is one row of the admins' list.
type Invitation struct {
	ID         int64
	Email      string
	State      string // signup.State*
	CreatedAt  time.Time
	SentAt     time.Time
	ExpiresAt  time.Time
	AcceptedAt time.Time
	RevokedAt  time.Time
	InvitedBy  string // the admin's address; "" once their account is gone
}

// List is the newest ListLimit invitations.
func (s *Service) List(ctx context.Context) ([]Invitation, error) {
	return s.Page(ctx, 0, ListLimit)
}

// Page is up to limit invitations, newest first, from the one below
// beforeID (0: the newest).
func (s *Service) Page(ctx context.Context, beforeID int64, limit int32) ([]Invitation, error) {
	rows, err := queries.New(s.Pool).InvitationList(ctx, queries.InvitationListParams{BeforeID: beforeID, MaxRows: limit})
	if err != nil {
		return nil, fmt.Errorf("list invitations: %w", err)
	}
	now := s.now()
	out := make([]Invitation, 0, len(rows))
	for _, r := range rows {
		out = append(out, Invitation{
			ID: r.ID, Email: r.Email,
			State: signup.State(queries.Invitation{
				AcceptedAt: r.AcceptedAt, RevokedAt: r.RevokedAt, ExpiresAt: r.ExpiresAt,
			}, now),
			CreatedAt: r.CreatedAt.Time, SentAt: r.SentAt.Time, ExpiresAt: r.ExpiresAt.Time,
			AcceptedAt: r.AcceptedAt.Time, RevokedAt: r.RevokedAt.Time,
			InvitedBy: r.InvitedByEmail,
		})
	}
	return out, nil
}

// Get is the invitation id as the list shows it. Errors: ErrNotFound.
func (s *Service) Get(ctx context.Context, id int64) (Invitation, error) {
	// The page below id+1 starts at id, when it exists.
	page, err := s.Page(ctx, id+1, 1)
	if err != nil {
		return Invitation{}, err
	}
	if len(page) == 0 || page[0].ID != id {
		return Invitation{}, ErrNotFound
	}
	return page[0], nil
}

// Invite invites email on behalf of the admin actor.UserID and mails the
// link, in lang. An address with an account, or with an open invitation
// (resend that one), is refused at the field: input.Errors. Also
// adminauth.ErrNotAdmin.
func (s *Service) Invite(ctx context.Context, email, lang string, actor audit.Actor) (queries.Invitation, error) {
	email, ok := input.Email(email)
	if !ok || !input.Storable(email) {
		return queries.Invitation{}, input.Errors{FieldEmail: "ErrEmailInvalid"}
	}
	var inv queries.Invitation
	err := pgx.BeginFunc(ctx, s.Pool, func(tx pgx.Tx) error {
		q := queries.New(tx)
		if err := adminauth.LockActiveAdmin(ctx, q, actor.UserID); err != nil {
			return err
		}
		if err := q.InvitationLockEmail(ctx, email); err != nil {
			return fmt.Errorf("lock invitations of %s: %w", email, err)
		}
		u, err := q.UserGetByEmail(ctx, email)
		switch {
		case err == nil && u.EmailVerifiedAt.Valid:
			return input.Errors{FieldEmail: "ErrInvitationEmailTaken"}
		case err != nil && !errors.Is(err, pgx.ErrNoRows):
			return fmt.Errorf("look up user: %w", err)
		}
		now := s.now()
		_, err = q.InvitationGetOpenByEmail(ctx, queries.InvitationGetOpenByEmailParams{Email: email, Now: pgTime(now)})
		if err == nil {
			return input.Errors{FieldEmail: "ErrInvitationPending"}
		}
		if !errors.Is(err, pgx.ErrNoRows) {
			return fmt.Errorf("look up invitation: %w", err)
		}
		token, hash := signup.NewToken(s.Box)
		inv, err = q.InvitationCreate(ctx, queries.InvitationCreateParams{
			Email: email, TokenHash: hash, InvitedBy: pgtype.Int8{Int64: actor.UserID, Valid: true},
			ExpiresAt: pgTime(now.Add(signup.InvitationTTL)),
		})
		if err != nil {
			return fmt.Errorf("create invitation: %w", err)
		}
		if err := audit.Record(ctx, q, actor, audit.Event{
			Action: ActionInvite, TargetType: "invitation", TargetID: fmt.Sprint(inv.ID),
			Details: map[string]any{"email": email, "expires_at": inv.ExpiresAt.Time.UTC().Format(time.RFC3339)},
		}); err != nil {
			return err
		}
		return s.mail(ctx, tx, inv, token, lang, actor)
	})
	return inv, err
}

// Resend mails an open (or expired) invitation again with a new link,
// valid for InvitationTTL from now; the old link stops working. Errors:
// ErrNotFound, ErrNotOpen, adminauth.ErrNotAdmin.
func (s *Service) Resend(ctx context.Context, id int64, lang string, actor audit.Actor) (queries.Invitation, error) {
	var inv queries.Invitation
	err := pgx.BeginFunc(ctx, s.Pool, func(tx pgx.Tx) error {
		q := queries.New(tx)
		if err := adminauth.LockActiveAdmin(ctx, q, actor.UserID); err != nil {
			return err
		}
		cur, err := s.lock(ctx, q, id)
		if err != nil {
			return err
		}
		now := s.now()
		token, hash := signup.NewToken(s.Box)
		inv, err = q.InvitationRenew(ctx, queries.InvitationRenewParams{
			ID: cur.ID, TokenHash: hash, Now: pgTime(now), ExpiresAt: pgTime(now.Add(signup.InvitationTTL)),
		})
		if err != nil {
			return fmt.Errorf("renew invitation: %w", err)
		}
		if err := audit.Record(ctx, q, actor, audit.Event{
			Action: ActionResend, TargetType: "invitation", TargetID: fmt.Sprint(inv.ID),
			Details: map[string]any{"email": inv.Email, "expires_at": inv.ExpiresAt.Time.UTC().Format(time.RFC3339)},
		}); err != nil {
			return err
		}
		return s.mail(ctx, tx, inv, token, lang, actor)
	})
	return inv, err
}

// Revoke stops an invitation's link working. Errors: ErrNotFound,
// ErrNotOpen, adminauth.ErrNotAdmin.
func (s *Service) Revoke(ctx context.Context, id int64, actor audit.Actor) (queries.Invitation, error) {
	var inv queries.Invitation
	err := pgx.BeginFunc(ctx, s.Pool, func(tx pgx.Tx) error {
		q := queries.New(tx)
		if err := adminauth.LockActiveAdmin(ctx, q, actor.UserID); err != nil {
			return err
		}
		var err error
		if inv, err = s.lock(ctx, q, id); err != nil {
			return err
		}
		if _, err := q.InvitationRevoke(ctx, queries.InvitationRevokeParams{ID: id, Now: pgTime(s.now())}); err != nil {
			return fmt.Errorf("revoke invitation: %w", err)
		}
		return audit.Record(ctx, q, actor, audit.Event{
			Action: ActionRevoke, TargetType: "invitation", TargetID: fmt.Sprint(id),
			Details: map[string]any{"email": inv.Email},
		})
	})
	return inv, err
}

// lock holds an invitation that is neither accepted nor revoked until the
// transaction ends.
func (s *Service) lock(ctx context.Context, q *queries.Queries, id int64) (queries.Invitation, error) {
	inv, err := q.InvitationLockByID(ctx, id)
	if errors.Is(err, pgx.ErrNoRows) {
		return inv, ErrNotFound
	}
	if err != nil {
		return inv, fmt.Errorf("lock invitation: %w", err)
	}
	if inv.AcceptedAt.Valid || inv.RevokedAt.Valid {
		return inv, ErrNotOpen
	}
	return inv, nil
}

// mail enqueues the invitation's email with its link, in tx.
func (s *Service) mail(ctx context.Context, tx pgx.Tx, inv queries.Invitation, token, lang string, actor audit.Actor) error {
	args, err := notify.NewEmail(s.Box, inv.Email, lang, notify.EmailInvitation, map[string]any{
		"Token": token, "Inviter": actor.Email,
		"Days":    int(signup.InvitationTTL / (24 * time.Hour)),
		"Expires": inv.ExpiresAt.Time.UTC().Format("2006-01-02 15:04 MST"),
	})
	if err != nil {
		return err
	}
	if _, err := s.River.InsertTx(ctx, tx, args, nil); err != nil {
		return fmt.Errorf("enqueue invitation email: %w", err)
	}
	return nil
}

func pgTime(t time.Time) pgtype.Timestamptz { return pgtype.Timestamptz{Time: t, Valid: true} }

// Tag is the entity tag of the stored sign-up settings (adminauth.SettingsTag).
func (s *Service) Tag(ctx context.Context) (string, error) {
	return adminauth.SettingsTag(ctx, queries.New(s.Pool), signup.SettingsKey)
}
