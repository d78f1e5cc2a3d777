package handlerstest

import (
	"context"
	"encoding/json"
	"fmt"
	"html"
	"io"
	"log/slog"
	"net/url"
	"regexp"
	"strings"
	"testing"

	"github.com/riverqueue/river/rivertype"
	"github.com/stretchr/testify/require"

	"github.com/kubebyon/kubebyon/internal/adminusers"
	"github.com/kubebyon/kubebyon/internal/checks"
	"github.com/kubebyon/kubebyon/internal/dnsrecords"
	"github.com/kubebyon/kubebyon/internal/edge"
	"github.com/kubebyon/kubebyon/internal/ingress"
	"github.com/kubebyon/kubebyon/internal/settings"
	"github.com/kubebyon/kubebyon/internal/workerprocs"
	"github.com/kubebyon/kubebyon/queries"
)

// BrandingEvents are the details of the branding audit events, oldest first.
func (b *Bundle) BrandingEvents(t *testing.T) []map[string]any {
	t.Helper()
	rows, err := b.Pool.Query(context.Background(), "SELECT details::text FROM audit_events WHERE action = 'admin.branding_update' ORDER BY id")
	require.NoError(t, err)
	defer rows.Close()
	var out []map[string]any
	for rows.Next() {
		var s string
		require.NoError(t, rows.Scan(&s))
		d := map[string]any{}
		require.NoError(t, json.Unmarshal([]byte(s), &d))
		out = append(out, d)
	}
	require.NoError(t, rows.Err())
	return out
}

// InsertCluster writes a cluster row as the reconcile worker would have
// left it, returning its id.
func (b *Bundle) InsertCluster(t *testing.T, owner int64, name, slug, version, mode, status string) int64 {
	t.Helper()
	var id int64
	require.NoError(t, b.Pool.QueryRow(context.Background(), `INSERT INTO clusters (owner_id, name, slug, kubernetes_version, public_access_mode, status)
		VALUES ($1, $2, $3, $4, $5, $6) RETURNING id`, owner, name, slug, version, mode, status).Scan(&id))
	return id
}

// RequireNotified checks that the user has an in-app notification of
// the admin's action, worded by message.
func (b *Bundle) RequireNotified(t *testing.T, userID int64, message string) {
	t.Helper()
	var n int
	require.NoError(t, b.Pool.QueryRow(context.Background(),
		`SELECT count(*) FROM notifications WHERE user_id = $1 AND kind = 'cluster_admin' AND message = $2`, userID, message).Scan(&n))
	require.Equal(t, 1, n)
}

// SyncDNS works the cluster's DNS check as its job does
// (jobs.DNSRecordWorker): the sync, then its outcome recorded.
func (b *Bundle) SyncDNS(t *testing.T, clusterID int64) {
	t.Helper()
	ctx := context.Background()
	next, err := (&dnsrecords.Service{Pool: b.Pool, Box: b.Box, KubeconfigPath: b.HostKubeconfig}).Sync(ctx, clusterID)
	require.NoError(t, err)
	require.NoError(t, checks.Recorder{Q: queries.New(b.Pool)}.Done(ctx, clusterID, checks.DNSRecord, dnsrecords.Interval, next, nil))
}

// EdgeReport records an edge's report that the cluster's API backend has
// up of up+down servers up, at the routes' current version.
func (b *Bundle) EdgeReport(t *testing.T, name string, clusterID int64, up, down int) {
	t.Helper()
	ctx := context.Background()
	// The desired state as the database has it now (the watcher may be a
	// change behind).
	q := queries.New(b.Pool)
	rt, err := settings.Load(ctx, q, b.Box)
	require.NoError(t, err)
	st, err := edge.Desired(ctx, q, rt)
	require.NoError(t, err)
	var tokenID int64
	require.NoError(t, b.Pool.QueryRow(ctx, `INSERT INTO edge_tokens (name, prefix, secret_hash) VALUES ($1, $2, 'x') RETURNING id`,
		name, "kbe_"+name).Scan(&tokenID))
	_, err = b.Pool.Exec(ctx, `INSERT INTO edge_instances (token_id, name, applied_version, backends_down, down)
		VALUES ($1, $2, $3, 1, jsonb_build_array(jsonb_build_object('cluster_id', $4::bigint, 'backend', 'api', 'up', $5::int, 'down', $6::int)))`,
		tokenID, name, st.Version, clusterID, up, down)
	require.NoError(t, err)
}

