package handlers_test

import (
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/kubebyon/kubebyon/handlers/handlerstest"
)

// TestHomePageLanguage checks that Accept-Language picks the translation.
func TestHomePageLanguage(t *testing.T) {
	t.Parallel()
	b := handlerstest.Setup(t)
	tests := []struct {
		accept   string
		wantLang string
		wantText string
	}{
		{"", "en", "Kubernetes control planes for the machines you already have"},
		{"zh-CN,zh;q=0.9,en;q=0.8", "zh-CN", "为您已有的机器提供 Kubernetes 控制平面"},
		{"zh", "zh-CN", "创建集群"},
		{"fr-FR,fr;q=0.9", "en", "Create a cluster"},
		{"en-GB", "en", "Create a cluster"},
	}
	for _, tt := range tests {
		t.Run(tt.accept, func(t *testing.T) {
			t.Parallel()
			req, err := http.NewRequest(http.MethodGet, b.Server.URL+"/", nil)
			require.NoError(t, err)
			if tt.accept != "" {
				req.Header.Set("Accept-Language", tt.accept)
			}
			resp, err := http.DefaultClient.Do(req)
			require.NoError(t, err)
			defer resp.Body.Close()
			body, err := io.ReadAll(resp.Body)
			require.NoError(t, err)
			require.Equal(t, http.StatusOK, resp.StatusCode)
			require.Contains(t, string(body), `<html lang="`+tt.wantLang+`">`)
			require.Contains(t, string(body), tt.wantText)
		})
	}
}

// TestStaticAssets checks that the npm-built files are served from the
// binary with caching headers.
func TestStaticAssets(t *testing.T) {
	t.Parallel()
	b := handlerstest.Setup(t)
	for _, path := range []string{"/static/dist/htmx.min.js", "/static/dist/pico.min.css", "/static/app.css"} {
		resp, err := http.Get(b.Server.URL + path)
		require.NoError(t, err)
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		require.Equal(t, http.StatusOK, resp.StatusCode, path)
		require.NotEmpty(t, body, path)
		require.Equal(t, "public, max-age=3600", resp.Header.Get("Cache-Control"), path)
	}
}

// TestErrors checks the styled 404, the JSON API error and the body limit.
func TestErrors(t *testing.T) {
	t.Parallel()
	b := handlerstest.Setup(t)

	resp, err := http.Get(b.Server.URL + "/no/such/page")
	require.NoError(t, err)
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	require.Equal(t, http.StatusNotFound, resp.StatusCode)
	require.Contains(t, string(body), `data-testid="error-page"`)
	require.Contains(t, string(body), "Page not found")

	resp, err = http.Get(b.Server.URL + "/api/v1/nothing")
	require.NoError(t, err)
	body, _ = io.ReadAll(resp.Body)
	resp.Body.Close()
	require.Equal(t, http.StatusNotFound, resp.StatusCode)
	require.Equal(t, "application/json", resp.Header.Get("Content-Type"))
	require.JSONEq(t, `{"error":{"code":"not_found","message":"Not found"}}`, string(body))

	req, err := http.NewRequest(http.MethodGet, b.Server.URL+"/api/v1/nothing", nil)
	require.NoError(t, err)
	req.Header.Set("Accept-Language", "zh-CN")
	resp, err = http.DefaultClient.Do(req)
	require.NoError(t, err)
	body, _ = io.ReadAll(resp.Body)
	resp.Body.Close()
	require.JSONEq(t, `{"error":{"code":"not_found","message":"未找到"}}`, string(body), "in the caller's language")

	resp, err = http.Post(b.Server.URL+"/", "application/octet-stream", strings.NewReader(strings.Repeat("x", 2<<20)))
	require.NoError(t, err)
	resp.Body.Close()
	require.Equal(t, http.StatusRequestEntityTooLarge, resp.StatusCode)
	require.NotEmpty(t, resp.Header.Get("X-Request-Id"))
}
