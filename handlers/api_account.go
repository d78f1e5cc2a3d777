package handlers

import (
	"cmp"
	"errors"
	"fmt"
	"io"
	"math"
	"mime"
	"net/http"
	"slices"
	"strconv"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/kubebyon/kubebyon/internal/accounts"
	"github.com/kubebyon/kubebyon/internal/avatars"
	"github.com/kubebyon/kubebyon/internal/input"
	"github.com/kubebyon/kubebyon/internal/ratelimit"
	"github.com/kubebyon/kubebyon/queries"
)

// The caller's own account in the API: profile, password, email address,
// avatar and sign-in methods, each through the service and with the
// limits of the console's settings form that does the same.

// apiAvatarPath is where the API takes the avatar, as an image body: its
// body limit is the console upload's (isAvatarUpload).
const apiAvatarPath = "/api/v1/me/avatar"

// apiAvatarTypes are the media types the avatar is sent as; the picture
// itself is checked by avatars.Process, as the console's upload is.
var apiAvatarTypes = []string{"image/png", "image/jpeg", "image/webp"}

// apiLimit counts one request of the caller's against rule for subject,
// the console's own counter for the same action: once over, 429 with
// Retry-After.
func (h *Handlers) apiLimit(c echo.Context, rule ratelimit.Rule, subject string) error {
	d, err := h.limits.Hit(c.Request().Context(), rule, subject, time.Now())
	if err != nil {
		return err
	}
	if d.Allowed {
		return nil
	}
	c.Response().Header().Set("Retry-After", strconv.Itoa(int(math.Ceil(d.RetryAfter.Seconds()))))
	return echo.NewHTTPError(http.StatusTooManyRequests, "ErrAPITooManyRequests")
}

// decodeLimited reads the request's body into v, then counts the request
// against rule for subject (apiLimit): a malformed request is refused
// without counting.
func (h *Handlers) decodeLimited(c echo.Context, v any, rule ratelimit.Rule, subject string) error {
	if err := decodeJSON(c, v); err != nil {
		return err
	}
	return h.apiLimit(c, rule, subject)
}

// createdOnce answers 201 with v, made at location, whose secret is in
// this answer only: no cache may keep it.
func createdOnce(c echo.Context, location string, v any) error {
	c.Response().Header().Set(echo.HeaderCacheControl, "no-store")
	c.Response().Header().Set(echo.HeaderLocation, location)
	return c.JSON(http.StatusCreated, v)
}

// accountAPIError answers the account services' errors: field errors 422
// (by the error handler), a wrong or spent code 422 on "code", a code
// asked for again too soon 429, what is not there 404, and a change the
// account's state refuses 409.
func accountAPIError(err error) error {
	for _, code := range []error{accounts.ErrCodeInvalid, accounts.ErrCodeExpired, accounts.ErrTooManyAttempts} {
		if errors.Is(err, code) {
			return input.Errors{"code": code.Error()}
		}
	}
	switch {
	case errors.Is(err, accounts.ErrResendTooSoon):
		return echo.NewHTTPError(http.StatusTooManyRequests, accounts.ErrResendTooSoon.Error())
	case errors.Is(err, accounts.ErrNoEmailChange), errors.Is(err, accounts.ErrIdentityNotFound):
		return echo.NewHTTPError(http.StatusNotFound, err.Error())
	case errors.Is(err, accounts.ErrEmailTaken), errors.Is(err, accounts.ErrLastSignInMethod):
		return echo.NewHTTPError(http.StatusConflict, err.Error())
	}
	return err
}

// apiProfileBody is the body of PATCH /api/v1/me: the profile form's
// fields; those absent keep their value.
type apiProfileBody struct {
	Name     *string `json:"name"`
	Language *string `json:"language"`
}

// updateAPIMe is PATCH /api/v1/me: the caller's name and language.
func (h *Handlers) updateAPIMe(c echo.Context) error {
	u, _ := currentUser(c)
	var body apiProfileBody
	if err := h.decodeLimited(c, &body, profileSavePerUser, userKey(u)); err != nil {
		return err
	}
	in := accounts.ProfileInput{Name: valueOr(body.Name, u.Name), Language: valueOr(body.Language, u.Language)}
	saved, err := h.Accounts.UpdateProfile(c.Request().Context(), u, in, actor(c))
	if err != nil {
		return err
	}
	c.Set(ctxUser, saved)
	return h.showAPIMe(c)
}

// apiPasswordBody is the body of PUT /api/v1/me/password.
type apiPasswordBody struct {
	// CurrentPassword is needed when the account has a password; one made
	// through a sign-in provider sets its first without.
	CurrentPassword string `json:"current_password"`
	NewPassword     string `json:"new_password"`
	// RevokeAPIKeys revokes every key of the account, this one too.
	RevokeAPIKeys bool `json:"revoke_api_keys"`
}

