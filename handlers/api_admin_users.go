package handlers

import (
	"encoding/json"
	"errors"
	"math"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/kubebyon/kubebyon/internal/accounts"
	"github.com/kubebyon/kubebyon/internal/adminauth"
	"github.com/kubebyon/kubebyon/internal/adminusers"
	"github.com/kubebyon/kubebyon/internal/apikeys"
	"github.com/kubebyon/kubebyon/queries"
)

// The admin API's accounts (GET /api/v1/admin/users...), the actions on
// one and the activity stream: what admin_users.go, admin_user_detail.go
// and admin_activity.go do in the back office, with the same services.
// The admin key stands in for the password the back office asks for
// (requireAdminKey), and for the email it has typed to delete an account.

// errAdminUserNotFound is an account that does not exist.
var errAdminUserNotFound = echo.NewHTTPError(http.StatusNotFound, "ErrBillingUserNotFound")

// apiAdminUser is an account as the admin API lists it.
type apiAdminUser struct {
	ID    int64  `json:"id"`
	Email string `json:"email"`
	Name  string `json:"name"`
	Role  string `json:"role"`
	// Status is active, unverified or disabled (adminusers.Status).
	Status          string     `json:"status"`
	CreatedAt       time.Time  `json:"created_at"`
	EmailVerifiedAt *time.Time `json:"email_verified_at"`
	DisabledAt      *time.Time `json:"disabled_at"`
	LastSignInAt    *time.Time `json:"last_sign_in_at"`
}

func apiAdminUserOf(u queries.AdminUserListRow) apiAdminUser {
	return apiAdminUser{
		ID: u.ID, Email: u.Email, Name: u.Name, Role: u.Role,
		Status:    string(adminusers.StatusFrom(u.EmailVerifiedAt.Valid, u.DisabledAt.Valid)),
		CreatedAt: u.CreatedAt.Time.UTC(), EmailVerifiedAt: optionalTime(u.EmailVerifiedAt),
		DisabledAt: optionalTime(u.DisabledAt), LastSignInAt: optionalTime(u.LastSignInAt),
	}
}

// apiAdminUserList is one page of accounts, in id order (api_page.go).
type apiAdminUserList struct {
	Users []apiAdminUser `json:"users"`
	Next  string         `json:"next,omitempty"`
}

// apiAdminUserDetail is one account with what its back-office page shows
// beside it; its recent activity is the activity stream's, by its email.
type apiAdminUserDetail struct {
	apiAdminUser
	Language    string `json:"language"`
	HasPassword bool   `json:"has_password"`
	// Sessions are its signed-in browsers.
	Sessions   []apiAdminSession     `json:"sessions"`
	APIKeys    []apiAdminUserKey     `json:"api_keys"`
	Identities []apiAdminIdentity    `json:"identities"`
	Clusters   []apiAdminUserCluster `json:"clusters"`
	// Organizations are those it is a member of (api_admin_orgs.go).
	Organizations []apiAdminUserOrg `json:"organizations"`
}

type apiAdminSession struct {
	CreatedAt  time.Time `json:"created_at"`
	LastSeenAt time.Time `json:"last_seen_at"`
	IP         string    `json:"ip"`
	UserAgent  string    `json:"user_agent"`
}

// apiAdminUserKey is one of an account's API keys, never its secret.
type apiAdminUserKey struct {
	ID    int64  `json:"id"`
	Name  string `json:"name"`
	Scope string `json:"scope"`
	// Status is active, expired or revoked (apikeys.Status).
	Status     string     `json:"status"`
	CreatedAt  time.Time  `json:"created_at"`
	LastUsedAt *time.Time `json:"last_used_at"`
	ExpiresAt  *time.Time `json:"expires_at"`
	RevokedAt  *time.Time `json:"revoked_at"`
}

func apiAdminUserKeyOf(k queries.ApiKey, now time.Time) apiAdminUserKey {
	return apiAdminUserKey{
		ID: k.ID, Name: k.Name, Scope: k.Scope, Status: apikeys.Status(k, now), CreatedAt: k.CreatedAt.Time.UTC(),
		LastUsedAt: optionalTime(k.LastUsedAt), ExpiresAt: optionalTime(k.ExpiresAt), RevokedAt: optionalTime(k.RevokedAt),
	}
}

// apiAdminIdentity is a sign-in provider's account linked to the account.
type apiAdminIdentity struct {
	Provider  string    `json:"provider"`
	CreatedAt time.Time `json:"created_at"`
}

type apiAdminUserCluster struct {
	ID                int64     `json:"id"`
	Name              string    `json:"name"`
	Status            string    `json:"status"`
	KubernetesVersion string    `json:"kubernetes_version"`
	Nodes             int64     `json:"nodes"`
	CreatedAt         time.Time `json:"created_at"`
}

