package adminsettings_test

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/json"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgtype"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

	"github.com/kubebyon/kubebyon/internal/adminauth"
	"github.com/kubebyon/kubebyon/internal/adminsettings"
	"github.com/kubebyon/kubebyon/internal/audit"
	"github.com/kubebyon/kubebyon/internal/checks"
	"github.com/kubebyon/kubebyon/internal/hostcheck"
	"github.com/kubebyon/kubebyon/internal/passwords"
	"github.com/kubebyon/kubebyon/internal/secrets"
	"github.com/kubebyon/kubebyon/internal/settings"
	"github.com/kubebyon/kubebyon/internal/testenv"
	"github.com/kubebyon/kubebyon/queries"
)

func TestMain(m *testing.M) { testenv.Main(m) }

const adminPassword = "admin password 1"

type testBundle struct {
	pool  *pgxpool.Pool
	box   *secrets.Box
	svc   *adminsettings.Service
	admin audit.Actor
}

// setup gives a service on a database of the test's own, and an active
// admin whose password is adminPassword.
func setup(t *testing.T) *testBundle {
	t.Helper()
	pool := testenv.DB(t)
	box, err := secrets.New(bytes.Repeat([]byte{11}, 32))
	require.NoError(t, err)
	b := &testBundle{pool: pool, box: box, svc: &adminsettings.Service{Pool: pool, Box: box}}
	admin := b.user(t, "admin@example.com", "admin")
	b.admin = audit.Actor{UserID: admin.ID, Email: admin.Email, IP: "192.0.2.1"}
	return b
}

// user makes a verified account with the role and adminPassword.
func (b *testBundle) user(t *testing.T, email, role string) queries.User {
	t.Helper()
	hash, err := passwords.Hash(adminPassword)
	require.NoError(t, err)
	u, err := queries.New(b.pool).UserCreate(context.Background(), queries.UserCreateParams{
		Email: email, Name: "Name of " + email, Role: role,
		PasswordHash:    pgtype.Text{String: hash, Valid: true},
		EmailVerifiedAt: pgtype.Timestamptz{Time: time.Now(), Valid: true},
	})
	require.NoError(t, err)
	return u
}

func (b *testBundle) load(t *testing.T) settings.Runtime {
	t.Helper()
	rt, unreadable, err := b.svc.Load(context.Background())
	require.NoError(t, err)
	require.Empty(t, unreadable)
	return rt
}

// storedRow is the settings row as stored ("" when none).
func (b *testBundle) storedRow(t *testing.T) string {
	t.Helper()
	var v string
	err := b.pool.QueryRow(context.Background(), "SELECT value::text FROM settings WHERE key = 'runtime'").Scan(&v)
	if err == pgx.ErrNoRows {
		return ""
	}
	require.NoError(t, err)
	return v
}

// events are the details of the settings changes recorded, oldest first.
func (b *testBundle) events(t *testing.T) []map[string]any {
	t.Helper()
	rows, err := b.pool.Query(context.Background(),
		`SELECT actor_email, target_type, target_id, details FROM audit_events WHERE action = $1 ORDER BY id`, adminsettings.Action)
	require.NoError(t, err)
	var out []map[string]any
	var email, targetType, targetID string
	var details map[string]any
	_, err = pgx.ForEachRow(rows, []any{&email, &targetType, &targetID, &details}, func() error {
		require.Equal(t, b.admin.Email, email)
		require.Equal(t, "settings", targetType)
		require.Equal(t, "runtime", targetID)
		d := map[string]any{}
		for k, v := range details {
			d[k] = v
		}
		out = append(out, d)
		return nil
	})
	require.NoError(t, err)
	return out
}

// kubeconfig renders cfg (certificate data, no files) as a kubeconfig.
func kubeconfig(t *testing.T, cfg *rest.Config) string {
	t.Helper()
	c := clientcmdapi.NewConfig()
	c.Clusters["host"] = &clientcmdapi.Cluster{Server: cfg.Host, CertificateAuthorityData: cfg.CAData}
	c.AuthInfos["user"] = &clientcmdapi.AuthInfo{ClientCertificateData: cfg.CertData, ClientKeyData: cfg.KeyData}
	c.Contexts["host"] = &clientcmdapi.Context{Cluster: "host", AuthInfo: "user"}
	c.CurrentContext = "host"
	out, err := clientcmd.Write(*c)
	require.NoError(t, err)
	return string(out)
}

