package handlers

import (
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/kubebyon/kubebyon/internal/apikeys"
	"github.com/kubebyon/kubebyon/queries"
)

// The caller's API keys in the API. A key makes keys of at most its own
// scope: a write key no admin key, a read key none at all (it cannot
// POST).

// apiAPIKey is an API key as the API shows it: never its secret. Key is
// the key itself, in the answer that made it only.
type apiAPIKey struct {
	ID     int64  `json:"id"`
	Name   string `json:"name"`
	Prefix string `json:"prefix"`
	Scope  string `json:"scope"`
	// Status is active, expired or revoked.
	Status     string     `json:"status"`
	CreatedAt  time.Time  `json:"created_at"`
	ExpiresAt  *time.Time `json:"expires_at"`
	RevokedAt  *time.Time `json:"revoked_at"`
	LastUsedAt *time.Time `json:"last_used_at"`
	// LastUsedIP is the address it was last used from, "" before.
	LastUsedIP string `json:"last_used_ip"`
	Key        string `json:"key,omitempty"`
}

type apiAPIKeyList struct {
	APIKeys []apiAPIKey `json:"api_keys"`
	Next    string      `json:"next,omitempty"`
}

func apiAPIKeyOf(k queries.ApiKey, now time.Time) apiAPIKey {
	return apiAPIKey{
		ID: k.ID, Name: k.Name, Prefix: k.Prefix, Scope: k.Scope, Status: apikeys.Status(k, now),
		CreatedAt: k.CreatedAt.Time.UTC(), ExpiresAt: optionalTime(k.ExpiresAt),
		RevokedAt: optionalTime(k.RevokedAt), LastUsedAt: optionalTime(k.LastUsedAt),
		LastUsedIP: k.LastUsedIp,
	}
}

// listAPIKeys is GET /api/v1/api-keys: the caller's keys, newest first,
// revoked and expired ones included.
func (h *Handlers) listAPIKeys(c echo.Context) error {
	u, _ := currentUser(c)
	p, before, err := apiIDPageOf(c)
	if err != nil {
		return err
	}
	rows, err := h.APIKeys.Page(c.Request().Context(), u.ID, before, int32(p.Limit)+1)
	if err != nil {
		return err
	}
	rows, next := pageOf(rows, p.Limit, func(k queries.ApiKey) string { return idCursor(k.ID) })
	now := time.Now()
	out := apiAPIKeyList{APIKeys: make([]apiAPIKey, len(rows)), Next: next}
	for i, k := range rows {
		out.APIKeys[i] = apiAPIKeyOf(k, now)
	}
	return c.JSON(http.StatusOK, out)
}

// apiAPIKeyBody is the body of POST /api/v1/api-keys: the console's form.
// Absent, the scope is read and the key expires in 90 days, the form's
// choices; expires_on alone is an expiry on that date.
type apiAPIKeyBody struct {
	Name      string  `json:"name"`
	Scope     *string `json:"scope"`
	Expiry    *string `json:"expiry"`
	ExpiresOn string  `json:"expires_on"`
}

// createAPIKeyByAPI is POST /api/v1/api-keys: 201 with the key, whose
// value is in this answer only.
func (h *Handlers) createAPIKeyByAPI(c echo.Context) error {
	who, err := h.acting(c)
	if err != nil {
		return err
	}
	var body apiAPIKeyBody
	if err := decodeJSON(c, &body); err != nil {
		return err
	}
	scope := valueOr(body.Scope, apikeys.ScopeRead)
	expiry := apikeys.Expiry{Choice: apikeys.Expiry90Days, Date: body.ExpiresOn}
	if body.ExpiresOn != "" {
		expiry.Choice = apikeys.ExpiryOnDate
	}
	expiry.Choice = valueOr(body.Expiry, expiry.Choice)
	// A scope that is none is the service's 422.
	if caller, _ := c.Get(ctxAPIScope).(string); apikeys.Within(scope, apikeys.ScopeAdmin) && !apikeys.Within(scope, caller) {
		return refuseScope(c, scope, "ErrAPIKeyScopeAboveOwn")
	}
	created, err := h.APIKeys.Create(c.Request().Context(), who, body.Name, scope, expiry, actor(c))
	if err != nil {
		return err
	}
	out := apiAPIKeyOf(created.Key, time.Now())
	out.Key = created.Value
	return createdOnce(c, fmt.Sprintf("/api/v1/api-keys/%d", out.ID), out)
}

// showAPIKey is GET /api/v1/api-keys/{apiKey}.
func (h *Handlers) showAPIKey(c echo.Context) error {
	u, _ := currentUser(c)
	id, err := apiKeyParam(c)
	if err != nil {
		return err
	}
	k, err := h.APIKeys.Get(c.Request().Context(), u.ID, id)
	if err != nil {
		return apiKeyError(err)
	}
	return c.JSON(http.StatusOK, apiAPIKeyOf(k, time.Now()))
}

// revokeAPIKeyByAPI is DELETE /api/v1/api-keys/{apiKey}: the key stops
// working for good (this one too, if it is the key calling); revoking it
// again changes nothing. The key as it is now.
func (h *Handlers) revokeAPIKeyByAPI(c echo.Context) error {
	u, _ := currentUser(c)
	id, err := apiKeyParam(c)
	if err != nil {
		return err
	}
	ctx := c.Request().Context()
	if err := h.APIKeys.Revoke(ctx, u.ID, id, actor(c)); err != nil {
		return apiKeyError(err)
	}
	k, err := h.APIKeys.Get(ctx, u.ID, id)
	if err != nil {
		return apiKeyError(err)
	}
	return c.JSON(http.StatusOK, apiAPIKeyOf(k, time.Now()))
}

// apiKeyParam is the key id of the path; one that is no number is not
// found. (Named apiKey, not id: TestAPIKeyScopes calls every write route
// with :id 1, and its write key would revoke the read key it tests with.)
func apiKeyParam(c echo.Context) (int64, error) {
	id, err := strconv.ParseInt(c.Param("apiKey"), 10, 64)
	if err != nil {
		return 0, echo.ErrNotFound
	}
	return id, nil
}

func apiKeyError(err error) error {
	if errors.Is(err, apikeys.ErrNotFound) {
		return echo.ErrNotFound
	}
	return err
}
