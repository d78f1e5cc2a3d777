package handlers_test

import (
	"bytes"
	"context"
	"fmt"
	"image/color"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/kubebyon/kubebyon/handlers/handlerstest"
)

// requireInvalid checks a 422 that names field, and nothing of the rest.
func requireInvalid(t *testing.T, r handlerstest.APIResponse, fields ...string) {
	t.Helper()
	require.Equal(t, http.StatusUnprocessableEntity, r.Status, r.Body)
	got := handlerstest.DecodeAs[handlerstest.APIErrorJSON](t, r).Error.Fields
	require.Len(t, got, len(fields), r.Body)
	for _, f := range fields {
		require.Contains(t, got, f, r.Body)
	}
}

// sendBody calls the API with a body of a content type of its own.
func sendBody(t *testing.T, b *handlerstest.Bundle, method, path, key, contentType string, body []byte) handlerstest.APIResponse {
	t.Helper()
	req, err := http.NewRequest(method, b.Server.URL+path, bytes.NewReader(body))
	require.NoError(t, err)
	req.Header.Set("Authorization", "Bearer "+key)
	req.Header.Set("Content-Type", contentType)
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	return handlerstest.APIResponse{Status: resp.StatusCode, Header: resp.Header, Body: handlerstest.ReadBody(t, resp)}
}

// readPages reads a list of the API from path (a first page with its
// ?limit=), following each page's next to the last: the pages, in order.
func readPages(t *testing.T, b *handlerstest.Bundle, key, path string) []handlerstest.APIResponse {
	t.Helper()
	var pages []handlerstest.APIResponse
	for cursor := ""; ; {
		r := b.APICall(t, http.MethodGet, path+cursor, key, "")
		require.Equal(t, http.StatusOK, r.Status, r.Body)
		pages = append(pages, r)
		next, _ := handlerstest.DecodeAs[map[string]any](t, r)["next"].(string)
		if next == "" {
			return pages
		}
		cursor = "&cursor=" + url.QueryEscape(next)
	}
}

// TestAPIProfile: PATCH /api/v1/me changes the profile form's fields, those
// given only; the console shows the change, and it is audited.
func TestAPIProfile(t *testing.T) {
	t.Parallel()
	b := handlerstest.Setup(t)
	c, email := b.SignedUpUser(t, "profiled")
	key := c.CreateScopedKey("profile", "write")

	r := b.APICall(t, http.MethodPatch, "/api/v1/me", key, `{"name":"  Ada Lovelace "}`)
	require.Equal(t, http.StatusOK, r.Status, r.Body)
	me := handlerstest.DecodeAs[map[string]any](t, r)
	require.Equal(t, "Ada Lovelace", me["name"], "trimmed")
	require.Equal(t, email, me["email"])
	require.Equal(t, "", me["language"], "the language is kept")

	r = b.APICall(t, http.MethodPatch, "/api/v1/me", key, `{"language":"zh-CN"}`)
	require.Equal(t, http.StatusOK, r.Status, r.Body)
	me = handlerstest.DecodeAs[map[string]any](t, r)
	require.Equal(t, "Ada Lovelace", me["name"], "the name is kept")
	require.Equal(t, "zh-CN", me["language"])
	_, page := c.Get(handlerstest.ProfilePage)
	require.Contains(t, page, `value="Ada Lovelace"`)
	require.Contains(t, page, "个人资料", "the console follows the language chosen")
	require.Equal(t, 2, countRows(t, b, "SELECT count(*) FROM audit_events WHERE action = 'user.update_profile' AND actor_email = $1", email))

	tests := []struct {
		name, body string
		status     int
		fields     []string
	}{
		{"empty name", `{"name":" "}`, http.StatusUnprocessableEntity, []string{"name"}},
		{"unknown language", `{"language":"de"}`, http.StatusUnprocessableEntity, []string{"language"}},
		{"both", `{"name":"","language":"EN"}`, http.StatusUnprocessableEntity, []string{"name", "language"}},
		{"unknown field", `{"email":"x@example.com"}`, http.StatusBadRequest, nil},
		{"not an object", `"Ada"`, http.StatusBadRequest, nil},
	}
	for _, tt := range tests {
		r := b.APICall(t, http.MethodPatch, "/api/v1/me", key, tt.body)
		if tt.fields != nil {
			requireInvalid(t, r, tt.fields...)
			continue
		}
		require.Equal(t, tt.status, r.Status, "%s: %s", tt.name, r.Body)
	}
	handlerstest.RequireMe(t, b.API(t, nil, "/api/v1/me", "Bearer "+key), email)
}