// execKubeconfig runs a program for its credentials.
const execKubeconfig = `apiVersion: v1
kind: Config
clusters:
- name: c
  cluster:
    server: https://127.0.0.1:6443
users:
- name: u
  user:
    exec:
      apiVersion: client.authentication.k8s.io/v1
      command: /bin/sh
      args: ["-c", "touch /tmp/pwned"]
contexts:
- name: c
  context: {cluster: c, user: u}
current-context: c
`

// strs turns a JSON array into strings.
func strs(v any) []string {
	var out []string
	for _, s := range v.([]any) {
		out = append(out, s.(string))
	}
	return out
}

// TestApplyWorksOutTheChange: the fields changed are named against the
// stored settings, stored and recorded; the same form again changes and
// records nothing; the secrets a form leaves alone are kept.
func TestApplyWorksOutTheChange(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()
	require.Equal(t, settings.Defaults(), b.load(t))

	// Nothing changed from the defaults: nothing written.
	changed, err := b.svc.Apply(ctx, adminsettings.Change{Settings: settings.Defaults()}, b.admin)
	require.NoError(t, err)
	require.Empty(t, changed)
	require.Empty(t, b.storedRow(t))
	require.Empty(t, b.events(t))

	form := settings.Defaults()
	form.PodCIDR = "10.200.0.0/16"
	form.ChartVersion = "0.29.1"
	form.AllowedVersions = []string{"v1.34.0", "v1.33.4"}
	changed, err = b.svc.Apply(ctx, adminsettings.Change{Settings: form}, b.admin)
	require.NoError(t, err)
	require.Equal(t, []string{"allowedVersions", "chartVersion", "podCIDR"}, changed, "sorted")
	require.Equal(t, form, b.load(t))
	events := b.events(t)
	require.Len(t, events, 1)
	require.Equal(t, changed, strs(events[0]["changed"]))
	require.Len(t, events[0], 1, "no secret changed, none named")

	again, err := b.svc.Apply(ctx, adminsettings.Change{Settings: form}, b.admin)
	require.NoError(t, err)
	require.Empty(t, again)
	require.Len(t, b.events(t), 1)

	// A secret stored, then a form that leaves it alone keeps it and
	// needs no password.
	_, err = b.svc.Apply(ctx, adminsettings.Change{
		Settings: form, PlatformAccessKey: adminsettings.SecretChange{Value: "access-key-1"}, Password: adminPassword,
	}, b.admin)
	require.NoError(t, err)
	form.ChartVersion = "0.30.0"
	form.PlatformAccessKey = "what the form holds is not what it asks"
	changed, err = b.svc.Apply(ctx, adminsettings.Change{Settings: form}, b.admin)
	require.NoError(t, err)
	require.Equal(t, []string{"chartVersion"}, changed)
	got := b.load(t)
	require.Equal(t, "access-key-1", got.PlatformAccessKey)
	require.Equal(t, "0.30.0", got.ChartVersion)
	require.Len(t, b.events(t), 3)
}

