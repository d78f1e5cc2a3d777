package config_test

import (
	"encoding/base64"
	"flag"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/kubebyon/kubebyon/internal/config"
)

func envMap(m map[string]string) config.Getenv {
	return func(k string) string { return m[k] }
}

func TestServeSettings(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		env     map[string]string
		args    []string
		wantErr string
		check   func(t *testing.T, c *config.Common, s *config.Serve)
	}{
		{name: "defaults", check: func(t *testing.T, c *config.Common, s *config.Serve) {
			require.Equal(t, ":8080", s.Listen)
			require.Equal(t, "http://localhost:8080", c.BaseURL)
			require.True(t, s.Workers)
			require.False(t, s.Migrate)
			require.Equal(t, "info", c.LogLevel)
			require.Equal(t, "127.0.0.1:9090", s.MetricsListen)
		}},
		{name: "env", env: map[string]string{"KUBEBYON_LISTEN": "127.0.0.1:9000", "KUBEBYON_WORKERS": "false", "KUBEBYON_BASE_URL": "https://kb.example.com/"},
			check: func(t *testing.T, c *config.Common, s *config.Serve) {
				require.Equal(t, "127.0.0.1:9000", s.Listen)
				require.False(t, s.Workers)
				require.Equal(t, "https://kb.example.com", c.BaseURL)
			}},
		{name: "flag beats env", env: map[string]string{"KUBEBYON_LISTEN": ":1"}, args: []string{"--listen", ":2", "--workers=false", "--migrate"},
			check: func(t *testing.T, c *config.Common, s *config.Serve) {
				require.Equal(t, ":2", s.Listen)
				require.False(t, s.Workers)
				require.True(t, s.Migrate)
			}},
		{name: "metrics listen", env: map[string]string{"KUBEBYON_METRICS_LISTEN": ":9100"}, check: func(t *testing.T, c *config.Common, s *config.Serve) {
			require.Equal(t, ":9100", s.MetricsListen)
		}},
		{name: "metrics off", args: []string{"--metrics-listen", ""}, check: func(t *testing.T, c *config.Common, s *config.Serve) {
			require.Empty(t, s.MetricsListen)
		}},
		{name: "bad metrics listen", env: map[string]string{"KUBEBYON_METRICS_LISTEN": "9100"}, wantErr: "KUBEBYON_METRICS_LISTEN (--metrics-listen) is \"9100\""},
		{name: "base URL with path", args: []string{"--base-url", "https://kb.example.com/app"}, wantErr: "KUBEBYON_BASE_URL (--base-url)"},
		{name: "base URL scheme", args: []string{"--base-url", "ftp://kb.example.com"}, wantErr: "KUBEBYON_BASE_URL (--base-url)"},
		{name: "trusted proxies", args: []string{"--trusted-proxies", "10.0.0.0/8, 192.168.1.1"}, check: func(t *testing.T, c *config.Common, s *config.Serve) {
			require.Len(t, s.TrustedProxies, 2)
			require.Equal(t, "192.168.1.1/32", s.TrustedProxies[1].String())
		}},
		{name: "bad trusted proxies", args: []string{"--trusted-proxies", "10.0.0.0/99"}, wantErr: "KUBEBYON_TRUSTED_PROXIES (--trusted-proxies)"},
		{name: "smtp URL", env: map[string]string{"KUBEBYON_SMTP_URL": "http://mail.example.com"}, wantErr: "KUBEBYON_SMTP_URL (--smtp-url): scheme \"http\""},
		{name: "half a metrics backend", env: map[string]string{"KUBEBYON_METRICS_REMOTE_WRITE_URL": "http://vm:8428/api/v1/write"}, wantErr: "KUBEBYON_METRICS_REMOTE_WRITE_URL (--metrics-remote-write-url) and KUBEBYON_METRICS_QUERY_URL (--metrics-query-url) go together"},
		{name: "metrics query URL", env: map[string]string{"KUBEBYON_METRICS_REMOTE_WRITE_URL": "http://vm:8428/api/v1/write", "KUBEBYON_METRICS_QUERY_URL": "vm:8428"}, wantErr: "KUBEBYON_METRICS_QUERY_URL (--metrics-query-url) is \"vm:8428\""},
		{name: "metrics backend", env: map[string]string{"KUBEBYON_METRICS_REMOTE_WRITE_URL": "http://vm:8428/api/v1/write", "KUBEBYON_METRICS_QUERY_URL": "https://vm.example.com"}, check: func(t *testing.T, c *config.Common, s *config.Serve) {
			require.Equal(t, "https://vm.example.com", c.MetricsQueryURL)
		}},
		{name: "half a GitHub app", env: map[string]string{"KUBEBYON_GITHUB_CLIENT_ID": "x"}, wantErr: "set both KUBEBYON_GITHUB_CLIENT_ID"},
		{name: "mail from default", args: []string{"--base-url", "https://kb.example.com"}, check: func(t *testing.T, c *config.Common, s *config.Serve) {
			require.Equal(t, "KubeBYON <noreply@kb.example.com>", c.MailFrom)
		}},
		{name: "listen", args: []string{"--listen", "localhost"}, wantErr: "KUBEBYON_LISTEN (--listen)"},
		{name: "bool env", env: map[string]string{"KUBEBYON_MIGRATE": "sometimes"}, wantErr: "KUBEBYON_MIGRATE (--migrate) is \"sometimes\""},
		{name: "database URL", env: map[string]string{"DATABASE_URL": "postgres://host:99999999/db"}, wantErr: "DATABASE_URL (--database-url) cannot be parsed"},
		{name: "log format", args: []string{"--log-format", "yaml"}, wantErr: "KUBEBYON_LOG_FORMAT (--log-format)"},
		{name: "secret key", env: map[string]string{"KUBEBYON_SECRET_KEY": base64.StdEncoding.EncodeToString([]byte("too short"))}, wantErr: "KUBEBYON_SECRET_KEY (--secret-key)"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			env := map[string]string{"KUBEBYON_DATA_DIR": t.TempDir()}
			for k, v := range tt.env {
				env[k] = v
			}
			fs := flag.NewFlagSet("serve", flag.ContinueOnError)
			fs.SetOutput(io.Discard)
			c := config.RegisterCommon(fs, envMap(env))
			s := config.RegisterServe(fs, envMap(env))
			require.NoError(t, fs.Parse(tt.args))
			err := c.Validate()
			if err == nil {
				err = s.Validate()
			}
			if tt.wantErr != "" {
				require.ErrorContains(t, err, tt.wantErr)
				require.NotContains(t, err.Error(), "\n")
				return
			}
			require.NoError(t, err)
			tt.check(t, c, s)
		})
	}
}

