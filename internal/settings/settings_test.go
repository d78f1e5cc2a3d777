package settings_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/kubebyon/kubebyon/internal/settings"
)

func TestSelfContained(t *testing.T) {
	t.Parallel()
	const head = "apiVersion: v1\nkind: Config\ncurrent-context: c\ncontexts: [{name: c, context: {cluster: c, user: u}}]\n"
	tests := []struct {
		name, kubeconfig string
		want             bool
	}{
		{"inline", head + "clusters: [{name: c, cluster: {server: https://h, certificate-authority-data: Y2E=}}]\nusers: [{name: u, user: {token: t}}]\n", true},
		{"exec", head + "clusters: [{name: c, cluster: {server: https://h}}]\nusers: [{name: u, user: {exec: {apiVersion: client.authentication.k8s.io/v1, command: sh}}}]\n", false},
		{"auth provider", head + "clusters: [{name: c, cluster: {server: https://h}}]\nusers: [{name: u, user: {auth-provider: {name: oidc}}}]\n", false},
		{"token file", head + "clusters: [{name: c, cluster: {server: https://h}}]\nusers: [{name: u, user: {tokenFile: /etc/shadow}}]\n", false},
		{"client key file", head + "clusters: [{name: c, cluster: {server: https://h}}]\nusers: [{name: u, user: {client-key: /root/key}}]\n", false},
		{"CA file", head + "clusters: [{name: c, cluster: {server: https://h, certificate-authority: /etc/ca}}]\nusers: [{name: u, user: {token: t}}]\n", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			require.Equal(t, tt.want, settings.SelfContained([]byte(tt.kubeconfig)))
			rt := settings.Defaults()
			rt.HostKubeconfig = tt.kubeconfig
			err := rt.Validate()
			if tt.want {
				if err != nil {
					var fe settings.FieldErrors
					require.ErrorAs(t, err, &fe)
					require.NotContains(t, fe, "hostKubeconfig")
				}
				return
			}
			var fe settings.FieldErrors
			require.ErrorAs(t, err, &fe)
			require.Equal(t, "ErrAdminSettingsKubeconfigExternal", fe["hostKubeconfig"], "stored settings refuse it too")
		})
	}
}

// TestConsoleRouteSettings: the console's host name goes with its HTTPS
// server, outside the API base domain.
func TestConsoleRouteSettings(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		name, host, backend string
		want                settings.FieldErrors
	}{
		{"unset", "", "", nil},
		{"both", "kubebyon.example.com", "127.0.0.1:8444", nil},
		{"backend by name", "kubebyon.example.com", "console.internal:443", nil},
		{"no backend", "kubebyon.example.com", "", settings.FieldErrors{"consoleBackend": "ErrSettingConsoleBackend"}},
		{"bad port", "kubebyon.example.com", "127.0.0.1:0", settings.FieldErrors{"consoleBackend": "ErrSettingConsoleBackend"}},
		{"under the API domain", "console.k8s.example.com", "127.0.0.1:8444", settings.FieldErrors{"consoleHost": "ErrSettingConsoleHostUnderAPI"}},
		{"not a name", "kube byon", "127.0.0.1:8444", settings.FieldErrors{"consoleHost": "ErrSettingDomain"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			rt := settings.Defaults()
			rt.APIBaseDomain = "k8s.example.com"
			rt.ConsoleHost, rt.ConsoleBackend = tt.host, tt.backend
			err := rt.Validate()
			if tt.want == nil {
				require.NoError(t, err)
				return
			}
			require.Equal(t, tt.want, err)
		})
	}
}