// TestApplySecretNeedsPassword: replacing or clearing a secret needs the
// admin's password; without it, or with a wrong one, nothing is saved
// (not even the other fields of the form) and nothing recorded. The event
// says how each secret changed, never its value.
func TestApplySecretNeedsPassword(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()
	host := kubeconfig(t, testenv.HostKube(t).Config)

	form := settings.Defaults()
	form.ChartVersion = "0.29.1"
	upload := adminsettings.Change{
		Settings:          form,
		HostKubeconfig:    adminsettings.SecretChange{Value: host},
		PlatformAccessKey: adminsettings.SecretChange{Value: "access-key-1"},
	}
	for _, tt := range []struct {
		name     string
		password string
		err      error
	}{
		{"no password", "", adminsettings.ErrPasswordRequired},
		{"wrong password", "not the password", adminauth.ErrWrongPassword},
		{"another case", strings.ToUpper(adminPassword), adminauth.ErrWrongPassword},
	} {
		c := upload
		c.Password = tt.password
		changed, err := b.svc.Apply(ctx, c, b.admin)
		require.ErrorIs(t, err, tt.err, tt.name)
		require.Empty(t, changed, tt.name)
		require.Empty(t, b.storedRow(t), tt.name)
		require.Empty(t, b.events(t), tt.name)
	}

	upload.Password = adminPassword
	changed, err := b.svc.Apply(ctx, upload, b.admin)
	require.NoError(t, err)
	require.Equal(t, []string{"chartVersion", adminsettings.FieldHostKubeconfig, adminsettings.FieldPlatformAccessKey}, changed)
	got := b.load(t)
	require.Equal(t, host, got.HostKubeconfig)
	require.Equal(t, "access-key-1", got.PlatformAccessKey)
	require.Equal(t, "0.29.1", got.ChartVersion)
	row := b.storedRow(t)
	require.NotContains(t, row, "access-key-1", "sealed at rest")
	require.NotContains(t, row, "BEGIN", "sealed at rest")
	events := b.events(t)
	require.Len(t, events, 1)
	require.Equal(t, changed, strs(events[0]["changed"]))
	require.Equal(t, "uploaded", events[0][adminsettings.FieldHostKubeconfig])
	require.Equal(t, "replaced", events[0][adminsettings.FieldPlatformAccessKey])
	raw, err := json.Marshal(events[0])
	require.NoError(t, err)
	require.NotContains(t, string(raw), "access-key-1")

	// Clearing is a change of the secret too.
	clear := adminsettings.Change{Settings: b.load(t), PlatformAccessKey: adminsettings.SecretChange{Clear: true}}
	_, err = b.svc.Apply(ctx, clear, b.admin)
	require.ErrorIs(t, err, adminsettings.ErrPasswordRequired)
	clear.Password = "wrong"
	_, err = b.svc.Apply(ctx, clear, b.admin)
	require.ErrorIs(t, err, adminauth.ErrWrongPassword)
	require.Equal(t, "access-key-1", b.load(t).PlatformAccessKey)
	require.Len(t, b.events(t), 1)

	clear.Password = adminPassword
	changed, err = b.svc.Apply(ctx, clear, b.admin)
	require.NoError(t, err)
	require.Equal(t, []string{adminsettings.FieldPlatformAccessKey}, changed)
	got = b.load(t)
	require.Empty(t, got.PlatformAccessKey)
	require.Equal(t, host, got.HostKubeconfig, "the other secret is kept")
	events = b.events(t)
	require.Len(t, events, 2)
	require.Equal(t, map[string]any{"changed": []any{adminsettings.FieldPlatformAccessKey}, adminsettings.FieldPlatformAccessKey: "cleared"}, events[1])

	// The same value again is no change and needs no password.
	changed, err = b.svc.Apply(ctx, adminsettings.Change{Settings: b.load(t), HostKubeconfig: adminsettings.SecretChange{Value: host}}, b.admin)
	require.NoError(t, err)
	require.Empty(t, changed)
	require.Len(t, b.events(t), 2)
}

// TestApplyFreshSignIn: an admin signed in again with a provider within
// the time allowed confirms a secret change without a password only when
// they have none.
func TestApplyFreshSignIn(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()
	sso, err := queries.New(b.pool).UserCreate(ctx, queries.UserCreateParams{
		Email: "sso@example.com", Name: "SSO", Role: "admin",
		EmailVerifiedAt: pgtype.Timestamptz{Time: time.Now(), Valid: true},
	})
	require.NoError(t, err)
	actor := audit.Actor{UserID: sso.ID, Email: sso.Email}
	c := adminsettings.Change{Settings: settings.Defaults(), PlatformAccessKey: adminsettings.SecretChange{Value: "from-sso"}}

	_, err = b.svc.Apply(ctx, c, actor)
	require.ErrorIs(t, err, adminsettings.ErrPasswordRequired)
	stale := adminauth.WithFreshSignIn(ctx, sso.ID, time.Now().Add(-adminauth.FreshSignInTTL-time.Minute))
	_, err = b.svc.Apply(stale, c, actor)
	require.ErrorIs(t, err, adminsettings.ErrPasswordRequired)
	require.Empty(t, b.storedRow(t))

	fresh := adminauth.WithFreshSignIn(ctx, sso.ID, time.Now().Add(-time.Minute))
	changed, err := b.svc.Apply(fresh, c, actor)
	require.NoError(t, err)
	require.Equal(t, []string{adminsettings.FieldPlatformAccessKey}, changed)
	require.Equal(t, "from-sso", b.load(t).PlatformAccessKey)
}

