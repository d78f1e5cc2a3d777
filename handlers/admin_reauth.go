package handlers

import (
	"encoding/json"
	"fmt"
	"net/url"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/kubebyon/kubebyon/internal/accounts"
	"github.com/kubebyon/kubebyon/internal/adminauth"
	"github.com/kubebyon/kubebyon/queries"
	"github.com/kubebyon/kubebyon/views"
)

// sessionAdminReauth holds an admin's last sign-in with a provider made to
// confirm a dangerous action: admins who sign in only with a provider have
// no password to confirm with (adminauth.WithFreshSignIn).
const sessionAdminReauth = "admin_reauth"

// adminReauth is what the session keeps of that sign-in.
type adminReauth struct {
	UserID int64     `json:"user_id"`
	At     time.Time `json:"at"`
}

// reauthURL asks an OpenID Connect provider to have the person sign in
// again rather than reuse their session there (OpenID Connect Core 3.1.2.1,
// prompt=login). GitHub has no such parameter.
func reauthURL(p OAuthProvider, authURL string) (string, error) {
	if !p.openID {
		return authURL, nil
	}
	u, err := withQuery(authURL, url.Values{"prompt": {"login"}})
	if err != nil {
		return "", fmt.Errorf("%s authorize URL: %w", p.Name, err)
	}
	return u, nil
}

// finishReauth records, in this browser's session, that the admin who
// asked signed in again with one of the provider accounts linked to theirs.
func (h *Handlers) finishReauth(c echo.Context, id accounts.Identity, current *queries.User, flow oauthFlow) error {
	if current == nil || current.ID != flow.Reauth || current.Role != adminauth.RoleAdmin {
		return h.oauthFailed(c, "FlashOAuthState")
	}
	ctx := c.Request().Context()
	next := safeNext(flow.Next)
	ids, err := h.Accounts.Identities(ctx, current.ID)
	if err != nil {
		return err
	}
	for _, linked := range ids {
		if linked.Provider == id.Provider && linked.Subject == id.Subject {
			b, err := json.Marshal(adminReauth{UserID: current.ID, At: time.Now()})
			if err != nil {
				return fmt.Errorf("encode admin confirmation: %w", err)
			}
			h.sessions.Put(ctx, sessionAdminReauth, string(b))
			h.flash(c, "FlashAdminReauthDone")
			return redirect(c, next)
		}
	}
	h.flashError(c, "FlashAdminReauthOtherAccount")
	return redirect(c, next)
}

// freshSignIn is when the admin userID last signed in again with a
// provider in this browser, if they did.
func (h *Handlers) freshSignIn(c echo.Context, userID int64) (time.Time, bool) {
	var r adminReauth
	raw := h.sessions.GetString(c.Request().Context(), sessionAdminReauth)
	if raw == "" || json.Unmarshal([]byte(raw), &r) != nil || r.UserID != userID {
		return time.Time{}, false
	}
	return r.At, true
}

// withFreshSignIn passes the admin's fresh sign-in, if any, to the
// confirmations of the request (adminauth.WithFreshSignIn).
func (h *Handlers) withFreshSignIn(c echo.Context, u queries.User) {
	if at, ok := h.freshSignIn(c, u.ID); ok {
		c.SetRequest(c.Request().WithContext(adminauth.WithFreshSignIn(c.Request().Context(), u.ID, at)))
	}
}

// adminConfirm is how the admin u confirms dangerous actions from the page
// at next: their password, or a sign-in again with a provider linked to
// their account when they have none.
func (h *Handlers) adminConfirm(c echo.Context, u queries.User, next string) (views.AdminConfirm, error) {
	m := views.AdminConfirm{HasPassword: u.PasswordHash.Valid, Next: next}
	if m.HasPassword {
		return m, nil
	}
	if at, ok := h.freshSignIn(c, u.ID); ok && time.Since(at) < adminauth.FreshSignInTTL {
		m.FreshUntil = at.Add(adminauth.FreshSignInTTL)
	}
	ctx := c.Request().Context()
	ids, err := h.Accounts.Identities(ctx, u.ID)
	if err != nil {
		return m, err
	}
	ps, err := h.signInProviders(ctx)
	if err != nil {
		return m, err
	}
	for _, p := range ps {
		for _, linked := range ids {
			if linked.Provider == p.Name {
				m.Providers = append(m.Providers, views.OAuthProvider{Name: p.Name, Label: p.Label})
				break
			}
		}
	}
	return m, nil
}