// TestAPIPassword: the password changes with the current one, the
// console's sessions end, and the owner is told; a wrong current password
// counts against the console's limit, which the API shares.
func TestAPIPassword(t *testing.T) {
	t.Parallel()
	b := handlerstest.Setup(t)
	c, email := b.SignedUpUser(t, "passworded")
	key := c.CreateScopedKey("password", "write")
	const path = "/api/v1/me/password"

	requireInvalid(t, b.APICall(t, http.MethodPut, path, key, `{"current_password":"a guess","new_password":"a long new password"}`), "current_password")
	requireInvalid(t, b.APICall(t, http.MethodPut, path, key, `{"current_password":"password of passworded","new_password":"short"}`), "new_password")
	r := b.APICall(t, http.MethodPut, path, key, `{"current_password":"password of passworded","new_password":"a long new password"}`)
	require.Equal(t, http.StatusNoContent, r.Status, r.Body)
	code, _ := c.Get(handlerstest.ProfilePage)
	require.Equal(t, http.StatusSeeOther, code, "the console's session ended")
	c = b.SignIn(t, email, "a long new password")
	b.WaitMail(t, email, "Your KubeBYON password was changed")
	require.Contains(t, b.Audits(t, b.UserID(t, email)), "user.change_password")
	handlerstest.RequireMe(t, b.API(t, nil, "/api/v1/me", "Bearer "+key), email)

	// Ten tries in 15 minutes, the console's and the API's together.
	for range 3 {
		resp := c.Post(handlerstest.ProfilePage, "/settings/password", url.Values{"current_password": {"a guess"}, "new_password": {"another long password"}})
		require.Equal(t, http.StatusUnprocessableEntity, resp.StatusCode)
	}
	for range 10 - 3 - 3 {
		requireInvalid(t, b.APICall(t, http.MethodPut, path, key, `{"current_password":"a guess","new_password":"another long password"}`), "current_password")
	}
	r = b.APICall(t, http.MethodPut, path, key, `{"current_password":"a long new password","new_password":"another long password"}`)
	require.Equal(t, http.StatusTooManyRequests, r.Status, r.Body)
	require.NotEmpty(t, r.Header.Get("Retry-After"))
	require.Equal(t, "too_many_requests", handlerstest.DecodeAs[handlerstest.APIErrorJSON](t, r).Error.Code)
	b.SignIn(t, email, "a long new password")

	// Asked for, the keys are revoked too, this one included.
	other, otherEmail := b.SignedUpUser(t, "revoker")
	otherKey := other.CreateScopedKey("revoked with the password", "write")
	r = b.APICall(t, http.MethodPut, path, otherKey, `{"current_password":"password of revoker","new_password":"a long new password","revoke_api_keys":true}`)
	require.Equal(t, http.StatusNoContent, r.Status, r.Body)
	handlerstest.RequireUnauthorized(t, b.API(t, nil, "/api/v1/me", "Bearer "+otherKey))
	b.SignIn(t, otherEmail, "a long new password")
}

