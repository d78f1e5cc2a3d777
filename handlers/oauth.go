package handlers

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/a-h/templ"
	"github.com/labstack/echo/v4"
	"golang.org/x/oauth2"

	"github.com/kubebyon/kubebyon/internal/accounts"
	"github.com/kubebyon/kubebyon/internal/adminauth"
	"github.com/kubebyon/kubebyon/internal/ratelimit"
	"github.com/kubebyon/kubebyon/internal/secrets"
	"github.com/kubebyon/kubebyon/internal/signup"
	"github.com/kubebyon/kubebyon/queries"
	"github.com/kubebyon/kubebyon/views"
)

// Session keys of a sign-in with a provider.
const (
	sessionOAuthFlow = "oauth_flow" // the round trip to the provider
	sessionOAuthLink = "oauth_link" // sealed pendingLink
)

// linkTTL is how long a person has to prove an account is theirs after the
// provider vouched for them.
const linkTTL = 10 * time.Minute

// providerButtons lists the sign-in providers in effect.
func (h *Handlers) providerButtons(ctx context.Context) ([]views.OAuthProvider, error) {
	ps, err := h.signInProviders(ctx)
	if err != nil {
		return nil, err
	}
	out := make([]views.OAuthProvider, 0, len(ps))
	for _, p := range ps {
		out = append(out, views.OAuthProvider{Name: p.Name, Label: p.Label})
	}
	return out, nil
}

// oauthProvider is the provider name when it is in effect.
func (h *Handlers) oauthProvider(ctx context.Context, name string) (OAuthProvider, bool, error) {
	ps, err := h.signInProviders(ctx)
	if err != nil {
		return OAuthProvider{}, false, err
	}
	for _, p := range ps {
		if p.Name == name {
			return p.OAuthProvider, true, nil
		}
	}
	return OAuthProvider{}, false, nil
}

// providerLabel names a provider for people, from buttons (the providers
// in effect); those not in effect by their name.
func providerLabel(buttons []views.OAuthProvider, name string) string {
	for _, b := range buttons {
		if b.Name == name {
			return b.Label
		}
	}
	return name
}

// oauthFlow is what the session keeps between sending a browser to the
// provider and its return.
type oauthFlow struct {
	Provider string `json:"provider"`
	State    string `json:"state"`
	Session  string `json:"session"` // goth's marshalled session
	// Next is the local page to land on once signed in.
	Next string `json:"next,omitempty"`
	// LinkTo is the signed-in user who asked, from their settings, to link
	// the provider's account to theirs (0: a sign-in).
	LinkTo int64 `json:"link_to,omitempty"`
	// Reauth is the signed-in admin who signs in again to confirm a
	// dangerous action (admin_reauth.go; 0: not that).
	Reauth int64 `json:"reauth,omitempty"`
	// Verifier is the PKCE code verifier (RFC 7636) and Nonce the value
	// the ID token must carry back (OpenID Connect Core 3.1.2.1), both of
	// an OpenID Connect sign-in: a code or an ID token taken from another
	// browser's sign-in is worthless here.
	Verifier string `json:"verifier,omitempty"`
	Nonce    string `json:"nonce,omitempty"`
}

// startOAuth sends the browser to the provider with a new state bound to
// this session.
func (h *Handlers) startOAuth(c echo.Context) error {
	ctx := c.Request().Context()
	p, ok, err := h.oauthProvider(ctx, c.Param("provider"))
	if err != nil {
		return err
	}
	if !ok {
		return echo.ErrNotFound
	}
	gp, err := p.load(ctx)
	if err != nil {
		h.Logger.WarnContext(ctx, "oauth provider unavailable", "provider", p.Name, "error", err)
		return h.oauthFailed(c, "FlashOAuthFailed")
	}
	state := rand.Text()
	sess, err := gp.BeginAuth(state)
	if err != nil {
		return fmt.Errorf("begin %s sign-in: %w", p.Name, err)
	}
	authURL, err := sess.GetAuthURL()
	if err != nil {
		return fmt.Errorf("begin %s sign-in: %w", p.Name, err)
	}
	f := oauthFlow{Provider: p.Name, State: state, Session: sess.Marshal(), Next: safeNext(c.QueryParam("next"))}
	if p.openID {
		f.Verifier, f.Nonce = oauth2.GenerateVerifier(), rand.Text()
		if authURL, err = withQuery(authURL, url.Values{
			"code_challenge": {oauth2.S256ChallengeFromVerifier(f.Verifier)}, "code_challenge_method": {"S256"}, "nonce": {f.Nonce},
		}); err != nil {
			return fmt.Errorf("begin %s sign-in: %w", p.Name, err)
		}
	}
	if u, ok := currentUser(c); ok {
		switch {
		case c.QueryParam("link") == "1":
			f.LinkTo = u.ID
		case c.QueryParam("reauth") == "1" && u.Role == adminauth.RoleAdmin:
			f.Reauth = u.ID
			if authURL, err = reauthURL(p, authURL); err != nil {
				return err
			}
		}
	}
	flow, err := json.Marshal(f)
	if err != nil {
		return fmt.Errorf("encode %s sign-in: %w", p.Name, err)
	}
	h.sessions.Put(ctx, sessionOAuthFlow, string(flow))
	return c.Redirect(http.StatusSeeOther, authURL)
}

