package accounts

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/kubebyon/kubebyon/internal/audit"
	"github.com/kubebyon/kubebyon/internal/notify"
	"github.com/kubebyon/kubebyon/queries"
)

// ErrResetInactive is an admin asking a password reset for a disabled or
// unverified account, which could not use it (catalog message ID).
var ErrResetInactive = errors.New("ErrAdminResetInactive")

// ErrUserNotFound is a password reset asked for an account that is gone.
var ErrUserNotFound = errors.New("accounts: no such user")

// SendPasswordReset mails the account userID the password reset code a
// user gets from "forgot password", on behalf of an admin (actor), and
// records it as "admin.user_password_reset" in the same transaction.
func (s *Service) SendPasswordReset(ctx context.Context, userID int64, actor audit.Actor) error {
	return s.inTx(ctx, func(tx pgx.Tx, q *queries.Queries) error {
		u, err := q.UserGetByID(ctx, userID)
		if errors.Is(err, pgx.ErrNoRows) {
			return ErrUserNotFound
		}
		if err != nil {
			return fmt.Errorf("look up user %d: %w", userID, err)
		}
		if u.DisabledAt.Valid || !u.EmailVerifiedAt.Valid {
			return ErrResetInactive
		}
		if err := s.checkResend(ctx, q, u.ID, "password_reset"); err != nil {
			return err
		}
		if err := audit.Record(ctx, q, actor, audit.Event{
			Action: "admin.user_password_reset", TargetType: "user", TargetID: fmt.Sprint(u.ID),
			Details: map[string]any{"email": u.Email},
		}); err != nil {
			return err
		}
		return s.sendCode(ctx, tx, q, u, "password_reset", "", ResetCodeTTL, notify.EmailPasswordReset)
	})
}