// TestAPIEmailChange: a code goes to the new address and moves the
// account there once confirmed; it can be resent (not within a minute)
// and cancelled; bad input is 422 on its field.
func TestAPIEmailChange(t *testing.T) {
	t.Parallel()
	b := handlerstest.Setup(t)
	ctx := context.Background()
	c, oldEmail := b.SignedUpUser(t, "mover")
	_, takenEmail := b.SignedUpUser(t, "taken")
	key := c.CreateScopedKey("email", "write")
	id := b.UserID(t, oldEmail)
	newEmail := handlerstest.UniqueEmail("moved")
	const path = "/api/v1/me/email-change"

	r := b.APICall(t, http.MethodGet, path, key, "")
	require.Equal(t, http.StatusNotFound, r.Status, "no change waits")
	r = b.APICall(t, http.MethodPost, path+"/resend", key, "")
	require.Equal(t, http.StatusNotFound, r.Status, r.Body)

	requireInvalid(t, b.APICall(t, http.MethodPost, path, key, `{"new_email":"not-an-address","current_password":"password of mover"}`), "new_email")
	requireInvalid(t, b.APICall(t, http.MethodPost, path, key, `{"new_email":"`+takenEmail+`","current_password":"password of mover"}`), "new_email")
	requireInvalid(t, b.APICall(t, http.MethodPost, path, key, `{"new_email":"`+newEmail+`","current_password":"a guess"}`), "current_password")
	require.Zero(t, b.EmailJobs(t, newEmail, "EmailChangeCode"))

	r = b.APICall(t, http.MethodPost, path, key, `{"new_email":"`+newEmail+`","current_password":"password of mover"}`)
	require.Equal(t, http.StatusCreated, r.Status, r.Body)
	require.JSONEq(t, `{"new_email":"`+newEmail+`"}`, r.Body)
	require.Equal(t, path, r.Header.Get("Location"))
	first := handlerstest.CodeFrom(t, b.WaitMessages(t, newEmail, 1)[0])
	r = b.APICall(t, http.MethodGet, path, key, "")
	require.Equal(t, http.StatusOK, r.Status, r.Body)
	require.JSONEq(t, `{"new_email":"`+newEmail+`"}`, r.Body)
	_, page := c.Get(handlerstest.ProfilePage)
	require.Contains(t, page, `data-testid="pending-email"`, "the console shows it waiting")

	r = b.APICall(t, http.MethodPost, path+"/resend", key, "")
	require.Equal(t, http.StatusTooManyRequests, r.Status, "one code a minute")
	require.Contains(t, r.Body, "less than a minute ago")

	requireInvalid(t, b.APICall(t, http.MethodPost, path+"/confirm", key, `{"code":"12ab"}`), "code")
	wrong := "000000"
	if first == wrong {
		wrong = "111111"
	}
	r = b.APICall(t, http.MethodPost, path+"/confirm", key, `{"code":"`+wrong+`"}`)
	requireInvalid(t, r, "code")
	require.Contains(t, r.Body, "That code is not right.")

	_, err := b.Pool.Exec(ctx, "UPDATE email_codes SET created_at = now() - interval '61 seconds' WHERE user_id = $1", id)
	require.NoError(t, err)
	r = b.APICall(t, http.MethodPost, path+"/resend", key, "")
	require.Equal(t, http.StatusNoContent, r.Status, r.Body)
	second := handlerstest.CodeFrom(t, b.WaitMessages(t, newEmail, 2)[1])

	r = b.APICall(t, http.MethodPost, path+"/confirm", key, `{"code":"`+second+`"}`)
	require.Equal(t, http.StatusOK, r.Status, r.Body)
	require.Equal(t, strings.ToLower(newEmail), handlerstest.DecodeAs[map[string]any](t, r)["email"])
	require.Equal(t, id, b.UserID(t, newEmail))
	b.WaitMail(t, oldEmail, "Your KubeBYON email address was changed")
	r = b.APICall(t, http.MethodGet, path, key, "")
	require.Equal(t, http.StatusNotFound, r.Status, "nothing waits any more")
	requireInvalid(t, b.APICall(t, http.MethodPost, path+"/confirm", key, `{"code":"`+second+`"}`), "code")
	require.Subset(t, b.Audits(t, id), []string{"user.change_email_request", "user.change_email"})

	// Cancelled, the address stays.
	_, err = b.Pool.Exec(ctx, "UPDATE email_codes SET created_at = now() - interval '61 seconds' WHERE user_id = $1", id)
	require.NoError(t, err)
	other := handlerstest.UniqueEmail("elsewhere")
	r = b.APICall(t, http.MethodPost, path, key, `{"new_email":"`+other+`","current_password":"password of mover"}`)
	require.Equal(t, http.StatusCreated, r.Status, r.Body)
	r = b.APICall(t, http.MethodDelete, path, key, "")
	require.Equal(t, http.StatusNoContent, r.Status, r.Body)
	r = b.APICall(t, http.MethodGet, path, key, "")
	require.Equal(t, http.StatusNotFound, r.Status)
	require.Contains(t, b.Audits(t, id), "user.change_email_cancel")
	require.Equal(t, id, b.UserID(t, newEmail))
}

