// Package adminauth guards admins' changes: the roles, the check that the
// acting account is still an active admin (under a lock held for the
// change's transaction), the confirmation of a dangerous change with the
// admin's password or a fresh sign-in (confirm.go), and the settings save
// that puts them together. The domain packages import it, not adminusers
// (the admin users screen), to guard their admin actions.
package adminauth

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/kubebyon/kubebyon/internal/etag"
	"github.com/kubebyon/kubebyon/queries"
)

// The roles of an account (users.role).
const (
	RoleUser  = "user"
	RoleAdmin = "admin"
)

// ErrWrongPassword is a confirmation with the wrong password, or with none
// the admin can use (a catalog message ID).
var ErrWrongPassword = errors.New("ErrAdminWrongPassword")

// ErrNotAdmin is the acting account losing its admin role (or being
// disabled) by a concurrent action between the request's check and the
// change. The handlers answer it with 404.
var ErrNotAdmin = errors.New("adminauth: the acting account is not an active admin")

// LimitedError says too many confirmations were tried; RetryAfter is when
// the next one is allowed.
type LimitedError struct{ RetryAfter time.Duration }

func (e *LimitedError) Error() string {
	return fmt.Sprintf("adminauth: too many password confirmations, retry after %s", e.RetryAfter)
}

// LockActiveAdmin checks, under a lock held until the caller's
// transaction (q) ends, that the acting account is still an active
// admin: another admin may have demoted or disabled it since the request
// began. It returns ErrNotAdmin when not.
func LockActiveAdmin(ctx context.Context, q *queries.Queries, adminID int64) error {
	rows, err := q.AdminUserLockForUpdate(ctx, []int64{adminID})
	if err != nil {
		return fmt.Errorf("lock admin: %w", err)
	}
	if len(rows) != 1 || rows[0].Role != RoleAdmin || rows[0].DisabledAt.Valid {
		return ErrNotAdmin
	}
	return nil
}

// Confirm is what a settings save asks of the acting admin before it
// runs.
type Confirm struct {
	// Needed is set when the change is dangerous (a secret changes, or
	// any change of settings that every sign-in or mail goes through).
	Needed bool
	// Password is the admin's password as the form gave it; "" lets a
	// fresh sign-in with a provider stand in (WithFreshSignIn).
	Password string
	// Required is the service's own error (a catalog message ID) for a
	// request that brings neither, which tells the admin to give one;
	// ErrWrongPassword when nil.
	Required error
}

// SaveSettings is every admin's change of the platform's settings. When
// confirm.Needed, the request must bring a confirmation (else
// confirm.Required) and pass ConfirmPassword first. Then save runs in a
// transaction in which the acting admin is held active (LockActiveAdmin)
// and the settings are locked against other admins' saves. save reads
// what it changes again under the lock (another admin may have saved
// since the request read it) and records its audit event.
//
// key is the settings row the change writes: when ctx carries an
// If-Match (etag.WithMatch), the row's tag (SettingsTag) is checked under
// the lock, and a row that changed since is etag.ErrPreconditionFailed.
func SaveSettings(ctx context.Context, pool *pgxpool.Pool, adminID int64, key string, confirm Confirm, save func(q *queries.Queries) error) error {
	if confirm.Needed {
		if !ConfirmationGiven(ctx, confirm.Password) {
			if confirm.Required == nil {
				return ErrWrongPassword
			}
			return confirm.Required
		}
		if err := ConfirmPassword(ctx, pool, adminID, confirm.Password, time.Now()); err != nil {
			return err
		}
	}
	return pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) error {
		q := queries.New(tx)
		if err := LockActiveAdmin(ctx, q, adminID); err != nil {
			return err
		}
		if err := q.AdminSettingsLock(ctx); err != nil {
			return fmt.Errorf("lock settings: %w", err)
		}
		tag, err := SettingsTag(ctx, q, key)
		if err != nil {
			return err
		}
		if err := etag.Check(ctx, tag); err != nil {
			return err
		}
		return save(q)
	})
}

// SettingsTag is the entity tag of the settings stored under key (one
// group of the admin API's settings): of the row as stored, secrets
// sealed, so that it changes with every save that writes the row and
// tells nothing of a secret. A group never saved has a tag too.
func SettingsTag(ctx context.Context, q *queries.Queries, key string) (string, error) {
	var stored json.RawMessage
	row, err := q.SettingGet(ctx, key)
	switch {
	case err == nil:
		stored = row.Value
	case !errors.Is(err, pgx.ErrNoRows):
		return "", fmt.Errorf("read settings %s: %w", key, err)
	}
	return etag.Of(stored)
}
