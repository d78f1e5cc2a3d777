package handlers_test

import (
	"net/http"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/kubebyon/kubebyon/handlers"
	"github.com/kubebyon/kubebyon/handlers/handlerstest"
)

// TestAdminFooterShowsVersion: the admin area's footer says which version
// runs (the one the server was given); the users' pages do not.
func TestAdminFooterShowsVersion(t *testing.T) {
	t.Parallel()
	const version = "v9.8.7-test"
	b := handlerstest.Setup(t, func(d *handlers.Deps) { d.Version = version })
	admin, _ := b.SignedUpAdmin(t, "footer-version-admin")
	user, _ := b.SignedUpUser(t, "footer-version-user")

	for _, path := range []string{"/admin/users", "/admin/settings", "/admin/jobs"} {
		code, body := admin.Get(path)
		require.Equal(t, http.StatusOK, code, path)
		require.Contains(t, body, `<small data-testid="footer-version">KubeBYON `+version+`</small>`, path)
	}

	admin.HTTP.Transport = handlerstest.AcceptLanguage{Lang: "zh-CN", Next: admin.HTTP.Transport}
	_, body := admin.Get("/admin/users")
	require.Contains(t, body, `<small data-testid="footer-version">KubeBYON 版本 `+version+`</small>`)

	for _, c := range []*handlerstest.Client{admin, user} {
		code, body := c.Get("/clusters")
		require.Equal(t, http.StatusOK, code)
		require.NotContains(t, body, `data-testid="footer-version"`)
		require.NotContains(t, body, version)
	}
	code, body := user.Get("/admin/users")
	require.Equal(t, http.StatusNotFound, code)
	require.NotContains(t, body, version)
}
