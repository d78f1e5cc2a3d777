package handlers

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"time"

	"github.com/a-h/templ"
	"github.com/labstack/echo/v4"

	"github.com/kubebyon/kubebyon/internal/accounts"
	"github.com/kubebyon/kubebyon/internal/ratelimit"
	"github.com/kubebyon/kubebyon/queries"
	"github.com/kubebyon/kubebyon/views"
)

// twoFactorSignInPath asks for the second factor of a sign-in.
const twoFactorSignInPath = "/sign-in/two-factor"

// sessionTwoFactor holds a sign-in whose first factor passed and whose
// second is awaited: the session is not signed in meanwhile.
const sessionTwoFactor = "two_factor_pending"

// twoFactorTTL is how long the second factor may take.
const twoFactorTTL = 5 * time.Minute

// twoFactorPending is what the session keeps of that sign-in, sealed
// like the pending link of a provider's account.
type twoFactorPending struct {
	UserID  int64     `json:"user_id"`
	Method  string    `json:"method"`
	Next    string    `json:"next"`
	Expires time.Time `json:"expires"`
}

// holdSignIn keeps u's sign-in pending in a session of a new token, with
// whoever was signed in here signed out of it.
func (h *Handlers) holdSignIn(c echo.Context, u queries.User, method, next string) error {
	ctx := c.Request().Context()
	if err := h.renewSession(ctx); err != nil {
		return err
	}
	h.sessions.Remove(ctx, sessionID)
	b, err := json.Marshal(twoFactorPending{UserID: u.ID, Method: method, Next: next, Expires: time.Now().Add(twoFactorTTL)})
	if err != nil {
		return fmt.Errorf("encode pending sign-in: %w", err)
	}
	h.sessions.Put(ctx, sessionTwoFactor, h.Accounts.Box.Seal(b))
	return nil
}

// pendingSignIn opens the session's pending sign-in, if any and not
// expired.
func (h *Handlers) pendingSignIn(c echo.Context) (twoFactorPending, bool) {
	var p twoFactorPending
	sealed := h.sessions.GetString(c.Request().Context(), sessionTwoFactor)
	if sealed == "" {
		return p, false
	}
	b, err := h.Accounts.Box.Open(sealed)
	if err != nil || json.Unmarshal(b, &p) != nil || time.Now().After(p.Expires) {
		h.sessions.Remove(c.Request().Context(), sessionTwoFactor)
		return p, false
	}
	return p, true
}

// showTwoFactorSignInPage asks for a code from the user's app or a
// recovery code.
func (h *Handlers) showTwoFactorSignInPage(c echo.Context) error {
	if _, ok := h.pendingSignIn(c); !ok {
		return h.twoFactorExpired(c)
	}
	return render(c, http.StatusOK, views.TwoFactorSignInPage(views.NewForm()))
}

// twoFactorExpired sends someone without a pending sign-in to sign in
// again.
func (h *Handlers) twoFactorExpired(c echo.Context) error {
	if _, ok := currentUser(c); ok {
		return redirect(c, "/")
	}
	h.flashError(c, "FlashTwoFactorExpired")
	return redirect(c, "/login")
}

// signInTwoFactor checks the second factor and signs the pending user in,
// on to where they were going. Wrong codes count against the user and
// the address.
func (h *Handlers) signInTwoFactor(c echo.Context) error {
	p, ok := h.pendingSignIn(c)
	if !ok {
		return h.twoFactorExpired(c)
	}
	f := views.NewForm()
	page := func(f views.Form) templ.Component { return views.TwoFactorSignInPage(f) }
	if done, err := h.limit(c, ratelimit.TwoFactorPerIP, c.RealIP(), &f, page); done {
		return err
	}
	subject := strconv.FormatInt(p.UserID, 10)
	if done, err := h.limit(c, ratelimit.TwoFactorPerUser, subject, &f, page); done {
		return err
	}
	ctx := c.Request().Context()
	u, err := h.Accounts.VerifyTwoFactor(ctx, p.UserID, c.FormValue("code"), actor(c))
	switch {
	case errors.Is(err, accounts.ErrTwoFactorCode), errors.Is(err, accounts.ErrTwoFactorOff):
		f.Errors["code"] = accounts.ErrTwoFactorCode.Error()
		return render(c, http.StatusUnprocessableEntity, page(f))
	case errors.Is(err, accounts.ErrDisabled), errors.Is(err, accounts.ErrUserNotFound):
		h.sessions.Remove(ctx, sessionTwoFactor)
		h.flashError(c, accounts.ErrDisabled.Error())
		return redirect(c, "/login")
	case err != nil:
		return err
	}
	if err := h.limits.Reset(ctx, ratelimit.TwoFactorPerUser, subject); err != nil {
		return err
	}
	if err := h.startSession(c, u, p.Method); err != nil {
		return err
	}
	return redirect(c, safeNext(p.Next))
}