// finishOAuth is where the provider sends the browser back. Nothing is
// written unless the state matches the one this session started with.
func (h *Handlers) finishOAuth(c echo.Context) error {
	ctx := c.Request().Context()
	p, ok, err := h.oauthProvider(ctx, c.Param("provider"))
	if err != nil {
		return err
	}
	if !ok {
		return echo.ErrNotFound
	}
	var flow oauthFlow
	raw := h.sessions.PopString(ctx, sessionOAuthFlow)
	if c.QueryParam("error") != "" {
		return h.oauthFailed(c, "FlashOAuthDenied")
	}
	state := c.QueryParam("state")
	if raw == "" || json.Unmarshal([]byte(raw), &flow) != nil || flow.Provider != p.Name || state == "" || !secrets.Equal(flow.State, state) {
		return h.oauthFailed(c, "FlashOAuthState")
	}
	// Only the code comes from the query string: other parameters goth
	// reads (redirect_uri, code_verifier) are ours to set.
	params := url.Values{"code": {c.QueryParam("code")}}
	if flow.Verifier != "" {
		params.Set("code_verifier", flow.Verifier)
	}
	id, err := p.authorize(ctx, flow.Session, params, flow.Nonce)
	if err != nil {
		h.Logger.WarnContext(ctx, "oauth sign-in failed", "provider", p.Name, "error", err)
		return h.oauthFailed(c, "FlashOAuthFailed")
	}

	var current *queries.User
	if u, ok := currentUser(c); ok {
		current = &u
	}
	if flow.LinkTo != 0 {
		return h.finishLink(c, id, current, flow.LinkTo)
	}
	if flow.Reauth != 0 {
		return h.finishReauth(c, id, current, flow)
	}
	res, err := h.Accounts.SignInWithIdentity(ctx, id, current, actor(c))
	var link *accounts.LinkRequired
	switch {
	case errors.As(err, &link):
		return h.askToLink(c, id, link, safeNext(flow.Next))
	case errors.Is(err, accounts.ErrDisabled), errors.Is(err, accounts.ErrIdentityUnverified), errors.Is(err, accounts.ErrIdentityConflict),
		errors.Is(err, signup.ErrClosed), errors.Is(err, signup.ErrInviteOnly), errors.Is(err, signup.ErrDomain):
		return h.oauthFailed(c, err.Error())
	case err != nil:
		return err
	}
	to, err := h.switchUser(c, res.User, p.Name, safeNext(flow.Next))
	if err != nil {
		return err
	}
	switch {
	case res.Created:
		h.flash(c, "FlashOAuthWelcome")
	case res.Linked:
		h.flash(c, "FlashOAuthLinked")
	}
	return redirect(c, to)
}

// withQuery sets the parameters q on rawURL.
func withQuery(rawURL string, q url.Values) (string, error) {
	u, err := url.Parse(rawURL)
	if err != nil {
		return "", fmt.Errorf("parse %q: %w", rawURL, err)
	}
	v := u.Query()
	for k, vs := range q {
		v[k] = vs
	}
	u.RawQuery = v.Encode()
	return u.String(), nil
}

// finishLink links the provider's account to the user who asked for it
// from their settings, if that user is still the one signed in here.
func (h *Handlers) finishLink(c echo.Context, id accounts.Identity, current *queries.User, linkTo int64) error {
	if current == nil || current.ID != linkTo {
		return h.oauthFailed(c, "FlashOAuthState")
	}
	err := h.Accounts.LinkIdentityToUser(c.Request().Context(), id, *current, actor(c))
	switch {
	case errors.Is(err, accounts.ErrIdentityOtherAccount):
		h.flashError(c, err.Error())
	case err != nil:
		return err
	default:
		h.flash(c, "FlashOAuthLinked")
	}
	return redirect(c, "/settings/sign-in")
}

// oauthFailed shows why a sign-in with a provider did not happen, on the
// sign-in page (or the dashboard, for someone still signed in).
func (h *Handlers) oauthFailed(c echo.Context, msgID string) error {
	h.flashError(c, msgID)
	if _, ok := currentUser(c); ok {
		return redirect(c, "/")
	}
	return redirect(c, "/login")
}

