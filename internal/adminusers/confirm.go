package adminusers

import (
	"context"
	"time"
)

// ConfirmPassword checks the admin's password for a dangerous action
// outside this package (such as replacing the host cluster's credentials),
// under the same ReauthPerAdmin limit. It returns ErrWrongPassword,
// *LimitedError or ErrNotAdmin when the admin may not go on.
func (s *Service) ConfirmPassword(ctx context.Context, adminID int64, password string) error {
	return s.confirm(ctx, adminID, password)
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
// (WithFreshSignIn). The services ask for it before ConfirmPassword, so
// that a form sent without either is told to give one.
func ConfirmationGiven(ctx context.Context, password string) bool {
	if password != "" {
		return true
	}
	f, ok := ctx.Value(freshSignInKey{}).(freshSignIn)
	return ok && freshSignInOf(ctx, f.adminID, time.Now())
}