// apiAdminUserDetailOf is d as the admin API shows it.
func apiAdminUserDetailOf(d adminusers.Detail) apiAdminUserDetail {
	u := d.User
	out := apiAdminUserDetail{
		apiAdminUser: apiAdminUserOf(queries.AdminUserListRow{
			ID: u.ID, Email: u.Email, Name: u.Name, Role: u.Role, EmailVerifiedAt: u.EmailVerifiedAt,
			DisabledAt: u.DisabledAt, CreatedAt: u.CreatedAt, LastSignInAt: u.LastSignInAt,
		}),
		Language: u.Language, HasPassword: u.PasswordHash.Valid,
		Sessions:   make([]apiAdminSession, len(d.Sessions)),
		APIKeys:    make([]apiAdminUserKey, len(d.APIKeys)),
		Identities: make([]apiAdminIdentity, len(d.Identities)),
		Clusters:   make([]apiAdminUserCluster, len(d.Clusters)),
	}
	for i, s := range d.Sessions {
		out.Sessions[i] = apiAdminSession{CreatedAt: s.CreatedAt.Time.UTC(), LastSeenAt: s.LastSeenAt.Time.UTC(), IP: s.Ip, UserAgent: s.UserAgent}
	}
	now := time.Now()
	for i, k := range d.APIKeys {
		out.APIKeys[i] = apiAdminUserKeyOf(k, now)
	}
	for i, id := range d.Identities {
		out.Identities[i] = apiAdminIdentity{Provider: id.Provider, CreatedAt: id.CreatedAt.Time.UTC()}
	}
	for i, c := range d.Clusters {
		out.Clusters[i] = apiAdminUserCluster{
			ID: c.ID, Name: c.Name, Status: c.Status, KubernetesVersion: c.KubernetesVersion, Nodes: c.Nodes, CreatedAt: c.CreatedAt.Time.UTC(),
		}
	}
	return out
}

// adminUserIDParam is the path's :id of an account; a malformed one is
// not found.
func adminUserIDParam(c echo.Context) (int64, error) { return pathID(c, "id", errAdminUserNotFound) }

// listAPIAdminUsers is GET /api/v1/admin/users: every account in id
// order, or those whose email or name contains ?q=, a page at a time.
func (h *Handlers) listAPIAdminUsers(c echo.Context) error {
	// The cursor is an id too, the one the page goes on above.
	p, after, err := apiIDPageOf(c)
	if err != nil {
		return err
	}
	page, err := h.AdminUsers.List(c.Request().Context(), strings.TrimSpace(c.QueryParam("q")), after, p.Limit)
	if err != nil {
		return err
	}
	out := apiAdminUserList{Users: make([]apiAdminUser, len(page.Users)), Next: idCursor(page.NextAfter)}
	for i, u := range page.Users {
		out.Users[i] = apiAdminUserOf(u)
	}
	return c.JSON(http.StatusOK, out)
}

// showAPIAdminUser is GET /api/v1/admin/users/:id.
func (h *Handlers) showAPIAdminUser(c echo.Context) error {
	id, err := adminUserIDParam(c)
	if err != nil {
		return err
	}
	return h.answerAPIAdminUser(c, id)
}

// answerAPIAdminUser answers with the account id as it is now.
func (h *Handlers) answerAPIAdminUser(c echo.Context, id int64) error {
	ctx := c.Request().Context()
	d, err := h.AdminUsers.Get(ctx, id)
	if err != nil {
		return apiAdminUserError(err)
	}
	out := apiAdminUserDetailOf(d)
	orgs, err := h.AdminOrgs.ForUser(ctx, id)
	if err != nil {
		return err
	}
	out.Organizations = apiAdminUserOrgsOf(orgs)
	return c.JSON(http.StatusOK, out)
}

// changeAPIAdminUser is POST /api/v1/admin/users/:id/<action> (disable,
// enable, promote, demote, revoke-sessions): the back office's
// changeAdminUser, with its rules (no admin disables or demotes
// themselves; a change that changes nothing is 409). It answers with the
// account.
func (h *Handlers) changeAPIAdminUser(a adminusers.Action) echo.HandlerFunc {
	return func(c echo.Context) error {
		id, err := adminUserIDParam(c)
		if err != nil {
			return err
		}
		if err := h.AdminUsers.Apply(c.Request().Context(), a, id, "", actor(c)); err != nil {
			return apiAdminUserError(err)
		}
		return h.answerAPIAdminUser(c, id)
	}
}

// revokeAPIAdminUserKey is DELETE /api/v1/admin/users/:id/api-keys/:keyid:
// the key ends for good, as when its owner revokes it (again changes
// nothing). It answers with the key.
func (h *Handlers) revokeAPIAdminUserKey(c echo.Context) error {
	id, err := pathID(c, "id", errAdminUserKeyNotFound)
	if err != nil {
		return err
	}
	keyID, err := pathID(c, "keyid", errAdminUserKeyNotFound)
	if err != nil {
		return err
	}
	ctx := c.Request().Context()
	err = h.APIKeys.Revoke(ctx, id, keyID, actor(c))
	if errors.Is(err, apikeys.ErrNotFound) {
		return errAdminUserKeyNotFound
	}
	if err != nil {
		return err
	}
	k, err := h.APIKeys.Get(ctx, id, keyID)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, apiAdminUserKeyOf(k, time.Now()))
}

