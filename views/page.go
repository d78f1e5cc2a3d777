package views

import (
	"context"
	"strings"
)

// Page is what every page needs to know about its request, put in the
// request's context by the handlers' middleware (WithPage) and read by the
// layout and components (PageOf): the signed-in user, the CSRF token, the
// flash message.
type Page struct {
	CSRF string
	// Path is the request's path, for the navigation's current area and
	// the language switch's way back.
	Path  string
	User  *PageUser
	Flash *Flash
	// Unread is the signed-in user's count of unread notifications.
	Unread int64
	// LoopbackBaseURL is the platform's base URL when it names this
	// machine only, for the warning an admin sees; else empty.
	LoopbackBaseURL string
	// Version is the platform's version, for the admin area's footer;
	// empty on the other pages.
	Version string
	// APICall is the API call that reads what the page shows, for its
	// "view as API call" disclosure; nil on pages without one.
	APICall *APICall
	// Org is the name of the organization the console works in, as the
	// session last read it; empty before it has.
	Org string
	// ReadOnly says the signed-in member may only read in it (a viewer):
	// the pages offer no action that would be refused.
	ReadOnly bool
	// ViewerKubeconfig says its viewers may download a kubeconfig.
	ViewerKubeconfig bool
	// NavCollapsed says the reader folded the side navigation to its
	// icons (the NavCookie), so that the page is drawn that way at once.
	NavCollapsed bool
}

// NavCookie is the cookie the side navigation's fold button sets (from
// app.js) to NavCookieCollapsed while the navigation shows icons only.
const (
	NavCookie          = "kb_nav"
	NavCookieCollapsed = "collapsed"
)

// APICall is an API operation as a page shows it: the curl command that
// calls it, and its place in the API reference.
type APICall struct {
	// Method and URL of the call, the URL absolute.
	Method, URL string
	// Reference is the operation's link in the API reference page.
	Reference string
}

// PageUser is the signed-in user as the pages show them.
type PageUser struct {
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

type pageKey struct{}

// WithPage stores p in ctx.
func WithPage(ctx context.Context, p *Page) context.Context {
	return context.WithValue(ctx, pageKey{}, p)
}

// PageOf returns the request's page context; empty outside a request.
func PageOf(ctx context.Context) *Page {
	if p, ok := ctx.Value(pageKey{}).(*Page); ok {
		return p
	}
	return &Page{}
}

// navCurrent reports whether the request's path is prefix's area: the
// path itself when exact, else the path or one under it.
func navCurrent(ctx context.Context, prefix string, exact bool) bool {
	p := PageOf(ctx).Path
	if exact || p == prefix {
		return p == prefix
	}
	return strings.HasPrefix(p, prefix+"/")
}

// userLabel is how the user menu names its user: their name, else their
// email.
func userLabel(u *PageUser) string {
	if u.Name != "" {
		return u.Name
	}
	return u.Email
}

// flashRole is the ARIA role of a flash message: an error interrupts (alert),
// a success waits its turn (status).
func flashRole(kind string) string {
	if kind == "error" {
		return "alert"
	}
	return "status"
}
