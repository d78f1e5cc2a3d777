package adminusers

import (
	"context"
	"errors"
	"fmt"
	"strconv"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgtype"

	"github.com/kubebyon/kubebyon/internal/adminauth"
	"github.com/kubebyon/kubebyon/internal/audit"
	"github.com/kubebyon/kubebyon/queries"
)

// The first admins come from the command line (kubebyon admin), which runs
// as no user: its audit events name CLI as the actor.

// CLI is the actor of the command line's changes.
var CLI = audit.Actor{Email: "cli"}

// Errors of the command line's changes.
var (
	ErrNoAccount     = errors.New("adminusers: no account with that email")
	ErrAccountExists = errors.New("adminusers: an account with that email exists already")
)

// PromoteByEmail makes the account with email an admin, with its audit
// event, in one transaction.
func (s *Service) PromoteByEmail(ctx context.Context, email string) (queries.User, error) {
	var u queries.User
	err := pgx.BeginFunc(ctx, s.Pool, func(tx pgx.Tx) error {
		q := queries.New(tx)
		var err error
		u, err = q.UserSetRoleByEmail(ctx, queries.UserSetRoleByEmailParams{Email: email, Role: adminauth.RoleAdmin})
		if errors.Is(err, pgx.ErrNoRows) {
			return ErrNoAccount
		}
		if err != nil {
			return fmt.Errorf("promote %s: %w", email, err)
		}
		return audit.Record(ctx, q, CLI, audit.Event{
			Action: "admin.promote_via_cli", TargetType: "user", TargetID: strconv.FormatInt(u.ID, 10),
			Details: map[string]any{"email": u.Email},
		})
	})
	return u, err
}

// CreateAdmin makes a verified admin account with the password hash, with
// its audit event, in one transaction. A password the admin did not
// choose (mustChange: a generated one) is to be replaced at the first
// sign-in.
func (s *Service) CreateAdmin(ctx context.Context, email, name, passwordHash string, mustChange bool) (queries.User, error) {
	var u queries.User
	err := pgx.BeginFunc(ctx, s.Pool, func(tx pgx.Tx) error {
		q := queries.New(tx)
		var err error
		u, err = q.UserCreate(ctx, queries.UserCreateParams{
			Email:           email,
			Name:            name,
			PasswordHash:    pgtype.Text{String: passwordHash, Valid: true},
			Role:            adminauth.RoleAdmin,
			EmailVerifiedAt: pgtype.Timestamptz{Time: s.now(), Valid: true},
		})
		var pgErr *pgconn.PgError
		if errors.As(err, &pgErr) && pgErr.Code == "23505" {
			return ErrAccountExists
		}
		if err != nil {
			return fmt.Errorf("create admin %s: %w", email, err)
		}
		if mustChange {
			if err := q.UserRequirePasswordChange(ctx, u.ID); err != nil {
				return fmt.Errorf("create admin %s: %w", email, err)
			}
			u.PasswordChangeRequired = true
		}
		return audit.Record(ctx, q, CLI, audit.Event{
			Action: "admin.create_via_cli", TargetType: "user", TargetID: strconv.FormatInt(u.ID, 10),
			Details: map[string]any{"email": u.Email},
		})
	})
	return u, err
}