// changeAPIPassword is PUT /api/v1/me/password: as the console's form, it
// ends the account's sessions (every one: the key is no session) and
// tells the owner by email.
func (h *Handlers) changeAPIPassword(c echo.Context) error {
	u, _ := currentUser(c)
	var body apiPasswordBody
	if err := h.decodeLimited(c, &body, passwordChangePerUser, userKey(u)); err != nil {
		return err
	}
	if err := h.Accounts.ChangePassword(c.Request().Context(), u, body.CurrentPassword, body.NewPassword, "", body.RevokeAPIKeys, actor(c)); err != nil {
		return err
	}
	return c.NoContent(http.StatusNoContent)
}

// apiEmailChange is the address change waiting for its code.
type apiEmailChange struct {
	NewEmail string `json:"new_email"`
}

// apiEmailChangeBody is the body of POST /api/v1/me/email-change.
type apiEmailChangeBody struct {
	NewEmail string `json:"new_email"`
	// CurrentPassword is needed when the account has a password.
	CurrentPassword string `json:"current_password"`
}

// apiEmailChangePath is the caller's address change.
const apiEmailChangePath = "/api/v1/me/email-change"

// showAPIEmailChange is GET /api/v1/me/email-change: the address waiting
// for its code, 404 when none is.
func (h *Handlers) showAPIEmailChange(c echo.Context) error {
	return h.answerEmailChange(c, http.StatusOK)
}

// answerEmailChange answers with status and the address waiting for its
// code, or 404 when none is.
func (h *Handlers) answerEmailChange(c echo.Context, status int) error {
	u, _ := currentUser(c)
	email, err := h.Accounts.PendingEmailChange(c.Request().Context(), u.ID)
	if err != nil {
		return err
	}
	if email == "" {
		return accountAPIError(accounts.ErrNoEmailChange)
	}
	return c.JSON(status, apiEmailChange{NewEmail: email})
}

// requestAPIEmailChange is POST /api/v1/me/email-change: a code goes to
// the new address, which the account takes once the code comes back
// (confirm). A new request replaces an open one.
func (h *Handlers) requestAPIEmailChange(c echo.Context) error {
	u, _ := currentUser(c)
	var body apiEmailChangeBody
	if err := h.decodeLimited(c, &body, emailChangePerUser, userKey(u)); err != nil {
		return err
	}
	err := h.Accounts.RequestEmailChange(c.Request().Context(), u, body.NewEmail, body.CurrentPassword, actor(c))
	var fe accounts.FieldErrors
	if errors.As(err, &fe) {
		// The console's form names the password field email_password.
		if msg, ok := fe["email_password"]; ok {
			delete(fe, "email_password")
			fe["current_password"] = msg
		}
	}
	if err != nil {
		return accountAPIError(err)
	}
	c.Response().Header().Set(echo.HeaderLocation, apiEmailChangePath)
	return h.answerEmailChange(c, http.StatusCreated)
}

// confirmAPIEmailChange is POST /api/v1/me/email-change/confirm: with the
// code mailed to it, the account moves to the new address; the caller as
// they are now.
func (h *Handlers) confirmAPIEmailChange(c echo.Context) error {
	u, _ := currentUser(c)
	var body struct {
		Code string `json:"code"`
	}
	if err := h.decodeLimited(c, &body, ratelimit.VerifyPerIP, c.RealIP()); err != nil {
		return err
	}
	if _, ok := accounts.NormalizeCode(body.Code); !ok {
		return input.Errors{"code": "ErrCodeFormat"}
	}
	moved, err := h.Accounts.ConfirmEmailChange(c.Request().Context(), u, body.Code, actor(c))
	if err != nil {
		return accountAPIError(err)
	}
	c.Set(ctxUser, moved)
	return h.showAPIMe(c)
}

// resendAPIEmailChangeCode is POST /api/v1/me/email-change/resend: a new
// code to the address waiting for one.
func (h *Handlers) resendAPIEmailChangeCode(c echo.Context) error {
	u, _ := currentUser(c)
	if err := h.apiLimit(c, emailChangePerUser, userKey(u)); err != nil {
		return err
	}
	if err := h.Accounts.ResendEmailChangeCode(c.Request().Context(), u); err != nil {
		return accountAPIError(err)
	}
	return c.NoContent(http.StatusNoContent)
}

// cancelAPIEmailChange is DELETE /api/v1/me/email-change: the address
// stays as it is, and the code sent no longer works.
func (h *Handlers) cancelAPIEmailChange(c echo.Context) error {
	u, _ := currentUser(c)
	if err := h.Accounts.CancelEmailChange(c.Request().Context(), u, actor(c)); err != nil {
		return err
	}
	return c.NoContent(http.StatusNoContent)
}