// TestApplyInvalid: invalid input gets its field errors, all at once, and
// nothing is written: neither the valid fields of the form nor the event,
// and no password is asked for first.
func TestApplyInvalid(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()
	stored := settings.Defaults()
	stored.ChartVersion = "0.29.1"
	_, err := b.svc.Apply(ctx, adminsettings.Change{Settings: stored}, b.admin)
	require.NoError(t, err)
	before := b.storedRow(t)

	tests := []struct {
		name   string
		change func(*adminsettings.Change)
		want   settings.FieldErrors
	}{
		{"CIDR and chart repository", func(c *adminsettings.Change) {
			c.Settings.PodCIDR, c.Settings.ChartRepo = "10.0.0.0/33", "ftp://charts.example.com"
		}, settings.FieldErrors{"podCIDR": "ErrSettingCIDR", "chartRepo": "ErrSettingChartRepo"}},
		{"node ports", func(c *adminsettings.Change) { c.Settings.NodePortMin, c.Settings.NodePortMax = 32000, 31000 },
			settings.FieldErrors{"nodePortRange": "ErrSettingNodePorts"}},
		{"no versions", func(c *adminsettings.Change) { c.Settings.AllowedVersions = nil },
			settings.FieldErrors{"allowedVersions": "ErrSettingVersions"}},
		{"replace and clear", func(c *adminsettings.Change) {
			c.PlatformAccessKey = adminsettings.SecretChange{Value: "k", Clear: true}
		}, settings.FieldErrors{adminsettings.FieldPlatformAccessKey: adminsettings.ErrReplaceAndClear.Error()}},
		{"kubeconfig that runs a program", func(c *adminsettings.Change) {
			c.HostKubeconfig = adminsettings.SecretChange{Value: execKubeconfig}
		}, settings.FieldErrors{adminsettings.FieldHostKubeconfig: adminsettings.ErrKubeconfigExternal.Error()}},
		{"kubeconfig that is not one", func(c *adminsettings.Change) {
			c.HostKubeconfig = adminsettings.SecretChange{Value: "apiVersion: v1\nkind: Config\nclusters: [}"}
		}, settings.FieldErrors{adminsettings.FieldHostKubeconfig: "ErrSettingKubeconfig"}},
		{"a secret and an invalid field", func(c *adminsettings.Change) {
			c.PlatformAccessKey = adminsettings.SecretChange{Value: "valid key"}
			c.Settings.Backend = "k3s"
		}, settings.FieldErrors{"backend": "ErrSettingBackend"}},
	}
	for _, tt := range tests {
		c := adminsettings.Change{Settings: stored}
		c.Settings.ChartVersion = "0.28.0" // valid, and not saved either
		tt.change(&c)
		for _, password := range []string{"", "wrong", adminPassword} {
			c.Password = password
			changed, err := b.svc.Apply(ctx, c, b.admin)
			var errs settings.FieldErrors
			require.ErrorAs(t, err, &errs, "%s (password %q)", tt.name, password)
			require.Equal(t, tt.want, errs, tt.name)
			require.Empty(t, changed)
			require.Equal(t, before, b.storedRow(t), tt.name)
		}
	}
	require.Len(t, b.events(t), 1, "the first save only")
	require.Equal(t, stored, b.load(t))
}

