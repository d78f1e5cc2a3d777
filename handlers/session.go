package handlers

import (
	"errors"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/kubebyon/kubebyon/internal/accounts"
	"github.com/kubebyon/kubebyon/internal/adminauth"
	"github.com/kubebyon/kubebyon/internal/audit"
	"github.com/kubebyon/kubebyon/internal/input"
	"github.com/kubebyon/kubebyon/internal/orgs"
	"github.com/kubebyon/kubebyon/queries"
	"github.com/kubebyon/kubebyon/views"
)

// Session keys.
const (
	sessionID       = "sid"
	sessionFlash    = "flash"
	sessionFlashErr = "flash_error"
)

// Echo context keys.
const (
	ctxUser       = "user"
	ctxSessionID  = "session_id"
	ctxSessionOrg = "session_org"
)

// sessionOrgRow is the organization the session works in, with the
// member's role, as the session query read it (SessionFindSignedIn).
type sessionOrgRow struct {
	ID               int64
	Name             string
	ViewerKubeconfig bool
	Role             orgs.Role
}

// touchEvery limits how often a session's last-seen time is written.
const touchEvery = time.Minute

// loadUser resolves the session cookie to a signed-in user, fills the
// page context, and pops the flash message.
func (h *Handlers) loadUser(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		ctx := c.Request().Context()
		info := &views.Page{CSRF: h.sessions.GetString(ctx, sessionCSRF), Path: c.Request().URL.Path}
		if nav, err := c.Cookie(views.NavCookie); err == nil && nav.Value == views.NavCookieCollapsed {
			info.NavCollapsed = true
		}
		if sid := h.sessions.GetString(ctx, sessionID); sid != "" {
			// The store read the user with the session, mostly.
			row, found := signedInFrom(ctx)
			var err error
			if !found || row.UserSessionID != sid {
				var auth queries.UserSessionAuthenticateRow
				auth, err = h.Accounts.SessionUser(ctx, sid)
				row = queries.SessionFindSignedInRow{UserSessionID: sid, User: auth.User, SessionLastSeenAt: auth.SessionLastSeenAt, Unread: auth.Unread,
					OrgID: auth.OrgID, OrgName: auth.OrgName, OrgViewerKubeconfig: auth.OrgViewerKubeconfig, OrgRole: auth.OrgRole}
			}
			switch {
			case errors.Is(err, accounts.ErrNoSession):
				// Signed out elsewhere, reset, or disabled: this cookie is done.
				h.sessions.Remove(ctx, sessionID)
			case err != nil:
				return err
			default:
				u := row.User
				if m := c.Request().Method; m != http.MethodGet && m != http.MethodHead {
					// What this request changes of its user (a notification
					// read, the organization chosen, a name) is on their next
					// page, which the response may bring before the database's
					// notification comes: forget their sessions kept, before
					// (this request's own) and after (one read meanwhile).
					h.SessionCache.ForgetUser(u.ID)
					defer h.SessionCache.ForgetUser(u.ID)
				}
				c.Set(ctxUser, u)
				c.Set(ctxSessionID, sid)
				info.User = &views.PageUser{ID: u.ID, Name: u.Name, Email: u.Email, Admin: u.Role == adminauth.RoleAdmin}
				info.Unread = row.Unread
				if row.OrgID.Valid {
					// The organization the session works in, read with it.
					c.Set(ctxSessionOrg, sessionOrgRow{ID: row.OrgID.Int64, Name: row.OrgName.String, ViewerKubeconfig: row.OrgViewerKubeconfig.Bool, Role: orgs.Role(row.OrgRole.String)})
					info.Org = row.OrgName.String
				}
				if time.Since(row.SessionLastSeenAt.Time) > touchEvery {
					if err := h.Accounts.TouchSession(ctx, sid); err != nil {
						h.Logger.WarnContext(ctx, "touch session", "error", err)
					}
					// Its next page reads the time touched.
					h.SessionCache.ForgetUser(u.ID)
				}
				if u.Language != "" {
					h.setLanguage(c, u.Language)
				}
			}
		}
		if msg := h.sessions.PopString(ctx, sessionFlash); msg != "" {
			info.Flash = &views.Flash{Kind: "success", Message: msg}
		} else if msg := h.sessions.PopString(ctx, sessionFlashErr); msg != "" {
			info.Flash = &views.Flash{Kind: "error", Message: msg}
		}
		c.SetRequest(c.Request().WithContext(views.WithPage(c.Request().Context(), info)))
		return next(c)
	}
}

// currentUser is the signed-in user; requireUser guarantees one.
func currentUser(c echo.Context) (queries.User, bool) {
	u, ok := c.Get(ctxUser).(queries.User)
	return u, ok
}