// IngressAudits are the changed fields of each managed ingress settings
// event, oldest first.
func (b *Bundle) IngressAudits(t *testing.T) [][]string {
	t.Helper()
	rows, err := b.Pool.Query(context.Background(),
		"SELECT details->'changed' FROM audit_events WHERE action = 'admin.ingress_update' AND target_id = 'ingress' ORDER BY id")
	require.NoError(t, err)
	var out [][]string
	for rows.Next() {
		var raw []byte
		require.NoError(t, rows.Scan(&raw))
		var changed []string
		require.NoError(t, json.Unmarshal(raw, &changed))
		out = append(out, changed)
	}
	require.NoError(t, rows.Err())
	return out
}

// IngressSettings loads the platform's ingress settings from the database.
func (b *Bundle) IngressSettings(t *testing.T) ingress.Settings {
	t.Helper()
	s, err := ingress.LoadSettings(context.Background(), queries.New(b.Pool))
	require.NoError(t, err)
	return s
}

// Heartbeat starts the heartbeat of a worker process p, stopped (marked
// stopped) when the test ends.
func (b *Bundle) Heartbeat(t *testing.T, p workerprocs.Process) *workerprocs.Heartbeat {
	t.Helper()
	h := &workerprocs.Heartbeat{Pool: b.Pool, Logger: slog.New(slog.NewTextHandler(io.Discard, nil)), Process: p}
	require.NoError(t, h.Start(context.Background()))
	t.Cleanup(func() { _ = h.Stop(context.Background()) })
	return h
}

// JobRow is a job as River has it now.
func (b *Bundle) JobRow(t *testing.T, id int64) *rivertype.JobRow {
	t.Helper()
	j, err := b.River.JobGet(context.Background(), id)
	require.NoError(t, err)
	return j
}

// WaitJob waits until job id is as cond wants.
func (b *Bundle) WaitJob(t *testing.T, id int64, cond func(*rivertype.JobRow) bool, what string) {
	t.Helper()
	WaitFor(t, func() bool { return cond(b.JobRow(t, id)) }, what)
}

// JobAudited is how many events of action target job id.
func (b *Bundle) JobAudited(t *testing.T, action string, id int64, kind string) int {
	t.Helper()
	var n int
	require.NoError(t, b.Pool.QueryRow(context.Background(),
		`SELECT count(*) FROM audit_events WHERE action = $1 AND target_type = 'job' AND target_id = $2 AND details->>'kind' = $3`,
		action, fmt.Sprint(id), kind).Scan(&n))
	return n
}

// SectionHTML is body from the element with testID to the next section's
// start (or the end).
func SectionHTML(t *testing.T, body, testID string) string {
	t.Helper()
	start := strings.Index(body, `data-testid="`+testID+`"`)
	require.GreaterOrEqual(t, start, 0, "no %s", testID)
	rest := body[start:]
	if end := strings.Index(rest[1:], "<section"); end >= 0 {
		return rest[:end+1]
	}
	return rest
}

// PlanForm is the admin plan form filled in for a plan called name.
func PlanForm(name string) url.Values {
	return url.Values{
		"name": {name}, "name_zh": {"专业版"}, "description_en": {"For teams"}, "description_zh": {"团队使用"},
		"max_clusters": {"10"}, "max_nodes_per_cluster": {"50"}, "max_hostnames_per_cluster": {"20"},
		"ingress_allowed": {"on"}, "currency": {"CNY"}, "price_monthly": {"99"}, "price_yearly": {"990.5"},
		"public": {"on"}, "sort_order": {"2"},
	}
}

