package handlers_test

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/kubebyon/kubebyon/handlers/handlerstest"
)

// TestAPIJSONBodies: every body goes through one reader that takes only
// application/json, each field once, only known fields, and text that can
// be stored.
func TestAPIJSONBodies(t *testing.T) {
	t.Parallel()
	b := handlerstest.Setup(t)
	c, _ := b.SignedUpUser(t, "jsonbodies")
	key := c.CreateKey("json")

	tests := []struct {
		name, contentType, body string
		status                  int
		code                    string
		fields                  map[string]string
	}{
		{"text/plain", "text/plain", `{"name":"demo"}`, http.StatusUnsupportedMediaType, "unsupported_media_type", nil},
		{"no content type", "", `{"name":"demo"}`, http.StatusUnsupportedMediaType, "unsupported_media_type", nil},
		{"form", "application/x-www-form-urlencoded", `name=demo`, http.StatusUnsupportedMediaType, "unsupported_media_type", nil},
		{"duplicate key", "application/json", `{"name":"demo","name":"other"}`, http.StatusBadRequest, "bad_request", nil},
		{"unknown field", "application/json", `{"name":"demo","owner":1}`, http.StatusBadRequest, "bad_request", nil},
		{"differently cased field", "application/json", `{"Name":"demo"}`, http.StatusBadRequest, "bad_request", nil},
		{"two documents", "application/json", `{"name":"demo"} {}`, http.StatusBadRequest, "bad_request", nil},
		{"invalid utf-8", "application/json", "{\"name\":\"de\xffmo\"}", http.StatusBadRequest, "bad_request", nil},
		{"nul", "application/json; charset=utf-8", `{"name":"demo","description":"a\u0000b"}`, http.StatusUnprocessableEntity, "invalid",
			map[string]string{"description": "Use text without NUL characters or invalid UTF-8."}},
		// A JSON body that is fine reaches the cluster service, which says
		// that no host cluster is connected.
		{"accepted", "application/json; charset=utf-8", `{"name":"demo"}`, http.StatusUnprocessableEntity, "not_configured", nil},
	}
	for _, tc := range tests {
		req, err := http.NewRequest(http.MethodPost, b.Server.URL+"/api/v1/clusters", strings.NewReader(tc.body))
		require.NoError(t, err)
		req.Header.Set("Authorization", "Bearer "+key)
		if tc.contentType != "" {
			req.Header.Set("Content-Type", tc.contentType)
		}
		resp, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		body := handlerstest.ReadBody(t, resp)
		resp.Body.Close()
		require.Equal(t, tc.status, resp.StatusCode, "%s: %s", tc.name, body)
		require.Equal(t, "application/json", resp.Header.Get("Content-Type"), tc.name)
		var e handlerstest.APIErrorJSON
		require.NoError(t, json.Unmarshal([]byte(body), &e), tc.name)
		require.Equal(t, tc.code, e.Error.Code, tc.name)
		require.NotEmpty(t, e.Error.Message, tc.name)
		require.NotContains(t, e.Error.Message, "ErrAPI", tc.name)
		require.Equal(t, tc.fields, e.Error.Fields, tc.name)
	}
}