// requireUser sends visitors who are not signed in to the sign-in page,
// coming back here afterwards.
func (h *Handlers) requireUser(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		if u, ok := currentUser(c); ok {
			if gated, err := h.gate(c, u); gated {
				return err
			}
			return next(c)
		}
		target := "/login"
		if c.Request().Method == http.MethodGet {
			target += "?next=" + url.QueryEscape(c.Request().URL.RequestURI())
		}
		return redirect(c, target)
	}
}

// requireAdmin hides the admin area: anyone but an admin gets 404.
func (h *Handlers) requireAdmin(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		if u, ok := currentUser(c); ok && u.Role == adminauth.RoleAdmin {
			if gated, err := h.gate(c, u); gated {
				return err
			}
			h.withFreshSignIn(c, u)
			return next(c)
		}
		return echo.ErrNotFound
	}
}

// passwordForm is where a user sets their password, and the one page
// (with the form's action) that a user who must change theirs may use.
const passwordForm = "/settings/profile"

// mustChangePassword reports whether the user signed in with a password
// they were given (kubebyon admin create prints one) and asks for
// anything but setting their own.
func (h *Handlers) mustChangePassword(c echo.Context, u queries.User) bool {
	if !u.PasswordChangeRequired {
		return false
	}
	p := c.Request().URL.Path
	return p != passwordForm && p != "/settings/password"
}

// gate sends a signed-in user who must first change their password, or
// set up two-factor authentication, to do so; gated reports that it did
// (or failed to, with err).
func (h *Handlers) gate(c echo.Context, u queries.User) (gated bool, err error) {
	if h.mustChangePassword(c, u) {
		return true, h.toPasswordForm(c)
	}
	enrol, err := h.mustEnrolTwoFactor(c, u)
	if err != nil {
		return true, err
	}
	if enrol {
		return true, redirect(c, twoFactorSetupPath)
	}
	return false, nil
}

// mustEnrolTwoFactor reports whether the platform requires two-factor
// authentication of u, who has none, and asks for anything but setting
// it up (or the language of the page that explains it).
func (h *Handlers) mustEnrolTwoFactor(c echo.Context, u queries.User) (bool, error) {
	p := c.Request().URL.Path
	if p == securityPath || strings.HasPrefix(p, securityPath+"/") || p == "/settings/language" {
		return false, nil
	}
	// What the session's read brought along, or else a read of its own.
	if row, ok := signedInFrom(c.Request().Context()); ok && row.User.ID == u.ID {
		return !row.TwoFactorEnabled && accounts.TwoFactorPolicy(row.TwoFactorRequired).Covers(u), nil
	}
	return h.Accounts.TwoFactorRequired(c.Request().Context(), u)
}

// toPasswordForm sends the user to the password form, saying why.
func (h *Handlers) toPasswordForm(c echo.Context) error {
	h.flashError(c, "ErrPasswordChangeRequired")
	return redirect(c, passwordForm+"#password-section")
}

// redirect is POST-redirect-GET, and tells htmx to follow it as a page load.
func redirect(c echo.Context, to string) error {
	if c.Request().Header.Get("HX-Request") == "true" {
		c.Response().Header().Set("HX-Redirect", to)
		return c.NoContent(http.StatusNoContent)
	}
	return c.Redirect(http.StatusSeeOther, to)
}

// flash leaves a success message for the next page.
func (h *Handlers) flash(c echo.Context, msgID string) {
	h.sessions.Put(c.Request().Context(), sessionFlash, msgID)
}

// flashError leaves an error message for the next page.
func (h *Handlers) flashError(c echo.Context, msgID string) {
	h.sessions.Put(c.Request().Context(), sessionFlashErr, msgID)
}

// actor describes who is making the request, for audit events and
// sessions. The User-Agent is made storable and capped here, where it
// leaves the request (the address is one the IP extractor parsed).
func actor(c echo.Context) audit.Actor {
	a := audit.Actor{IP: c.RealIP(), UserAgent: input.HeaderValue(c.Request().UserAgent())}
	if u, ok := currentUser(c); ok {
		a.UserID, a.Email = u.ID, u.Email
	}
	return a
}

// safeNext accepts only local paths as a place to return to.
func safeNext(next string) string {
	if next == "" || !strings.HasPrefix(next, "/") || strings.HasPrefix(next, "//") || strings.HasPrefix(next, "/\\") {
		return "/"
	}
	u, err := url.Parse(next)
	if err != nil || u.Host != "" || u.Scheme != "" {
		return "/"
	}
	return next
}