// TestApplyAPIDomainOverlapsApps: an API base domain that overlaps the
// apps' base domain (ingress settings) is refused, nothing written; one
// that does not is saved, and every cluster's DNS check is due now.
func TestApplyAPIDomainOverlapsApps(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()
	q := queries.New(b.pool)
	require.NoError(t, q.SettingUpsert(ctx, queries.SettingUpsertParams{Key: "ingress", Value: []byte(`{"appsBaseDomain": "apps.example.com"}`)}))
	var clusterID int64
	require.NoError(t, b.pool.QueryRow(ctx, `INSERT INTO clusters (owner_id, name, slug, kubernetes_version, public_access_mode)
		VALUES ($1, 'one', 'one-abc', 'v1.34.0', 'nodeport') RETURNING id`, b.admin.UserID).Scan(&clusterID))
	dnsDue := func() *time.Time {
		var due *time.Time
		err := b.pool.QueryRow(ctx, "SELECT due_at FROM cluster_checks WHERE cluster_id = $1 AND kind = $2",
			clusterID, string(checks.DNSRecord)).Scan(&due)
		if err == pgx.ErrNoRows {
			return nil
		}
		require.NoError(t, err)
		return due
	}

	// A change that does not move the API host names leaves DNS alone.
	form := settings.Defaults()
	form.ChartVersion = "0.29.1"
	_, err := b.svc.Apply(ctx, adminsettings.Change{Settings: form}, b.admin)
	require.NoError(t, err)
	require.Nil(t, dnsDue())
	before := b.storedRow(t)

	for _, domain := range []string{"example.com", "apps.example.com", "x.apps.example.com"} {
		form.APIBaseDomain = domain
		changed, err := b.svc.Apply(ctx, adminsettings.Change{Settings: form}, b.admin)
		var errs settings.FieldErrors
		require.ErrorAs(t, err, &errs, domain)
		require.Equal(t, settings.FieldErrors{"apiBaseDomain": "ErrSettingAPIOverlapsApps"}, errs, domain)
		require.Empty(t, changed)
		require.Equal(t, before, b.storedRow(t), domain)
		require.Nil(t, dnsDue(), domain)
	}
	require.Len(t, b.events(t), 1)

	form.APIBaseDomain = "api.example.com"
	changed, err := b.svc.Apply(ctx, adminsettings.Change{Settings: form}, b.admin)
	require.NoError(t, err)
	require.Equal(t, []string{"apiBaseDomain"}, changed)
	require.Equal(t, "api.example.com", b.load(t).APIBaseDomain)
	due := dnsDue()
	require.NotNil(t, due, "the cluster's DNS record follows now")
	require.WithinDuration(t, time.Now(), *due, time.Minute)
	require.Len(t, b.events(t), 2)
}

// TestApplyNotAdmin: an account that is not an active admin changes
// nothing, secret or not, even with its own password.
func TestApplyNotAdmin(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()
	user := b.user(t, "user@example.com", "user")
	disabled := b.user(t, "disabled@example.com", "admin")
	_, err := b.pool.Exec(ctx, "UPDATE users SET disabled_at = now() WHERE id = $1", disabled.ID)
	require.NoError(t, err)

	form := settings.Defaults()
	form.ChartVersion = "0.29.1"
	for _, u := range []queries.User{user, disabled} {
		actor := audit.Actor{UserID: u.ID, Email: u.Email}
		for _, c := range []adminsettings.Change{
			{Settings: form},
			{Settings: form, PlatformAccessKey: adminsettings.SecretChange{Value: "k"}, Password: adminPassword},
		} {
			changed, err := b.svc.Apply(ctx, c, actor)
			require.ErrorIs(t, err, adminauth.ErrNotAdmin, u.Email)
			require.Empty(t, changed)
		}
	}
	require.Empty(t, b.storedRow(t))
	require.Empty(t, b.events(t))
}

// TestApplyUnreadableSecrets: a secret sealed with another platform key
// reads as empty and is named; any save writes it anew, so it counts as a
// change of the secret, which needs the password.
func TestApplyUnreadableSecrets(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()
	other, err := secrets.New(bytes.Repeat([]byte{12}, 32))
	require.NoError(t, err)
	old := settings.Defaults()
	old.PlatformAccessKey = "sealed elsewhere"
	require.NoError(t, settings.Save(ctx, queries.New(b.pool), other, old))

	rt, unreadable, err := b.svc.Load(ctx)
	require.NoError(t, err)
	require.Equal(t, []string{adminsettings.FieldPlatformAccessKey}, unreadable)
	require.Empty(t, rt.PlatformAccessKey)

	form := settings.Defaults()
	form.ChartVersion = "0.29.1"
	_, err = b.svc.Apply(ctx, adminsettings.Change{Settings: form}, b.admin)
	require.ErrorIs(t, err, adminsettings.ErrPasswordRequired)
	changed, err := b.svc.Apply(ctx, adminsettings.Change{Settings: form, Password: adminPassword}, b.admin)
	require.NoError(t, err)
	require.Equal(t, []string{"chartVersion", adminsettings.FieldPlatformAccessKey}, changed)
	got := b.load(t) // readable again: nothing sealed with the other key is left
	require.Empty(t, got.PlatformAccessKey)
	require.Equal(t, "0.29.1", got.ChartVersion)
	events := b.events(t)
	require.Len(t, events, 1)
	require.Equal(t, "cleared", events[0][adminsettings.FieldPlatformAccessKey])
}