func TestSecretKey(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	c := &config.Common{DataDir: dir, LogLevel: "info", LogFormat: "text", BaseURL: "http://localhost:8080"}
	require.NoError(t, c.Validate())

	key, err := c.Key()
	require.NoError(t, err)
	require.Len(t, key, config.SecretKeySize)
	fi, err := os.Stat(filepath.Join(dir, "secret.key"))
	require.NoError(t, err)
	require.Equal(t, os.FileMode(0o600), fi.Mode().Perm())

	again, err := c.Key()
	require.NoError(t, err)
	require.Equal(t, key, again)

	// A configured key wins over the file.
	set := base64.StdEncoding.EncodeToString([]byte(strings.Repeat("k", 32)))
	c.SecretKey = set
	got, err := c.Key()
	require.NoError(t, err)
	require.Equal(t, []byte(strings.Repeat("k", 32)), got)

	// A damaged file is reported, not replaced.
	c.SecretKey = ""
	require.NoError(t, os.WriteFile(filepath.Join(dir, "secret.key"), []byte("garbage"), 0o600))
	_, err = c.Key()
	require.ErrorContains(t, err, "secret key file")
}

func TestLoopbackBaseURL(t *testing.T) {
	t.Parallel()
	for url, want := range map[string]bool{
		config.DefaultBaseURL:           true,
		"http://LOCALHOST.:8080":        true,
		"http://app.localhost":          true,
		"http://127.0.0.1:8080":         true,
		"http://127.1.2.3":              true,
		"http://[::1]:8080":             true,
		"https://kubebyon.example.com":  false,
		"http://10.0.0.5:8080":          false,
		"http://[2001:db8::1]:8080":     false,
		"https://localhost.example.com": false,
		"http://notlocalhost:8080":      false,
	} {
		require.Equal(t, want, config.LoopbackBaseURL(url), url)
	}
}
