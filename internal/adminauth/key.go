package adminauth

import "context"

type adminKeyKey struct{}

// WithAdminKey tells the confirmations of the request with ctx that the
// admin adminID acts with an admin API key: the key is the proof that the
// back office asks a password (or a fresh sign-in) for, so the request
// needs neither (ConfirmationGiven, ConfirmPassword). The handlers set it
// for the admin API only, once the key and the role are checked.
func WithAdminKey(ctx context.Context, adminID int64) context.Context {
	return context.WithValue(ctx, adminKeyKey{}, adminID)
}

// adminKeyOf reports whether ctx carries the admin key of adminID.
func adminKeyOf(ctx context.Context, adminID int64) bool {
	id, ok := ctx.Value(adminKeyKey{}).(int64)
	return ok && id == adminID
}

// anyAdminKey reports whether ctx carries an admin key at all.
func anyAdminKey(ctx context.Context) bool {
	_, ok := ctx.Value(adminKeyKey{}).(int64)
	return ok
}