// TestHost: where the credentials come from: the stored kubeconfig (with
// who uploaded it when), else KUBEBYON_KUBECONFIG, else none (the tests
// run outside a cluster).
func TestHost(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()

	h, err := b.svc.Host(ctx, b.load(t))
	require.NoError(t, err)
	require.Equal(t, adminsettings.Host{Source: adminsettings.SourceNone}, h)

	file := &adminsettings.Service{Pool: b.pool, Box: b.box, KubeconfigPath: "/etc/kubebyon/host.kubeconfig"}
	h, err = file.Host(ctx, b.load(t))
	require.NoError(t, err)
	require.Equal(t, adminsettings.Host{Source: adminsettings.SourceFile, Path: "/etc/kubebyon/host.kubeconfig"}, h)

	// Stored without an upload in the audit stream: who and when unknown.
	rt := b.load(t)
	rt.HostKubeconfig = kubeconfig(t, testenv.HostKube(t).Config)
	h, err = file.Host(ctx, rt)
	require.NoError(t, err)
	require.Equal(t, adminsettings.Host{Source: adminsettings.SourceStored}, h)

	_, err = b.svc.Apply(ctx, adminsettings.Change{
		Settings: b.load(t), HostKubeconfig: adminsettings.SecretChange{Value: rt.HostKubeconfig}, Password: adminPassword,
	}, b.admin)
	require.NoError(t, err)
	h, err = file.Host(ctx, b.load(t))
	require.NoError(t, err)
	require.Equal(t, adminsettings.SourceStored, h.Source, "the stored kubeconfig wins over the file")
	require.Equal(t, b.admin.Email, h.UploadedBy)
	require.WithinDuration(t, time.Now(), h.UploadedAt, time.Minute)
}

// closedServer is an https address nothing listens on.
func closedServer(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := l.Addr().String()
	require.NoError(t, l.Close())
	return "https://" + addr
}

// TestTestConnection: the host cluster connection test against the real
// apiserver: with an upload, the stored kubeconfig, the file, or none;
// and an unreachable server, a bad upload and a missing file each with
// their error.
func TestTestConnection(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()
	k := testenv.HostKube(t)
	good := kubeconfig(t, k.Config)
	path := filepath.Join(t.TempDir(), "host.kubeconfig")
	require.NoError(t, os.WriteFile(path, []byte(good), 0o600))
	file := &adminsettings.Service{Pool: b.pool, Box: b.box, KubeconfigPath: path}
	missing := &adminsettings.Service{Pool: b.pool, Box: b.box, KubeconfigPath: filepath.Join(t.TempDir(), "gone.kubeconfig")}

	reachable := func(name string, src adminsettings.Source, wantSrc adminsettings.Source, report hostcheck.Report, err error) {
		t.Helper()
		require.NoError(t, err, name)
		require.Equal(t, wantSrc, src, name)
		require.Equal(t, k.URL, report.Server, name)
		require.True(t, strings.HasPrefix(report.Version, "v1."), "%s: version %q", name, report.Version)
		require.Len(t, report.Results, len(hostcheck.Required)+len(hostcheck.EdgeRequired), name)
		require.True(t, report.OK(), name)
	}

	// Nothing configured.
	src, _, err := b.svc.Test(ctx, "", false)
	require.ErrorIs(t, err, settings.ErrNoHostCluster)
	require.Equal(t, adminsettings.SourceNone, src)

	src, report, err := b.svc.Test(ctx, good, false)
	reachable("upload", src, adminsettings.SourceUpload, report, err)
	require.Empty(t, b.storedRow(t), "a test stores nothing")

	src, report, err = file.Test(ctx, "", false)
	reachable("file", src, adminsettings.SourceFile, report, err)

	src, _, err = missing.Test(ctx, "", false)
	var configErr *adminsettings.ConfigError
	require.ErrorAs(t, err, &configErr)
	require.Equal(t, adminsettings.SourceFile, src)
	require.Contains(t, err.Error(), "gone.kubeconfig")

	// Unreachable: the check could not run, and says which server and why.
	unreachable := &rest.Config{Host: closedServer(t), TLSClientConfig: k.Config.TLSClientConfig}
	start := time.Now()
	src, _, err = b.svc.Test(ctx, kubeconfig(t, unreachable), false)
	var checkErr *hostcheck.Error
	require.ErrorAs(t, err, &checkErr)
	require.Equal(t, adminsettings.SourceUpload, src)
	require.Equal(t, hostcheck.Unreachable, checkErr.Kind, err.Error())
	require.Equal(t, unreachable.Host, checkErr.Server)
	require.Contains(t, err.Error(), unreachable.Host)
	require.Contains(t, err.Error(), "connection refused")
	require.Less(t, time.Since(start), hostcheck.Timeout, "a refused connection is said at once")

	// Bad uploads never reach a server.
	for _, tt := range []struct {
		name, upload, want string
	}{
		{"runs a program", execKubeconfig, adminsettings.ErrKubeconfigExternal.Error()},
		{"not a kubeconfig", "clusters: [}", "ErrSettingKubeconfig"},
	} {
		src, _, err := b.svc.Test(ctx, tt.upload, false)
		var errs settings.FieldErrors
		require.ErrorAs(t, err, &errs, tt.name)
		require.Equal(t, settings.FieldErrors{adminsettings.FieldHostKubeconfig: tt.want}, errs, tt.name)
		require.Equal(t, adminsettings.SourceUpload, src, tt.name)
	}

	// A stored kubeconfig wins over the file, unless the form clears it.
	_, err = b.svc.Apply(ctx, adminsettings.Change{
		Settings: b.load(t), HostKubeconfig: adminsettings.SecretChange{Value: kubeconfig(t, unreachable)}, Password: adminPassword,
	}, b.admin)
	require.NoError(t, err)
	src, _, err = file.Test(ctx, "", false)
	require.ErrorAs(t, err, &checkErr)
	require.Equal(t, adminsettings.SourceStored, src)
	require.Equal(t, hostcheck.Unreachable, checkErr.Kind)
	src, report, err = file.Test(ctx, "", true)
	reachable("file, stored cleared", src, adminsettings.SourceFile, report, err)
	src, _, err = b.svc.Test(ctx, "", true)
	require.ErrorIs(t, err, settings.ErrNoHostCluster, "stored cleared, nothing else")
	require.Equal(t, adminsettings.SourceNone, src)
	src, report, err = b.svc.Test(ctx, good, false)
	reachable("upload over stored", src, adminsettings.SourceUpload, report, err)
}

