package notify_test

import (
	"bytes"
	"context"
	"slices"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgtype"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/riverqueue/river"
	"github.com/riverqueue/river/riverdriver/riverpgxv5"
	"github.com/stretchr/testify/require"

	"github.com/kubebyon/kubebyon/internal/notify"
	"github.com/kubebyon/kubebyon/internal/orgs"
	"github.com/kubebyon/kubebyon/internal/secrets"
	"github.com/kubebyon/kubebyon/internal/testenv"
	"github.com/kubebyon/kubebyon/queries"
)

func TestMain(m *testing.M) { testenv.Main(m) }

// teamBundle is a team organization with a member in each role, one more
// member ("quiet") who turned node alerts off, a cluster and a webhook
// channel the admin added; and a user ("solo") alone in their personal
// organization, with a cluster and a channel of their own.
type teamBundle struct {
	pool    *pgxpool.Pool
	notices notify.Notices
	// users by name: owner, admin, member, quiet, viewer, solo.
	users              map[string]queries.User
	team, solo         queries.Cluster
	teamHook, soloHook int64
}

func setupTeam(t *testing.T) *teamBundle {
	t.Helper()
	ctx := context.Background()
	pool := testenv.DB(t)
	q := queries.New(pool)
	box, err := secrets.New(bytes.Repeat([]byte{3}, 32))
	require.NoError(t, err)
	rc, err := river.NewClient(riverpgxv5.New(pool), &river.Config{})
	require.NoError(t, err)
	b := &teamBundle{pool: pool, notices: notify.Notices{Box: box, River: rc}, users: map[string]queries.User{}}
	for _, name := range []string{"owner", "admin", "member", "quiet", "viewer", "solo"} {
		u, err := q.UserCreate(ctx, queries.UserCreateParams{Email: name + "@example.com", Name: name, Role: "user"})
		require.NoError(t, err)
		b.users[name] = u
	}
	org, err := q.OrgCreate(ctx, queries.OrgCreateParams{Name: "team", CreatedBy: pgtype.Int8{Int64: b.users["owner"].ID, Valid: true}})
	require.NoError(t, err)
	for name, role := range map[string]orgs.Role{"owner": orgs.Owner, "admin": orgs.Admin, "member": orgs.Member, "quiet": orgs.Member, "viewer": orgs.Viewer} {
		require.NoError(t, q.OrgMemberAdd(ctx, queries.OrgMemberAddParams{OrgID: org.ID, UserID: b.users[name].ID, Role: string(role)}))
	}
	for _, c := range []notify.Channel{notify.InApp, notify.Email} {
		require.NoError(t, q.NotificationPreferenceSet(ctx, queries.NotificationPreferenceSetParams{
			UserID: b.users["quiet"].ID, Kind: string(notify.NodeNotReady), Channel: string(c), Enabled: false,
		}))
	}
	// The admin who adds the team's channel wants no certificate news
	// there: the channel gets none.
	require.NoError(t, q.NotificationPreferenceSet(ctx, queries.NotificationPreferenceSetParams{
		UserID: b.users["admin"].ID, Kind: string(notify.Certificate), Channel: string(notify.Webhook), Enabled: false,
	}))
	b.team = cluster(t, q, pgtype.Int8{Int64: org.ID, Valid: true}, b.users["member"], "team-cl")
	b.solo = cluster(t, q, pgtype.Int8{}, b.users["solo"], "solo-cl")
	b.teamHook = channel(t, q, org.ID, b.users["admin"].ID)
	personal, err := q.OrgPersonal(ctx, pgtype.Int8{Int64: b.users["solo"].ID, Valid: true})
	require.NoError(t, err)
	b.soloHook = channel(t, q, personal.ID, b.users["solo"].ID)
	return b
}