// TestAPIAvatar: the picture is the request body, checked as the console's
// upload; the console then serves it; removed, the initials show again.
func TestAPIAvatar(t *testing.T) {
	t.Parallel()
	b := handlerstest.Setup(t)
	c, email := b.SignedUpUser(t, "pictured")
	key := c.CreateScopedKey("avatar", "write")
	id := b.UserID(t, email)
	good := handlerstest.SolidPNG(t, 64, 64, color.NRGBA{0, 120, 200, 255})
	const path = "/api/v1/me/avatar"

	tests := []struct {
		name, contentType string
		data              []byte
		status            int
	}{
		{"not a picture's type", "text/plain", good, http.StatusUnsupportedMediaType},
		{"JSON", "application/json", []byte(`{}`), http.StatusUnsupportedMediaType},
		{"no body", "image/png", nil, http.StatusUnprocessableEntity},
		{"not a picture", "image/png", []byte("just some notes\n"), http.StatusUnprocessableEntity},
		{"too many pixels", "image/png", bombPNG(), http.StatusUnprocessableEntity},
		{"over 2 MB", "image/png", append(append([]byte{}, good...), make([]byte, 2<<20)...), http.StatusUnprocessableEntity},
		{"over the body limit", "image/png", make([]byte, 3<<20), http.StatusRequestEntityTooLarge},
	}
	for _, tt := range tests {
		r := sendBody(t, b, http.MethodPut, path, key, tt.contentType, tt.data)
		if tt.status == http.StatusUnprocessableEntity {
			requireInvalid(t, r, "avatar")
			continue
		}
		require.Equal(t, tt.status, r.Status, "%s: %s", tt.name, r.Body)
	}
	require.Zero(t, countRows(t, b, "SELECT count(*) FROM user_avatars"))

	r := sendBody(t, b, http.MethodPut, path, key, "image/png", good)
	require.Equal(t, http.StatusNoContent, r.Status, r.Body)
	resp, _ := c.Fetch(fmt.Sprintf("/avatars/%d", id), nil)
	require.Equal(t, http.StatusOK, resp.StatusCode)
	require.Equal(t, "image/png", resp.Header.Get("Content-Type"), "the console shows the picture")

	r = b.APICall(t, http.MethodDelete, path, key, "")
	require.Equal(t, http.StatusNoContent, r.Status, r.Body)
	resp, _ = c.Fetch(fmt.Sprintf("/avatars/%d", id), nil)
	require.Equal(t, "image/svg+xml", resp.Header.Get("Content-Type"), "the initials again")
	require.Subset(t, b.Audits(t, id), []string{"user.update_avatar", "user.remove_avatar"})
}

// TestAPIIdentities: the sign-in methods read a page at a time; one is
// unlinked, but not the only way left to sign in.
func TestAPIIdentities(t *testing.T) {
	t.Parallel()
	b := handlerstest.Setup(t)
	ctx := context.Background()
	c, email := b.SignedUpUser(t, "linked")
	key := c.CreateScopedKey("identities", "write")
	id := b.UserID(t, email)
	var linked []int64
	for _, p := range []string{"github", "google"} {
		var i int64
		require.NoError(t, b.Pool.QueryRow(ctx, "INSERT INTO oauth_identities (user_id, provider, subject, email) VALUES ($1, $2, $3, $4) RETURNING id",
			id, p, "subject-"+p, p+"-"+email).Scan(&i))
		linked = append(linked, i)
	}

	type identitiesJSON struct {
		PasswordSet bool `json:"password_set"`
		Identities  []struct {
			ID       int64  `json:"id"`
			Provider string `json:"provider"`
			Email    string `json:"email"`
		} `json:"identities"`
	}
	pages := readPages(t, b, key, "/api/v1/me/identities?limit=1")
	require.Len(t, pages, 2)
	first := handlerstest.DecodeAs[identitiesJSON](t, pages[0])
	require.True(t, first.PasswordSet)
	require.Len(t, first.Identities, 1)
	require.Equal(t, "google", first.Identities[0].Provider, "newest first")
	require.Equal(t, "google-"+email, first.Identities[0].Email)
	last := handlerstest.DecodeAs[identitiesJSON](t, pages[1])
	require.Len(t, last.Identities, 1)
	require.Equal(t, linked[0], last.Identities[0].ID)
	r := b.APICall(t, http.MethodGet, "/api/v1/me/identities?cursor=x", key, "")
	require.Equal(t, http.StatusBadRequest, r.Status, r.Body)

	r = b.APICall(t, http.MethodDelete, fmt.Sprintf("/api/v1/me/identities/%d", linked[1]), key, "")
	require.Equal(t, http.StatusNoContent, r.Status, r.Body)
	require.Contains(t, b.Audits(t, id), "user.unlink_identity")
	for _, gone := range []string{fmt.Sprint(linked[1]), "x"} {
		r = b.APICall(t, http.MethodDelete, "/api/v1/me/identities/"+gone, key, "")
		require.Equal(t, http.StatusNotFound, r.Status, gone)
	}

	// Without a password, the last identity stays.
	_, err := b.Pool.Exec(ctx, "UPDATE users SET password_hash = NULL WHERE id = $1", id)
	require.NoError(t, err)
	r = b.APICall(t, http.MethodDelete, fmt.Sprintf("/api/v1/me/identities/%d", linked[0]), key, "")
	require.Equal(t, http.StatusConflict, r.Status, r.Body)
	require.Contains(t, r.Body, "only way to sign in")
	r = b.APICall(t, http.MethodGet, "/api/v1/me/identities", key, "")
	left := handlerstest.DecodeAs[identitiesJSON](t, r)
	require.False(t, left.PasswordSet)
	require.Len(t, left.Identities, 1)
}
