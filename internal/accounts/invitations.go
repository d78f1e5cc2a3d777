package accounts

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgtype"

	"github.com/kubebyon/kubebyon/internal/adminauth"
	"github.com/kubebyon/kubebyon/internal/audit"
	"github.com/kubebyon/kubebyon/internal/signup"
	"github.com/kubebyon/kubebyon/queries"
)

// ErrInvitationAccountExists: the invited address has an account already;
// its person signs in instead (catalog message ID).
var ErrInvitationAccountExists = errors.New("ErrInvitationAccountExists")

// refusal is a signup refusal as the sign-up form shows it: an address at
// a domain that is not allowed is the email field's error.
func refusal(err error) error {
	if errors.Is(err, signup.ErrDomain) {
		return FieldErrors{"email": err.Error()}
	}
	return err
}

// InvitedSignUpInput is the sign-up form reached by an invitation's link:
// the address is the invitation's, not typed.
type InvitedSignUpInput struct {
	Token    string
	Name     string
	Password string
}

// Invitation is the invitation a link's token names, if it can still be
// accepted: its errors are signup's ErrInvitation*.
func (s *Service) Invitation(ctx context.Context, token string) (queries.Invitation, error) {
	return signup.Open(ctx, queries.New(s.Pool), s.Box, token, s.now())
}

// SignUpInvited makes the invited person's account, verified (the link came
// to the address), whatever the sign-up policy says, and uses the invitation
// up. An unverified account of the address (someone typed it, never proved
// it) becomes theirs, with the name and password given here. Errors:
// FieldErrors, signup's ErrInvitation*, ErrInvitationAccountExists.
func (s *Service) SignUpInvited(ctx context.Context, in InvitedSignUpInput, actor audit.Actor) (queries.User, error) {
	errs := FieldErrors{}
	var msg string
	if in.Name, msg = checkName(in.Name); msg != "" {
		errs["name"] = msg
	}
	if msg := CheckPassword(in.Password); msg != "" {
		errs["password"] = msg
	}
	if len(errs) > 0 {
		return queries.User{}, errs
	}
	hash, err := s.Passwords.Hash(in.Password)
	if err != nil {
		return queries.User{}, err
	}
	var u queries.User
	err = s.inTx(ctx, func(tx pgx.Tx, q *queries.Queries) error {
		now := s.now()
		inv, err := signup.Open(ctx, q, s.Box, in.Token, now)
		if err != nil {
			return err
		}
		existing, err := q.UserGetByEmail(ctx, inv.Email)
		switch {
		case errors.Is(err, pgx.ErrNoRows):
			u, err = q.UserCreate(ctx, queries.UserCreateParams{
				Email: inv.Email, Name: in.Name, PasswordHash: text(hash), Role: adminauth.RoleUser,
				EmailVerifiedAt: pgtype.Timestamptz{Time: now, Valid: true},
			})
			if isUniqueViolation(err) {
				return ErrInvitationAccountExists
			}
			if err != nil {
				return fmt.Errorf("create user: %w", err)
			}
		case err != nil:
			return fmt.Errorf("look up user: %w", err)
		case existing.EmailVerifiedAt.Valid:
			return ErrInvitationAccountExists
		default:
			u, err = q.UserUpdateUnverified(ctx, queries.UserUpdateUnverifiedParams{ID: existing.ID, Name: in.Name, PasswordHash: text(hash)})
			if errors.Is(err, pgx.ErrNoRows) {
				return ErrInvitationAccountExists // verified a moment ago
			}
			if err != nil {
				return fmt.Errorf("update unverified user: %w", err)
			}
			if err := q.UserMarkVerified(ctx, u.ID); err != nil {
				return fmt.Errorf("mark verified: %w", err)
			}
			u.EmailVerifiedAt = pgtype.Timestamptz{Time: now, Valid: true}
		}
		if err := signup.Accept(ctx, q, inv.ID, u.ID, now); err != nil {
			return err
		}
		actor.UserID, actor.Email = u.ID, u.Email
		return audit.Record(ctx, q, actor, audit.Event{
			Action: "user.signup", TargetType: "user", TargetID: fmt.Sprint(u.ID),
			Details: map[string]any{"invitation": inv.ID},
		})
	})
	return u, err
}
