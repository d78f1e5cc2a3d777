// Package webctx carries what a page needs to know about its request, put
// there by the handlers' middleware and read by the views: the signed-in
// user, the CSRF token, the flash message.
package webctx

import "context"

// User is the signed-in user as the pages show them.
type User struct {
	ID    int64
	Name  string
	Email string
	Admin bool
}

// Flash is a one-time message shown on the next page.
type Flash struct {
	Kind    string // "success" or "error"
	Message string // a catalog message ID
}

// Info is the request's page context.
type Info struct {
	CSRF  string
	User  *User
	Flash *Flash
	// Unread is the signed-in user's count of unread notifications.
	Unread int64
	// LoopbackBaseURL is the platform's base URL when it names this
	// machine only, for the warning an admin sees; else empty.
	LoopbackBaseURL string
}

type key struct{}

// With stores info in ctx.
func With(ctx context.Context, info *Info) context.Context {
	return context.WithValue(ctx, key{}, info)
}

// From returns the request's info; empty outside a request.
func From(ctx context.Context) *Info {
	if i, ok := ctx.Value(key{}).(*Info); ok {
		return i
	}
	return &Info{}
}