// uploadAPIAvatar is PUT /api/v1/me/avatar: the body is the picture, with
// the same size and checks as the console's upload.
func (h *Handlers) uploadAPIAvatar(c echo.Context) error {
	u, _ := currentUser(c)
	mt, _, err := mime.ParseMediaType(c.Request().Header.Get(echo.HeaderContentType))
	if err != nil || !slices.Contains(apiAvatarTypes, mt) {
		return echo.NewHTTPError(http.StatusUnsupportedMediaType, "ErrAPIAvatarMediaType")
	}
	// Counted before the picture is read, as the console's uploads are.
	if err := h.apiLimit(c, avatarUploadPerUser, userKey(u)); err != nil {
		return err
	}
	data, err := io.ReadAll(io.LimitReader(c.Request().Body, avatars.MaxBytes+1))
	var he *echo.HTTPError
	if errors.As(err, &he) {
		return he // over the body limit
	}
	if err != nil {
		return fmt.Errorf("read avatar: %w", err)
	}
	switch {
	case len(data) == 0:
		return input.Errors{"avatar": "ErrAvatarMissing"}
	case len(data) > avatars.MaxBytes:
		return input.Errors{"avatar": avatars.ErrTooLarge.Error()}
	}
	if err := h.Accounts.SetAvatar(c.Request().Context(), u.ID, data, actor(c)); err != nil {
		return err
	}
	return c.NoContent(http.StatusNoContent)
}

// removeAPIAvatar is DELETE /api/v1/me/avatar: the generated picture (the
// initials) shows again.
func (h *Handlers) removeAPIAvatar(c echo.Context) error {
	u, _ := currentUser(c)
	if err := h.Accounts.RemoveAvatar(c.Request().Context(), u.ID, actor(c)); err != nil {
		return err
	}
	return c.NoContent(http.StatusNoContent)
}

// apiIdentity is an account at a sign-in provider linked to the caller.
type apiIdentity struct {
	ID       int64     `json:"id"`
	Provider string    `json:"provider"`
	Email    string    `json:"email"`
	LinkedAt time.Time `json:"linked_at"`
}

// apiIdentityList is one page of the caller's sign-in methods: whether
// the account has a password, and the linked identities, newest first.
type apiIdentityList struct {
	PasswordSet bool          `json:"password_set"`
	Identities  []apiIdentity `json:"identities"`
	Next        string        `json:"next,omitempty"`
}

// listAPIIdentities is GET /api/v1/me/identities. Linking one takes the
// provider's sign-in in a browser: the console's.
func (h *Handlers) listAPIIdentities(c echo.Context) error {
	u, _ := currentUser(c)
	p, err := apiPageOf(c)
	if err != nil {
		return err
	}
	ids, err := h.Accounts.Identities(c.Request().Context(), u.ID)
	if err != nil {
		return err
	}
	out := apiIdentityList{PasswordSet: u.PasswordHash.Valid, Identities: []apiIdentity{}}
	page, next, err := pageInMemory(ids, p, func(i queries.OauthIdentity) int64 { return i.ID })
	if err != nil {
		return err
	}
	for _, i := range page {
		out.Identities = append(out.Identities, apiIdentity{ID: i.ID, Provider: i.Provider, Email: i.Email, LinkedAt: i.CreatedAt.Time.UTC()})
	}
	out.Next = next
	return c.JSON(http.StatusOK, out)
}

// unlinkAPIIdentity is DELETE /api/v1/me/identities/{id}: 409 when it is
// the only way left to sign in.
func (h *Handlers) unlinkAPIIdentity(c echo.Context) error {
	u, _ := currentUser(c)
	id, err := strconv.ParseInt(c.Param("id"), 10, 64)
	if err != nil {
		return echo.NewHTTPError(http.StatusNotFound, accounts.ErrIdentityNotFound.Error())
	}
	if err := h.Accounts.UnlinkIdentity(c.Request().Context(), u.ID, id, actor(c)); err != nil {
		return accountAPIError(err)
	}
	return c.NoContent(http.StatusNoContent)
}

// pageInMemory pages a short list the service reads whole (a user's
// webhook channels, linked identities: a few at most) as the lists read a
// page at a time from the database are: newest first by id, the cursor
// the last id of the page.
func pageInMemory[T any](rows []T, p apiPage, id func(T) int64) ([]T, string, error) {
	before, err := p.beforeID()
	if err != nil {
		return nil, "", err
	}
	rows = slices.SortedFunc(slices.Values(rows), func(a, b T) int { return cmp.Compare(id(b), id(a)) })
	if before > 0 {
		rows = slices.DeleteFunc(rows, func(r T) bool { return id(r) >= before })
	}
	page, next := pageOf(rows, p.Limit, func(r T) string { return idCursor(id(r)) })
	return page, next, nil
}