// TestTestConnectionEdgePermissions: credentials without any grant are
// reported as such; the platform edge's permissions count only when the
// edge is offered (a GatewayClass named in the ingress settings).
func TestTestConnectionEdgePermissions(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()
	k := testenv.HostKube(t)
	user := kubeconfig(t, k.UserConfig(t, "adminsettings-"+strings.ToLower(rand.Text()[:10])))
	permissions := func(rs []hostcheck.Requirement) int {
		n := 0
		for _, r := range rs {
			n += len(r.Verbs)
		}
		return n
	}

	_, report, err := b.svc.Test(ctx, user, false)
	require.NoError(t, err, "anyone may review their own access")
	require.False(t, report.OK())
	require.Equal(t, permissions(hostcheck.Required), report.Missing())

	require.NoError(t, queries.New(b.pool).SettingUpsert(ctx, queries.SettingUpsertParams{
		Key: "ingress", Value: []byte(`{"gatewayClass": "kubebyon-edge"}`),
	}))
	_, report, err = b.svc.Test(ctx, user, false)
	require.NoError(t, err)
	require.Equal(t, permissions(hostcheck.Required)+permissions(hostcheck.EdgeRequired), report.Missing())
}

// TestKamajiInstalled: whether the host serves Kamaji's TenantControlPlane
// API, asked of real apiservers; an unreachable one is an error.
func TestKamajiInstalled(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()
	// A second apiserver of its own for the CRD: the host one, shared by
	// the package's tests, never gets it.
	with := testenv.NewKube(t)
	testenv.KamajiCRD(t, with)
	without := testenv.HostKube(t)

	for _, tt := range []struct {
		name string
		cfg  *rest.Config
		want bool
	}{
		{"installed", with.Config, true},
		{"not installed", without.Config, false},
	} {
		rt := b.load(t)
		rt.HostKubeconfig = kubeconfig(t, tt.cfg)
		got, err := b.svc.KamajiInstalled(ctx, rt)
		require.NoError(t, err, tt.name)
		require.Equal(t, tt.want, got, tt.name)
	}

	rt := b.load(t)
	rt.HostKubeconfig = kubeconfig(t, &rest.Config{Host: closedServer(t), TLSClientConfig: with.Config.TLSClientConfig})
	_, err := b.svc.KamajiInstalled(ctx, rt)
	require.Error(t, err)
	_, err = b.svc.KamajiInstalled(ctx, b.load(t))
	require.ErrorIs(t, err, settings.ErrNoHostCluster)
}