// errAdminUserKeyNotFound is a key the account does not have.
var errAdminUserKeyNotFound = echo.NewHTTPError(http.StatusNotFound, "ErrAPIAdminUserKeyNotFound")

// resetAPIAdminUserPassword is POST /api/v1/admin/users/:id/password-reset:
// the account is mailed a password reset code. An account that cannot
// sign in is 409; another code within accounts.ResendInterval of the
// last is 429.
func (h *Handlers) resetAPIAdminUserPassword(c echo.Context) error {
	id, err := adminUserIDParam(c)
	if err != nil {
		return err
	}
	err = h.Accounts.SendPasswordReset(c.Request().Context(), id, actor(c))
	if errors.Is(err, accounts.ErrResendTooSoon) {
		c.Response().Header().Set("Retry-After", strconv.Itoa(int(math.Ceil(accounts.ResendInterval.Seconds()))))
		return echo.NewHTTPError(http.StatusTooManyRequests, err.Error())
	}
	if err != nil {
		return apiAdminUserError(err)
	}
	return c.NoContent(http.StatusNoContent)
}

// deleteAPIAdminUser is DELETE /api/v1/admin/users/:id: the account goes
// for good, with the back office's rules: not one's own (422), nor one
// with clusters or orders (409).
func (h *Handlers) deleteAPIAdminUser(c echo.Context) error {
	id, err := adminUserIDParam(c)
	if err != nil {
		return err
	}
	ctx := c.Request().Context()
	u, err := h.AdminUsers.User(ctx, id)
	if err != nil {
		return apiAdminUserError(err)
	}
	if err := h.AdminUsers.Delete(ctx, id, u.Email, "", actor(c)); err != nil {
		return apiAdminUserError(err)
	}
	return c.NoContent(http.StatusNoContent)
}

// apiAdminUserError answers an account action's refusal: 404 for an
// account that does not exist (or an admin no longer one, as in the back
// office), 422 for what no admin may do to their own account, 409 for
// what the account's state does not allow.
func apiAdminUserError(err error) error {
	switch {
	case errors.Is(err, adminusers.ErrNotFound), errors.Is(err, accounts.ErrUserNotFound), errors.Is(err, adminauth.ErrNotAdmin):
		return errAdminUserNotFound
	case errors.Is(err, adminusers.ErrSelfDisable), errors.Is(err, adminusers.ErrSelfDemote), errors.Is(err, adminusers.ErrSelfDelete):
		return echo.NewHTTPError(http.StatusUnprocessableEntity, err.Error())
	case errors.Is(err, adminusers.ErrNoChange), errors.Is(err, adminusers.ErrHasClusters), errors.Is(err, adminusers.ErrHasOrders), errors.Is(err, adminusers.ErrSoleOwner),
		errors.Is(err, accounts.ErrResetInactive),
		// Its email changed since it was read: another request's doing.
		errors.Is(err, adminusers.ErrEmailMismatch):
		return echo.NewHTTPError(http.StatusConflict, err.Error())
	}
	return err
}

// apiAuditEvent is an event of the activity stream.
type apiAuditEvent struct {
	ID        int64     `json:"id"`
	CreatedAt time.Time `json:"created_at"`
	// ActorID is null for the platform's own doings and for an account
	// deleted since.
	ActorID    *int64          `json:"actor_id"`
	ActorEmail string          `json:"actor_email"`
	Action     string          `json:"action"`
	TargetType string          `json:"target_type"`
	TargetID   string          `json:"target_id"`
	IP         string          `json:"ip"`
	UserAgent  string          `json:"user_agent"`
	Details    json.RawMessage `json:"details"`
}

// apiAuditEventList is one page of the activity stream, newest first.
type apiAuditEventList struct {
	Events []apiAuditEvent `json:"events"`
	Next   string          `json:"next,omitempty"`
}

// listAPIAdminActivity is GET /api/v1/admin/activity: the audit stream,
// newest first, with the back office's filters: ?actor= (part of the
// actor's email, any case) and ?action= (exactly).
func (h *Handlers) listAPIAdminActivity(c echo.Context) error {
	p, before, err := apiIDPageOf(c)
	if err != nil {
		return err
	}
	f := adminusers.ActivityFilter{Actor: strings.TrimSpace(c.QueryParam("actor")), Action: strings.TrimSpace(c.QueryParam("action"))}
	page, err := h.AdminUsers.Activity(c.Request().Context(), f, before, p.Limit)
	if err != nil {
		return err
	}
	out := apiAuditEventList{Events: make([]apiAuditEvent, len(page.Events)), Next: idCursor(page.Older)}
	for i, e := range page.Events {
		out.Events[i] = apiAuditEvent{
			ID: e.ID, CreatedAt: e.CreatedAt.Time.UTC(), ActorEmail: e.ActorEmail, Action: e.Action,
			TargetType: e.TargetType, TargetID: e.TargetID, IP: e.Ip, UserAgent: e.UserAgent, Details: jsonObject(e.Details),
		}
		if e.ActorID.Valid {
			out.Events[i].ActorID = &e.ActorID.Int64
		}
	}
	return c.JSON(http.StatusOK, out)
}
