package handlers

import (
	"errors"
	"math"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/kubebyon/kubebyon/internal/accounts"
	"github.com/kubebyon/kubebyon/internal/adminauth"
	"github.com/kubebyon/kubebyon/internal/apikeys"
	"github.com/kubebyon/kubebyon/internal/locale"
	"github.com/kubebyon/kubebyon/internal/orgs"
	"github.com/kubebyon/kubebyon/internal/ratelimit"
	"github.com/kubebyon/kubebyon/views"
)

// invalidTokenChallenge answers a key that is malformed or does not work
// (RFC 6750); a request without one gets the bare "Bearer".
const invalidTokenChallenge = `Bearer error="invalid_token"`

// requireAPIKey authenticates the request by its "Authorization: Bearer"
// key and makes the key's user the request's user, in place of any
// session's. A read key may only read: anything else is 403. A POST
// with an Idempotency-Key is done once (idempotent).
func (h *Handlers) requireAPIKey(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		key, err := h.bearer(c, apikeys.ParseBearer, apikeys.ErrUnauthorized)
		if err != nil {
			return err
		}
		caller, err := h.APIKeys.Authenticate(c.Request().Context(), key, c.RealIP())
		if errors.Is(err, apikeys.ErrUnauthorized) {
			return h.apiUnauthorized(c, invalidTokenChallenge, apikeys.ErrUnauthorized)
		}
		if err != nil {
			return err
		}
		if !readOnly(c.Request().Method) && !caller.CanWrite() {
			return insufficientScope(c, writeScope(c))
		}
		c.Set(ctxUser, caller.User)
		c.Set(ctxAPIScope, caller.Scope)
		c.Set(ctxActing, orgs.Acting{OrgID: caller.OrgID, UserID: caller.User.ID, Cap: caller.OrgRole})
		return h.idempotent(c, caller.User.ID, next)
	}
}

// writeScope is the scope a key needs to change something by the route
// of c: admin under the admin API, where any other key is refused
// (requireAdminKey), write elsewhere.
func writeScope(c echo.Context) string {
	if strings.HasPrefix(c.Path(), "/api/v1/admin/") {
		return apikeys.ScopeAdmin
	}
	return apikeys.ScopeWrite
}

// ctxAPIScope is the Echo context key of the request's API key scope, as
// it holds now (apikeys.Caller).
const ctxAPIScope = "api_scope"

// requireAdminKey, after requireAPIKey, lets only admin keys through: the
// admin API (/api/v1/admin). Any other key is 403 insufficient_scope.
// An admin key of a user who is no longer an admin is a write key
// (apikeys.Authenticate), so this is the role's check too. The key stands
// in for the password the back office asks to confirm dangerous actions
// with (adminauth.WithAdminKey).
func requireAdminKey(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		if scope, _ := c.Get(ctxAPIScope).(string); scope != apikeys.ScopeAdmin {
			return insufficientScope(c, apikeys.ScopeAdmin)
		}
		u, _ := currentUser(c)
		c.SetRequest(c.Request().WithContext(adminauth.WithAdminKey(c.Request().Context(), u.ID)))
		return next(c)
	}
}

// insufficientScope answers a key that works but may not do this (RFC
// 6750): 403, naming the scope it would need.
func insufficientScope(c echo.Context, scope string) error {
	return refuseScope(c, scope, apikeys.ErrInsufficientScope.Error())
}

// refuseScope is insufficientScope saying why with the message msgID.
func refuseScope(c echo.Context, scope, msgID string) error {
	c.Response().Header().Set(echo.HeaderWWWAuthenticate, `Bearer error="insufficient_scope", scope="`+scope+`"`)
	return c.JSON(http.StatusForbidden, apiError{Error: apiErrorBody{
		Code: "insufficient_scope", Message: locale.T(c.Request().Context(), msgID),
	}})
}

// readOnly: a request of this method changes nothing, and a read key
// may make it.
func readOnly(method string) bool {
	return method == http.MethodGet || method == http.MethodHead || method == http.MethodOptions
}

// bearer reads the one "Authorization: Bearer" secret of the request with
// parse, or answers as apiUnauthorized does (with unauthorized's message)
// when there is none, more than one, or one parse refuses.
func (h *Handlers) bearer(c echo.Context, parse func(string) (string, bool), unauthorized error) (string, error) {
	headers := c.Request().Header.Values(echo.HeaderAuthorization)
	if len(headers) == 0 {
		return "", h.apiUnauthorized(c, `Bearer`, unauthorized)
	}
	secret, ok := parse(headers[0])
	if len(headers) > 1 || !ok {
		return "", h.apiUnauthorized(c, invalidTokenChallenge, unauthorized)
	}
	return secret, nil
}

// apiUnauthorized answers a request without a working key or token: 401
// with the challenge and unauthorized's message, or 429 once its address
// has failed too often.
func (h *Handlers) apiUnauthorized(c echo.Context, challenge string, unauthorized error) error {
	d, err := h.limits.Hit(c.Request().Context(), ratelimit.APIAuthFailPerIP, c.RealIP(), time.Now())
	if err != nil {
		return err
	}
	if !d.Allowed {
		c.Response().Header().Set("Retry-After", strconv.Itoa(int(math.Ceil(d.RetryAfter.Seconds()))))
		return echo.NewHTTPError(http.StatusTooManyRequests, "ErrAPIRateLimited")
	}
	c.Response().Header().Set(echo.HeaderWWWAuthenticate, challenge)
	return echo.NewHTTPError(http.StatusUnauthorized, unauthorized.Error())
}

// apiUser is a user as the API shows them.
type apiUser struct {
	ID        int64     `json:"id"`
	Email     string    `json:"email"`
	Name      string    `json:"name"`
	Role      string    `json:"role"`
	Language  string    `json:"language"`
	CreatedAt time.Time `json:"created_at"`
}

// showAPIMe is GET /api/v1/me: the user the key acts for, with the ETag
// of what PATCH changes (accounts.ProfileTag).
func (h *Handlers) showAPIMe(c echo.Context) error {
	u, _ := currentUser(c)
	tag, err := accounts.ProfileTag(u)
	if err != nil {
		return err
	}
	c.Response().Header().Set("ETag", tag)
	return c.JSON(http.StatusOK, apiUser{
		ID: u.ID, Email: u.Email, Name: u.Name, Role: u.Role, Language: u.Language,
		CreatedAt: u.CreatedAt.Time.UTC(),
	})
}

// showAPISpec is GET /api/v1/openapi.json: the API's OpenAPI description
// (internal/apispec), for anyone, as API references are.
func (h *Handlers) showAPISpec(c echo.Context) error {
	c.Response().Header().Set(echo.HeaderCacheControl, "public, max-age=300")
	return c.JSONBlob(http.StatusOK, h.apiSpec)
}

// showAPIReference is the browsable API reference: the description
// rendered by Swagger UI, from the binary.
func (h *Handlers) showAPIReference(c echo.Context) error {
	return render(c, http.StatusOK, views.APIReferencePage())
}
