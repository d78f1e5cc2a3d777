package adminauth

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/kubebyon/kubebyon/internal/passwords"
	"github.com/kubebyon/kubebyon/internal/ratelimit"
	"github.com/kubebyon/kubebyon/queries"
)

// ReauthPerAdmin limits password confirmations, so that a stolen admin
// session cannot be used to guess the admin's password. A success resets it.
var ReauthPerAdmin = ratelimit.Rule{Name: "admin-reauth", Limit: 10, Window: 15 * time.Minute}

// ConfirmPassword checks the password of the admin adminID for a
// dangerous action, at now, counting the attempt against ReauthPerAdmin.
// An admin without a password (signed up with a provider) confirms with
// a fresh sign-in instead (WithFreshSignIn). It returns ErrWrongPassword,
// *LimitedError or ErrNotAdmin when the admin may not go on.
func ConfirmPassword(ctx context.Context, pool *pgxpool.Pool, adminID int64, password string, now time.Time) error {
	// An admin key confirms by itself, and tries no password.
	if adminKeyOf(ctx, adminID) {
		return nil
	}
	q := queries.New(pool)
	subject := strconv.FormatInt(adminID, 10)
	d, err := ratelimit.Hit(ctx, q, ReauthPerAdmin, subject, now)
	if err != nil {
		return err
	}
	if !d.Allowed {
		return &LimitedError{RetryAfter: d.RetryAfter}
	}
	admin, err := q.UserGetByID(ctx, adminID)
	if errors.Is(err, pgx.ErrNoRows) {
		return ErrNotAdmin
	}
	if err != nil {
		return fmt.Errorf("get admin %d: %w", adminID, err)
	}
	// An account without a password (signed up with a provider) has none
	// to confirm with: it confirms by signing in with the provider again.
	if !admin.PasswordHash.Valid {
		if freshSignInOf(ctx, adminID, now) {
			return ratelimit.Reset(ctx, q, ReauthPerAdmin, subject)
		}
		return ErrWrongPassword
	}
	ok, err := passwords.Verify(password, admin.PasswordHash.String)
	if err != nil {
		return err
	}
	if !ok {
		return ErrWrongPassword
	}
	return ratelimit.Reset(ctx, q, ReauthPerAdmin, subject)
}

// FreshSignInTTL is how long a sign-in with a provider, made again to
// confirm, stands in for the password of an admin who has none.
const FreshSignInTTL = 5 * time.Minute

// freshSignIn is an admin's sign-in with a provider made to confirm.
type freshSignIn struct {
	adminID int64
	at      time.Time
}

type freshSignInKey struct{}

// WithFreshSignIn tells the confirmations of the request with ctx that the
// admin adminID signed in again with a provider at at (the handlers read it
// from the browser's session). It counts, for FreshSignInTTL, only for an
// admin without a password: one with a password confirms with it.
func WithFreshSignIn(ctx context.Context, adminID int64, at time.Time) context.Context {
	return context.WithValue(ctx, freshSignInKey{}, freshSignIn{adminID: adminID, at: at})
}

// freshSignInOf reports whether ctx carries a fresh sign-in of adminID
// made within FreshSignInTTL of now.
func freshSignInOf(ctx context.Context, adminID int64, now time.Time) bool {
	f, ok := ctx.Value(freshSignInKey{}).(freshSignIn)
	return ok && f.adminID == adminID && !f.at.After(now) && now.Sub(f.at) < FreshSignInTTL
}

// ConfirmationGiven reports whether the request brings something to
// confirm a change with: a password, or a fresh sign-in with a provider
// (WithFreshSignIn), or an admin key (WithAdminKey). It is asked before
// ConfirmPassword, so that a form sent without either is told to give one.
func ConfirmationGiven(ctx context.Context, password string) bool {
	if password != "" || anyAdminKey(ctx) {
		return true
	}
	f, ok := ctx.Value(freshSignInKey{}).(freshSignIn)
	return ok && freshSignInOf(ctx, f.adminID, time.Now())
}
