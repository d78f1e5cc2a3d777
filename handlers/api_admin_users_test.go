package handlers_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/kubebyon/kubebyon/handlers/handlerstest"
	"github.com/kubebyon/kubebyon/internal/notify"
)

// adminUserJSON is an account as the admin API shows it.
type adminUserJSON struct {
	ID          int64   `json:"id"`
	Email       string  `json:"email"`
	Role        string  `json:"role"`
	Status      string  `json:"status"`
	DisabledAt  *string `json:"disabled_at"`
	HasPassword bool    `json:"has_password"`
	Sessions    []struct {
		IP string `json:"ip"`
	} `json:"sessions"`
	APIKeys []struct {
		ID     int64  `json:"id"`
		Name   string `json:"name"`
		Status string `json:"status"`
	} `json:"api_keys"`
	Clusters []struct {
		Name string `json:"name"`
	} `json:"clusters"`
}

// auditEventJSON is an event of the admin API's activity stream.
type auditEventJSON struct {
	ID         int64          `json:"id"`
	ActorID    *int64         `json:"actor_id"`
	ActorEmail string         `json:"actor_email"`
	Action     string         `json:"action"`
	TargetType string         `json:"target_type"`
	TargetID   string         `json:"target_id"`
	Details    map[string]any `json:"details"`
}

// adminPages reads every item of an admin API list under field, one a
// page (limit=1), following next; query narrows the list.
func adminPages[T any](t *testing.T, b *handlerstest.Bundle, key, path, field string, query url.Values) []T {
	t.Helper()
	var out []T
	cursor := ""
	for pages := 0; ; pages++ {
		require.Less(t, pages, 500, "the pages of %s end", path)
		q := url.Values{"limit": {"1"}}
		for k, v := range query {
			q[k] = v
		}
		if cursor != "" {
			q.Set("cursor", cursor)
		}
		r := b.APICall(t, http.MethodGet, path+"?"+q.Encode(), key, "")
		require.Equal(t, http.StatusOK, r.Status, r.Body)
		page := handlerstest.DecodeAs[map[string]json.RawMessage](t, r)
		var items []T
		require.NoError(t, json.Unmarshal(page[field], &items), r.Body)
		require.LessOrEqual(t, len(items), 1)
		out = append(out, items...)
		if page["next"] == nil {
			return out
		}
		require.NoError(t, json.Unmarshal(page["next"], &cursor))
		require.NotEmpty(t, cursor)
	}
}

// requireAPIRefusal checks an admin API call's refusal: its status, and
// the field its 422 names, if any; what names the call.
func requireAPIRefusal(t *testing.T, r handlerstest.APIResponse, status int, field, what string) {
	t.Helper()
	require.Equal(t, status, r.Status, "%s: %s", what, r.Body)
	e := handlerstest.DecodeAs[handlerstest.APIErrorJSON](t, r)
	require.NotEmpty(t, e.Error.Message, what)
	if field != "" {
		require.Contains(t, e.Error.Fields, field, what)
	}
}

// activityOf is the admin API's activity stream of an actor (their
// email), newest first, read a page at a time.
func activityOf(t *testing.T, b *handlerstest.Bundle, key, actorEmail string) []auditEventJSON {
	t.Helper()
	return adminPages[auditEventJSON](t, b, key, "/api/v1/admin/activity", "events", url.Values{"actor": {actorEmail}})
}

// requireAudited checks that the stream holds an event of action on
// target by the admin adminID, as the admin API read it.
func requireAudited(t *testing.T, events []auditEventJSON, adminID int64, action, targetType, targetID string) auditEventJSON {
	t.Helper()
	for _, e := range events {
		if e.Action == action && e.TargetType == targetType && e.TargetID == targetID {
			require.NotNil(t, e.ActorID, action)
			require.Equal(t, adminID, *e.ActorID, action)
			return e
		}
	}
	t.Fatalf("no %s of %s %s by admin %d in %+v", action, targetType, targetID, adminID, events)
	return auditEventJSON{}
}

