package handlers_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/kubebyon/kubebyon/handlers"
	"github.com/kubebyon/kubebyon/handlers/handlerstest"
	"github.com/kubebyon/kubebyon/internal/settings"
	"github.com/kubebyon/kubebyon/queries"
)

// TestLoopbackBaseURLWarning: with a base URL only the platform's machine
// reaches, the admin pages and the join tokens page say so and what to
// set; with a public one they say nothing.
func TestLoopbackBaseURLWarning(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		baseURL string
		warned  bool
	}{
		{baseURL: "http://localhost:8080", warned: true},
		{baseURL: "http://127.0.0.1:8080", warned: true},
		{baseURL: "http://[::1]:8080", warned: true},
		{baseURL: "http://kubebyon.example.com"},
	} {
		t.Run(tt.baseURL, func(t *testing.T) {
			t.Parallel()
			b := handlerstest.Setup(t, func(d *handlers.Deps) { d.BaseURL = tt.baseURL })
			admin, _ := b.SignedUpAdmin(t, "admin")
			b.ConnectHost(t)
			cl := b.NewCluster(t, admin, "demo")
			user, _ := b.SignedUpUser(t, "user")

			for _, path := range []string{"/", "/admin/users", "/admin/activity", "/admin/settings", fmt.Sprintf("/clusters/%d/tokens", cl.ID)} {
				_, page := admin.Get(path)
				if !tt.warned {
					require.NotContains(t, page, `data-testid="base-url-warning"`, path)
					continue
				}
				require.Contains(t, page, `data-testid="base-url-warning"`, path)
				require.Contains(t, page, "The platform&#39;s address is "+tt.baseURL, path)
				require.Contains(t, page, "KUBEBYON_BASE_URL", path)
			}
			_, page := user.Get("/")
			require.NotContains(t, page, `data-testid="base-url-warning"`, "a user's dashboard is no place for the admin's settings")
		})
	}
}

// TestNoLicenseNotices: without a vCluster Platform connection the create
// page and the admin settings say that private nodes need its license;
// once one is set, they do not.
func TestNoLicenseNotices(t *testing.T) {
	t.Parallel()
	b := handlerstest.Setup(t)
	ctx := context.Background()
	admin, _ := b.SignedUpAdmin(t, "admin")
	user, _ := b.SignedUpUser(t, "user")

	_, page := user.Get("/clusters/new")
	require.Contains(t, page, `data-testid="cluster-no-license"`)
	require.Contains(t, page, "need a vCluster Platform license, and this platform has none configured")
	_, page = admin.Get("/admin/settings")
	require.Contains(t, page, `data-testid="settings-no-license"`)
	require.Contains(t, page, "needs the license of a vCluster Platform connection, and none is configured")

	rt, err := settings.Load(ctx, queries.New(b.Pool), b.Box)
	require.NoError(t, err)
	rt.PlatformHost, rt.PlatformAccessKey, rt.PlatformProject = "platform.example.com", "access-key", "default"
	require.NoError(t, settings.Save(ctx, queries.New(b.Pool), b.Box, rt))
	_, page = user.Get("/clusters/new")
	require.NotContains(t, page, `data-testid="cluster-no-license"`)
	_, page = admin.Get("/admin/settings")
	require.NotContains(t, page, `data-testid="settings-no-license"`)
	require.True(t, strings.Contains(page, `data-testid="settings-license-note"`), "the page still explains the license")
}