func cluster(t *testing.T, q *queries.Queries, org pgtype.Int8, maker queries.User, name string) queries.Cluster {
	t.Helper()
	c, err := q.ClusterCreate(context.Background(), queries.ClusterCreateParams{
		OrgID: org, OwnerID: maker.ID, Name: name, Slug: name + "-x1", KubernetesVersion: "v1.34.0", PublicAccessMode: "nodeport",
	})
	require.NoError(t, err)
	return c
}

// channel adds a webhook channel of the organization; its deliveries are
// only queued here, never sent.
func channel(t *testing.T, q *queries.Queries, orgID, makerID int64) int64 {
	t.Helper()
	c, err := q.WebhookChannelCreate(context.Background(), queries.WebhookChannelCreateParams{
		OrgID: pgtype.Int8{Int64: orgID, Valid: true}, UserID: pgtype.Int8{Int64: makerID, Valid: true},
		Kind: "slack", Name: "hook", UrlSealed: "sealed", UrlHost: "hooks.example.com", Lang: "en",
	})
	require.NoError(t, err)
	return c.ID
}

// tell tells c's organization of kind in one transaction.
func (b *teamBundle) tell(t *testing.T, c queries.Cluster, kind notify.Kind, template string) int64 {
	t.Helper()
	ctx := context.Background()
	var id int64
	require.NoError(t, pgx.BeginFunc(ctx, b.pool, func(tx pgx.Tx) error {
		var err error
		id, err = b.notices.TellCluster(ctx, tx, c, kind, template, map[string]any{"Node": "n1"})
		return err
	}))
	return id
}

// strings runs a query of one text column.
func (b *teamBundle) strings(t *testing.T, sql string, args ...any) []string {
	t.Helper()
	rows, err := b.pool.Query(context.Background(), sql, args...)
	require.NoError(t, err)
	out, err := pgx.CollectRows(rows, pgx.RowTo[string])
	require.NoError(t, err)
	slices.Sort(out)
	return out
}

// told is who has an in-app notification of template, and who is queued
// an email of it, by name.
func (b *teamBundle) told(t *testing.T, template string) (inApp, email []string) {
	t.Helper()
	inApp = b.strings(t, "SELECT u.name FROM notifications n JOIN users u ON u.id = n.user_id WHERE n.message = $1", template)
	email = b.strings(t, "SELECT u.name FROM river_job j JOIN users u ON u.email = j.args->>'to' WHERE j.kind = 'email' AND j.args->>'template' = $1", template)
	return inApp, email
}

// hooks is the channels a delivery of kind is queued to.
func (b *teamBundle) hooks(t *testing.T, kind notify.Kind) []int64 {
	t.Helper()
	rows, err := b.pool.Query(context.Background(), "SELECT (args->>'channel_id')::bigint FROM river_job WHERE kind = 'webhook_delivery' AND args->>'event_kind' = $1 ORDER BY 1", string(kind))
	require.NoError(t, err)
	out, err := pgx.CollectRows(rows, pgx.RowTo[int64])
	require.NoError(t, err)
	return out
}