// AuditDetails are the details of the events with action, in order, as
// JSON text.
func (b *Bundle) AuditDetails(t *testing.T, action string) []string {
	t.Helper()
	rows, err := b.Pool.Query(context.Background(), "SELECT details::text FROM audit_events WHERE action = $1 ORDER BY id", action)
	require.NoError(t, err)
	defer rows.Close()
	var out []string
	for rows.Next() {
		var d string
		require.NoError(t, rows.Scan(&d))
		out = append(out, d)
	}
	require.NoError(t, rows.Err())
	return out
}

// AccountStatus is the account's state as the admin pages show it.
func (b *Bundle) AccountStatus(t *testing.T, email string) adminusers.Status {
	t.Helper()
	var verified, disabled bool
	require.NoError(t, b.Pool.QueryRow(context.Background(),
		"SELECT email_verified_at IS NOT NULL, disabled_at IS NOT NULL FROM users WHERE lower(email) = lower($1)", email).Scan(&verified, &disabled))
	return adminusers.StatusFrom(verified, disabled)
}

// AuditEvents are the details of the events with action, in order,
// decoded.
func (b *Bundle) AuditEvents(t *testing.T, action string) []map[string]any {
	t.Helper()
	rows, err := b.Pool.Query(context.Background(), "SELECT details FROM audit_events WHERE action = $1 ORDER BY id", action)
	require.NoError(t, err)
	defer rows.Close()
	var out []map[string]any
	for rows.Next() {
		var raw []byte
		require.NoError(t, rows.Scan(&raw))
		m := map[string]any{}
		require.NoError(t, json.Unmarshal(raw, &m))
		out = append(out, m)
	}
	require.NoError(t, rows.Err())
	return out
}

// UserExists reports whether an account with this email exists.
func (b *Bundle) UserExists(t *testing.T, email string) bool {
	t.Helper()
	var n int
	require.NoError(t, b.Pool.QueryRow(context.Background(), "SELECT count(*) FROM users WHERE lower(email) = lower($1)", email).Scan(&n))
	return n > 0
}

var inviteLink = regexp.MustCompile(`(http://\S+/signup\?invite=([A-Z2-7]+))`)

// InvitationLink is the link of the newest invitation mailed to email,
// the n-th the address got.
func (b *Bundle) InvitationLink(t *testing.T, email string, n int) string {
	t.Helper()
	msgs := b.WaitMessages(t, email, n)
	m := inviteLink.FindStringSubmatch(msgs[n-1].Text)
	require.NotNil(t, m, "no link in %q", msgs[n-1].Text)
	return m[1]
}

// InvitationID is the id of the latest invitation sent to email.
func (b *Bundle) InvitationID(t *testing.T, email string) string {
	t.Helper()
	var id string
	require.NoError(t, b.Pool.QueryRow(context.Background(),
		"SELECT id::text FROM invitations WHERE lower(email) = lower($1) ORDER BY id DESC LIMIT 1", email).Scan(&id))
	return id
}

// SignedUpAdmin is a signed-in user made an admin; the password is
// "password of <name>".
func (b *Bundle) SignedUpAdmin(t *testing.T, name string) (*Client, string) {
	t.Helper()
	c, email := b.SignedUpUser(t, name)
	_, err := b.Pool.Exec(context.Background(), "UPDATE users SET role = 'admin' WHERE email = $1", email)
	require.NoError(t, err)
	return c, email
}

// LinkOf returns the href of the link with a data-testid, unescaped.
func LinkOf(t *testing.T, body, testID string) string {
	t.Helper()
	m := regexp.MustCompile(`<a href="([^"]+)"[^>]*data-testid="` + regexp.QuoteMeta(testID) + `"`).FindStringSubmatch(body)
	require.NotNil(t, m, "no link %s in %s", testID, body)
	return html.UnescapeString(m[1])
}
