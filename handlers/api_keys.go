package handlers

import (
	"crypto/rand"
	"errors"
	"net/http"
	"strconv"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/kubebyon/kubebyon/internal/adminauth"
	"github.com/kubebyon/kubebyon/internal/apikeys"
	"github.com/kubebyon/kubebyon/queries"
	"github.com/kubebyon/kubebyon/views"
)

// sessionAPIKeyForm holds the id of the create form last shown: a form
// posts once. Sending it again (reload, back button) would otherwise create
// a second key.
const sessionAPIKeyForm = "api_key_form"

func (h *Handlers) showAPIKeysPage(c echo.Context) error {
	f := views.NewForm()
	f.Values["expiry"] = apikeys.Expiry90Days
	f.Values["scope"] = apikeys.ScopeRead
	h.viewAsAPICall(c, "listAPIKeys", nil)
	return h.renderAPIKeysPage(c, http.StatusOK, f)
}

// renderAPIKeysPage shows the form f, with a new form id, above the
// signed-in user's keys.
func (h *Handlers) renderAPIKeysPage(c echo.Context, status int, f views.Form) error {
	u, _ := currentUser(c)
	f.Values["form_id"] = rand.Text()
	h.sessions.Put(c.Request().Context(), sessionAPIKeyForm, f.Values["form_id"])
	keys, err := h.APIKeys.List(c.Request().Context(), u.ID)
	if err != nil {
		return err
	}
	now := time.Now()
	rows := make([]views.APIKey, len(keys))
	for i, k := range keys {
		rows[i] = apiKeyView(k, now)
	}
	return render(c, status, views.APIKeysPage(f, rows, u.Role == adminauth.RoleAdmin))
}

// createAPIKey shows the new key's value in the response itself, never
// redirecting: the value is not stored anywhere it could be shown from
// again, the session included.
func (h *Handlers) createAPIKey(c echo.Context) error {
	who, err := h.acting(c)
	if err != nil {
		return err
	}
	formID := h.sessions.PopString(c.Request().Context(), sessionAPIKeyForm)
	if formID == "" || c.FormValue("form_id") != formID {
		h.flashError(c, "FlashAPIKeyFormUsed")
		return redirect(c, "/settings/api-keys")
	}
	f := formFrom(c, "name", "scope", "expiry", "expires_on")
	expiry := apikeys.Expiry{Choice: f.Value("expiry"), Date: f.Value("expires_on")}
	created, err := h.APIKeys.Create(c.Request().Context(), who, f.Value("name"), f.Value("scope"), expiry, actor(c))
	var fe apikeys.FieldErrors
	if errors.As(err, &fe) {
		for k, v := range fe {
			f.Errors[k] = v
		}
		return h.renderAPIKeysPage(c, http.StatusUnprocessableEntity, f)
	}
	if err != nil {
		return err
	}
	c.Response().Header().Set("Cache-Control", "no-store")
	return render(c, http.StatusOK, views.APIKeyCreatedPage(created.Value, apiKeyView(created.Key, time.Now()), h.BaseURL))
}

func (h *Handlers) showRevokeAPIKeyPage(c echo.Context) error {
	k, err := h.ownAPIKey(c)
	if err != nil {
		return err
	}
	return render(c, http.StatusOK, views.APIKeyRevokePage(apiKeyView(k, time.Now())))
}

func (h *Handlers) revokeAPIKey(c echo.Context) error {
	u, _ := currentUser(c)
	id, ok := keyIDParam(c)
	if !ok {
		return echo.ErrNotFound
	}
	err := h.APIKeys.Revoke(c.Request().Context(), u.ID, id, actor(c))
	if errors.Is(err, apikeys.ErrNotFound) {
		return echo.ErrNotFound
	}
	if err != nil {
		return err
	}
	h.flash(c, "FlashAPIKeyRevoked")
	return redirect(c, "/settings/api-keys")
}

// ownAPIKey is the signed-in user's key named in the path; anyone else's
// is not found.
func (h *Handlers) ownAPIKey(c echo.Context) (queries.ApiKey, error) {
	u, _ := currentUser(c)
	id, ok := keyIDParam(c)
	if !ok {
		return queries.ApiKey{}, echo.ErrNotFound
	}
	k, err := h.APIKeys.Get(c.Request().Context(), u.ID, id)
	if errors.Is(err, apikeys.ErrNotFound) {
		return k, echo.ErrNotFound
	}
	return k, err
}

func keyIDParam(c echo.Context) (int64, bool) {
	id, err := strconv.ParseInt(c.Param("id"), 10, 64)
	return id, err == nil
}

func apiKeyView(k queries.ApiKey, now time.Time) views.APIKey {
	return views.APIKey{
		ID:         k.ID,
		Name:       k.Name,
		Prefix:     k.Prefix,
		Scope:      k.Scope,
		Status:     apikeys.Status(k, now),
		CreatedAt:  k.CreatedAt.Time,
		LastUsedAt: k.LastUsedAt.Time,
		LastUsedIP: k.LastUsedIp,
		ExpiresAt:  k.ExpiresAt.Time,
	}
}