// TestAPIAdminUsers: an admin key lists and reads every account and acts
// on them as the back office does, without the password it asks for,
// with its rules (404, 409, 422), each action audited with the admin as
// the actor.
func TestAPIAdminUsers(t *testing.T) {
	t.Parallel()
	b := handlerstest.Setup(t)
	admin, adminEmail := b.SignedUpAdmin(t, "boss")
	key := admin.CreateScopedKey("ops", "admin")
	adminID := b.UserID(t, adminEmail)
	ada, adaEmail := b.SignedUpUser(t, "ada")
	adaKey := ada.CreateKey("ada's pipeline")
	adaID := b.UserID(t, adaEmail)
	_, bobEmail := b.SignedUpUser(t, "bob")
	bobID := b.UserID(t, bobEmail)
	userPath := func(id int64, rest string) string { return fmt.Sprintf("/api/v1/admin/users/%d%s", id, rest) }
	unknown := bobID + 1000

	// The list, in id order, a page at a time, and searched.
	all := adminPages[adminUserJSON](t, b, key, "/api/v1/admin/users", "users", nil)
	var emails []string
	for _, u := range all {
		emails = append(emails, u.Email)
	}
	require.Equal(t, []string{adminEmail, adaEmail, bobEmail}, emails)
	found := adminPages[adminUserJSON](t, b, key, "/api/v1/admin/users", "users", url.Values{"q": {strings.ToUpper(adaEmail[:8])}})
	require.Len(t, found, 1)
	require.Equal(t, adaID, found[0].ID)
	for _, query := range []string{"limit=0", "limit=101", "cursor=x", "cursor=-3"} {
		requireAPIRefusal(t, b.APICall(t, http.MethodGet, "/api/v1/admin/users?"+query, key, ""), http.StatusBadRequest, "", query)
	}

	// One account, with what its back-office page shows.
	r := b.APICall(t, http.MethodGet, userPath(adaID, ""), key, "")
	require.Equal(t, http.StatusOK, r.Status, r.Body)
	u := handlerstest.DecodeAs[adminUserJSON](t, r)
	require.Equal(t, adaEmail, u.Email)
	require.Equal(t, "active", u.Status)
	require.Equal(t, "user", u.Role)
	require.True(t, u.HasPassword)
	require.NotEmpty(t, u.Sessions, "signed in")
	require.Len(t, u.APIKeys, 1)
	require.Equal(t, "active", u.APIKeys[0].Status)
	requireAPIRefusal(t, b.APICall(t, http.MethodGet, userPath(unknown, ""), key, ""), http.StatusNotFound, "", "an unknown account")

	// The actions, in turn: no password asked, the rules kept.
	steps := []struct {
		id     int64
		action string
		status int
		check  func(u adminUserJSON)
	}{
		{adaID, "disable", http.StatusOK, func(u adminUserJSON) {
			require.Equal(t, "disabled", u.Status)
			require.NotNil(t, u.DisabledAt)
			require.Empty(t, u.Sessions, "its sessions ended")
			require.Equal(t, "revoked", u.APIKeys[0].Status, "its keys revoked")
		}},
		{adaID, "disable", http.StatusConflict, nil},
		{adaID, "enable", http.StatusOK, func(u adminUserJSON) { require.Equal(t, "active", u.Status) }},
		{adaID, "enable", http.StatusConflict, nil},
		{adaID, "promote", http.StatusOK, func(u adminUserJSON) { require.Equal(t, "admin", u.Role) }},
		{adaID, "promote", http.StatusConflict, nil},
		{adaID, "demote", http.StatusOK, func(u adminUserJSON) { require.Equal(t, "user", u.Role) }},
		{adaID, "demote", http.StatusConflict, nil},
		{adminID, "disable", http.StatusUnprocessableEntity, nil},
		{adminID, "demote", http.StatusUnprocessableEntity, nil},
		{bobID, "revoke-sessions", http.StatusOK, func(u adminUserJSON) { require.Empty(t, u.Sessions) }},
		{bobID, "revoke-sessions", http.StatusConflict, nil},
		{unknown, "disable", http.StatusNotFound, nil},
		{unknown, "enable", http.StatusNotFound, nil},
		{unknown, "promote", http.StatusNotFound, nil},
		{unknown, "demote", http.StatusNotFound, nil},
		{unknown, "revoke-sessions", http.StatusNotFound, nil},
	}
	for _, s := range steps {
		r := b.APICall(t, http.MethodPost, userPath(s.id, "/"+s.action), key, "")
		if s.check == nil {
			requireAPIRefusal(t, r, s.status, "", fmt.Sprint(s.action, " ", s.id))
			continue
		}
		require.Equal(t, s.status, r.Status, "%s %d: %s", s.action, s.id, r.Body)
		s.check(handlerstest.DecodeAs[adminUserJSON](t, r))
	}
	handlerstest.RequireUnauthorized(t, b.API(t, nil, "/api/v1/me", "Bearer "+adaKey), "a disabled account's key stays revoked")
	r = b.APICall(t, http.MethodGet, userPath(adminID, ""), key, "")
	require.Equal(t, "admin", handlerstest.DecodeAs[adminUserJSON](t, r).Role, "the admin is still one")

	// One of an account's keys, revoked; another's key is not its. Ada
	// signs in again: disabling her ended her sessions.
	otherKey := b.KeyID(t, admin.CreateKey("the admin's own"))
	adaKey2 := b.SignIn(t, adaEmail, "password of ada").CreateKey("ada again")
	keyID := b.KeyID(t, adaKey2)
	handlerstest.RequireMe(t, b.API(t, nil, "/api/v1/me", "Bearer "+adaKey2), adaEmail)
	r = b.APICall(t, http.MethodDelete, userPath(adaID, fmt.Sprintf("/api-keys/%d", keyID)), key, "")
	require.Equal(t, http.StatusOK, r.Status, r.Body)
	require.Contains(t, r.Body, `"status":"revoked"`)
	handlerstest.RequireUnauthorized(t, b.API(t, nil, "/api/v1/me", "Bearer "+adaKey2))
	r = b.APICall(t, http.MethodDelete, userPath(adaID, fmt.Sprintf("/api-keys/%d", keyID)), key, "")
	require.Equal(t, http.StatusOK, r.Status, "again changes nothing: %s", r.Body)
	requireAPIRefusal(t, b.APICall(t, http.MethodDelete, userPath(adaID, fmt.Sprintf("/api-keys/%d", otherKey)), key, ""), http.StatusNotFound, "", "another's key")
	requireAPIRefusal(t, b.APICall(t, http.MethodDelete, userPath(unknown, fmt.Sprintf("/api-keys/%d", keyID)), key, ""), http.StatusNotFound, "", "an unknown account's key")

	// A password reset code, mailed once a minute at most; not to a
	// disabled account.
	r = b.APICall(t, http.MethodPost, userPath(adaID, "/password-reset"), key, "")
	require.Equal(t, http.StatusNoContent, r.Status, r.Body)
	require.Equal(t, 1, b.EmailJobs(t, adaEmail, notify.EmailPasswordReset))
	r = b.APICall(t, http.MethodPost, userPath(adaID, "/password-reset"), key, "")
	requireAPIRefusal(t, r, http.StatusTooManyRequests, "", "a second code within a minute")
	retry, err := strconv.Atoi(r.Header.Get("Retry-After"))
	require.NoError(t, err)
	require.Positive(t, retry)
	require.Equal(t, 1, b.EmailJobs(t, adaEmail, notify.EmailPasswordReset))
	require.Equal(t, http.StatusOK, b.APICall(t, http.MethodPost, userPath(bobID, "/disable"), key, "").Status)
	requireAPIRefusal(t, b.APICall(t, http.MethodPost, userPath(bobID, "/password-reset"), key, ""), http.StatusConflict, "", "a disabled account's reset")
	requireAPIRefusal(t, b.APICall(t, http.MethodPost, userPath(unknown, "/password-reset"), key, ""), http.StatusNotFound, "", "an unknown account's reset")

	// Deletion: not one's own account, nor one with clusters; no email
	// to type.
	requireAPIRefusal(t, b.APICall(t, http.MethodDelete, userPath(adminID, ""), key, ""), http.StatusUnprocessableEntity, "", "deleting oneself")
	b.InsertCluster(t, adaID, "keeps", "keeps", "v1.31.0", "nodeport", "ready")
	requireAPIRefusal(t, b.APICall(t, http.MethodDelete, userPath(adaID, ""), key, ""), http.StatusConflict, "", "deleting an account with clusters")
	require.True(t, b.UserExists(t, adaEmail))
	r = b.APICall(t, http.MethodDelete, userPath(bobID, ""), key, "")
	require.Equal(t, http.StatusNoContent, r.Status, r.Body)
	require.False(t, b.UserExists(t, bobEmail))
	requireAPIRefusal(t, b.APICall(t, http.MethodGet, userPath(bobID, ""), key, ""), http.StatusNotFound, "", "a deleted account")
	requireAPIRefusal(t, b.APICall(t, http.MethodDelete, userPath(bobID, ""), key, ""), http.StatusNotFound, "", "deleting it again")

	// Every action is in the activity stream, the admin its actor, as
	// the API reads it.
	events := activityOf(t, b, key, adminEmail)
	ada64, bob64 := strconv.FormatInt(adaID, 10), strconv.FormatInt(bobID, 10)
	for _, action := range []string{"disable", "enable", "promote", "demote", "password_reset"} {
		requireAudited(t, events, adminID, "admin.user_"+action, "user", ada64)
	}
	requireAudited(t, events, adminID, "admin.user_sessions_revoke", "user", bob64)
	deleted := requireAudited(t, events, adminID, "admin.user_delete", "user", bob64)
	require.Equal(t, bobEmail, deleted.Details["email"])
	requireAudited(t, events, adminID, "api_key.revoke", "api_key", strconv.FormatInt(keyID, 10))
	for i := 1; i < len(events); i++ {
		require.Less(t, events[i].ID, events[i-1].ID, "newest first")
	}
	filtered := adminPages[auditEventJSON](t, b, key, "/api/v1/admin/activity", "events", url.Values{"action": {"admin.user_promote"}})
	require.Len(t, filtered, 1)
	require.Equal(t, adminEmail, filtered[0].ActorEmail)
	requireAPIRefusal(t, b.APICall(t, http.MethodGet, "/api/v1/admin/activity?cursor=x", key, ""), http.StatusBadRequest, "", "a cursor the stream did not give")
}