// TestTellClusterByRole: an event of a team's cluster reaches its members
// by role and preference: failures the owners and admins, node and
// cluster news every member who did not turn it off, never a viewer; the
// team's webhook channel gets the kinds its maker ticked, another
// organization's channel nothing.
func TestTellClusterByRole(t *testing.T) {
	t.Parallel()
	b := setupTeam(t)
	tests := []struct {
		kind     notify.Kind
		template string
		inApp    []string
		email    []string
		hook     bool
	}{
		{notify.ClusterFailed, notify.EmailClusterFailed, []string{"admin", "owner"}, []string{"admin", "owner"}, true},
		{notify.ControlPlane, notify.EmailControlPlaneErrors, []string{"admin", "owner"}, []string{"admin", "owner"}, true},
		{notify.Ingress, notify.EmailIngressFailed, []string{"admin", "owner"}, []string{"admin", "owner"}, true},
		{notify.Hostname, notify.EmailHostnameBroken, []string{"admin", "owner"}, []string{"admin", "owner"}, true},
		{notify.Certificate, notify.EmailCertificateFailed, []string{"admin", "owner"}, []string{"admin", "owner"}, false},
		{notify.NodeNotReady, notify.EmailNodeNotReady, []string{"admin", "member", "owner"}, []string{"admin", "member", "owner"}, true},
		{notify.JoinTokenUsed, notify.EmailNodeJoined, []string{"admin", "member", "owner", "quiet"}, []string{}, false},
		{notify.ClusterReady, notify.EmailClusterReady, []string{"admin", "member", "owner", "quiet"}, []string{}, false},
		{notify.ClusterAdmin, notify.EmailClusterAdminSuspended, []string{"admin", "member", "owner", "quiet"}, []string{"admin", "member", "owner", "quiet"}, true},
	}
	for _, tt := range tests {
		t.Run(string(tt.kind), func(t *testing.T) {
			t.Parallel()
			id := b.tell(t, b.team, tt.kind, tt.template)
			require.NotZero(t, id)
			inApp, email := b.told(t, tt.template)
			require.Equal(t, tt.inApp, inApp, "in-app")
			require.Equal(t, tt.email, email, "email")
			want := []int64{}
			if tt.hook {
				want = []int64{b.teamHook}
			}
			require.Equal(t, want, b.hooks(t, tt.kind), "webhooks")
			require.Equal(t, []string{"team"}, b.strings(t, "SELECT DISTINCT params->>'Org' FROM notifications WHERE message = $1", tt.template),
				"the notice names the team")
		})
	}
}

// TestTellClusterPersonal: in a personal organization its user hears of
// every event of their cluster, as when clusters were people's, and
// their channel gets it; the team's channel does not.
func TestTellClusterPersonal(t *testing.T) {
	t.Parallel()
	b := setupTeam(t)
	b.tell(t, b.solo, notify.ClusterFailed, notify.EmailClusterFailed)
	b.tell(t, b.solo, notify.NodeNotReady, notify.EmailNodeNotReady)
	for _, template := range []string{notify.EmailClusterFailed, notify.EmailNodeNotReady} {
		inApp, email := b.told(t, template)
		require.Equal(t, []string{"solo"}, inApp, template)
		require.Equal(t, []string{"solo"}, email, template)
	}
	var named int
	require.NoError(t, b.pool.QueryRow(context.Background(), "SELECT count(*) FROM notifications WHERE user_id = $1 AND params ? 'Org'", b.users["solo"].ID).Scan(&named))
	require.Zero(t, named, "a personal organization's notices name no organization")
	require.Equal(t, []int64{b.soloHook}, b.hooks(t, notify.ClusterFailed))
	require.Equal(t, []int64{b.soloHook}, b.hooks(t, notify.NodeNotReady))
}

// TestNotificationMarkReadEvent: the end of a node alert marks read the
// alert's notification of every member told of it, and nothing else.
func TestNotificationMarkReadEvent(t *testing.T) {
	t.Parallel()
	b := setupTeam(t)
	ctx := context.Background()
	id := b.tell(t, b.team, notify.NodeNotReady, notify.EmailNodeNotReady)
	b.tell(t, b.team, notify.ClusterFailed, notify.EmailClusterFailed)
	b.tell(t, b.solo, notify.NodeNotReady, notify.EmailNodeNotReady)
	require.NoError(t, queries.New(b.pool).NotificationMarkReadEvent(ctx, queries.NotificationMarkReadEventParams{ID: id, OrgID: b.team.OrgID}))
	read := b.strings(t, "SELECT u.name || ' ' || n.message FROM notifications n JOIN users u ON u.id = n.user_id WHERE n.read_at IS NOT NULL")
	require.Equal(t, []string{"admin NodeNotReady", "member NodeNotReady", "owner NodeNotReady"}, read)
}