// switchUser signs this browser in as u, ending the session of whoever
// else was signed in here, and returns where to go (signInAs).
func (h *Handlers) switchUser(c echo.Context, u queries.User, method, next string) (string, error) {
	if cur, ok := currentUser(c); ok && cur.ID == u.ID {
		return next, nil
	}
	if sid, ok := c.Get(ctxSessionID).(string); ok {
		if err := h.Accounts.EndSession(c.Request().Context(), sid, actor(c)); err != nil {
			return "", err
		}
	}
	return h.signInAs(c, u, method, next)
}

// pendingLink is an identity waiting for its person to prove that the
// account with its email is theirs. It is sealed in the session: the
// provider's word on who they are must not be editable.
type pendingLink struct {
	Identity    accounts.Identity `json:"identity"`
	HasPassword bool              `json:"has_password"`
	Providers   []string          `json:"providers"`
	Expires     time.Time         `json:"expires"`
	Next        string            `json:"next,omitempty"`
}

func (h *Handlers) askToLink(c echo.Context, id accounts.Identity, link *accounts.LinkRequired, next string) error {
	id.Email = link.Email
	b, err := json.Marshal(pendingLink{Identity: id, HasPassword: link.HasPassword, Providers: link.Providers, Expires: time.Now().Add(linkTTL), Next: next})
	if err != nil {
		return fmt.Errorf("encode pending link: %w", err)
	}
	h.sessions.Put(c.Request().Context(), sessionOAuthLink, h.Accounts.Box.Seal(b))
	return redirect(c, "/auth/link")
}

// pendingLink opens the session's pending link, if any and not expired.
func (h *Handlers) pendingLink(c echo.Context) (pendingLink, bool) {
	var p pendingLink
	sealed := h.sessions.GetString(c.Request().Context(), sessionOAuthLink)
	if sealed == "" {
		return p, false
	}
	b, err := h.Accounts.Box.Open(sealed)
	if err != nil || json.Unmarshal(b, &p) != nil || time.Now().After(p.Expires) {
		return p, false
	}
	return p, true
}

func (h *Handlers) linkView(ctx context.Context, p pendingLink) (views.OAuthLink, error) {
	buttons, err := h.providerButtons(ctx)
	if err != nil {
		return views.OAuthLink{}, err
	}
	l := views.OAuthLink{Provider: providerLabel(buttons, p.Identity.Provider), Email: p.Identity.Email, HasPassword: p.HasPassword}
	for _, name := range p.Providers {
		l.SignInWith = append(l.SignInWith, providerLabel(buttons, name))
	}
	return l, nil
}

func (h *Handlers) showLinkPage(c echo.Context) error {
	p, ok := h.pendingLink(c)
	if !ok {
		return h.oauthFailed(c, "FlashOAuthLinkExpired")
	}
	l, err := h.linkView(c.Request().Context(), p)
	if err != nil {
		return err
	}
	return render(c, http.StatusOK, views.OAuthLinkPage(views.NewForm(), l))
}

// linkIdentity links the pending identity once the account's password is
// given, and signs in.
func (h *Handlers) linkIdentity(c echo.Context) error {
	ctx := c.Request().Context()
	p, ok := h.pendingLink(c)
	if !ok {
		return h.oauthFailed(c, "FlashOAuthLinkExpired")
	}
	l, err := h.linkView(ctx, p)
	if err != nil {
		return err
	}
	f := views.NewForm()
	page := func(f views.Form) templ.Component { return views.OAuthLinkPage(f, l) }
	email := strings.ToLower(p.Identity.Email)
	if done, err := h.limit(c, ratelimit.SignInPerIP, c.RealIP(), &f, page); done {
		return err
	}
	if done, err := h.limit(c, ratelimit.SignInPerAccount, email, &f, page); done {
		return err
	}
	u, err := h.Accounts.LinkIdentityWithPassword(ctx, p.Identity, c.FormValue("password"), actor(c))
	switch {
	case errors.Is(err, accounts.ErrBadCredentials):
		f.Errors["password"] = "ErrOAuthLinkPassword"
		return render(c, http.StatusUnauthorized, page(f))
	case errors.Is(err, accounts.ErrDisabled), errors.Is(err, accounts.ErrIdentityConflict):
		f.Error = err.Error()
		return render(c, http.StatusUnprocessableEntity, page(f))
	case err != nil:
		return err
	}
	h.sessions.Remove(ctx, sessionOAuthLink)
	if err := h.limits.Reset(ctx, ratelimit.SignInPerAccount, email); err != nil {
		return err
	}
	to, err := h.switchUser(c, u, p.Identity.Provider, safeNext(p.Next))
	if err != nil {
		return err
	}
	h.flash(c, "FlashOAuthLinked")
	return redirect(c, to)
}
