package orgs_test

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/jackc/pgx/v5/pgtype"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/kubebyon/kubebyon/internal/audit"
	"github.com/kubebyon/kubebyon/internal/orgs"
	"github.com/kubebyon/kubebyon/internal/testenv"
	"github.com/kubebyon/kubebyon/queries"
)

// TestDelete: only an owner deletes a team, and only one with no
// clusters left (deleted ones aside) and no orders; its members,
// invitations, webhook channels, subscription and API keys go with it,
// the rows of its deleted clusters first. Each case runs on a team of its
// own.
func TestDelete(t *testing.T) {
	t.Parallel()
	pool := testenv.DB(t)
	ctx := context.Background()
	s := &orgs.Service{Pool: pool}
	for i, tt := range []struct {
		name string
		// setup readies the team; its actor deletes it (orgID: which).
		setup func(t *testing.T, tm team)
		actor func(team) audit.Actor
		orgID func(team) int64
		want  error
		// left is what is left of a deleted team (a closed one's).
		left map[string]int
	}{
		{name: "owner deletes", actor: pick("owner")},
		{name: "second owner deletes", actor: pick("owner2")},
		{name: "owner deletes, its deleted clusters purged", actor: pick("owner"), setup: func(t *testing.T, tm team) {
			newOrgCluster(t, pool, tm, "gone1", "deleted")
			newOrgCluster(t, pool, tm, "gone2", "deleted")
		}},
		{name: "admin deletes", actor: pick("admin"), want: orgs.ErrForbidden},
		{name: "member deletes", actor: pick("member"), want: orgs.ErrForbidden},
		{name: "viewer deletes", actor: pick("viewer"), want: orgs.ErrForbidden},
		{name: "outsider deletes", actor: pick("outsider"), want: orgs.ErrNotFound},
		{
			name: "owner deletes their personal organization", actor: pick("owner"), want: orgs.ErrPersonalDelete,
			orgID: func(tm team) int64 { return personalOf(t, pool, tm.owner.UserID) },
		},
		{name: "owner deletes a team with clusters", actor: pick("owner"), want: orgs.HasClustersError{Count: 2}, setup: func(t *testing.T, tm team) {
			newOrgCluster(t, pool, tm, "live", "pending")
			newOrgCluster(t, pool, tm, "going", "deleting")
			newOrgCluster(t, pool, tm, "gone", "deleted")
		}},
		{name: "owner deletes a team with an order waiting for payment", actor: pick("owner"), want: orgs.ErrHasPendingOrder, setup: func(t *testing.T, tm team) {
			order(t, pool, tm, "pending")
		}},
		{
			name: "owner deletes a team with past orders: closed, its row kept for them", actor: pick("owner"),
			setup: func(t *testing.T, tm team) { order(t, pool, tm, "cancelled"); order(t, pool, tm, "cancelled") },
			left:  map[string]int{"organizations": 1, "orders": 2, "subscriptions": 1},
		},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			tm := newTeam(t, pool, s, fmt.Sprintf("d%d", i))
			// A webhook channel, an API key and an invitation of the team,
			// which go with it.
			_, err := pool.Exec(ctx, `INSERT INTO webhook_channels (org_id, user_id, kind, name, url_sealed, url_host)
				VALUES ($1, $2, 'generic', 'ops', 'sealed', 'example.com')`, tm.id, tm.admin.UserID)
			require.NoError(t, err)
			_, err = pool.Exec(ctx, `INSERT INTO api_keys (user_id, org_id, name, prefix, secret_hash, scope)
				VALUES ($1, $2, 'ci', $3, 'hash', 'write')`, tm.member.UserID, tm.id, fmt.Sprintf("kbdel%d", i))
			require.NoError(t, err)
			_, err = pool.Exec(ctx, `INSERT INTO org_invitations (org_id, email, role, token_hash, invited_by, expires_at)
				VALUES ($1, 'sealed', 'member', $2, $3, now() + interval '1 day')`, tm.id, fmt.Sprintf("tokdel%d", i), tm.owner.UserID)
			require.NoError(t, err)
			if tt.setup != nil {
				tt.setup(t, tm)
			}
			id := tm.id
			if tt.orgID != nil {
				id = tt.orgID(tm)
			}
			before := rowsOf(t, pool, id)

			err = s.Delete(ctx, id, tt.actor(tm))
			if tt.want != nil {
				require.ErrorIs(t, err, tt.want)
				if want := (orgs.HasClustersError{}); errors.As(tt.want, &want) {
					var got orgs.HasClustersError
					require.ErrorAs(t, err, &got)
					require.Equal(t, want.Count, got.Count, "the clusters to delete first")
				}
				require.Equal(t, before, rowsOf(t, pool, id), "nothing changed")
				return
			}
			require.NoError(t, err)
			left := tt.left
			if left == nil {
				left = map[string]int{}
			}
			require.Equal(t, left, rowsOf(t, pool, id), "nothing is left of it but what its orders need")
			if tt.left != nil {
				var closed bool
				var plan, status string
				require.NoError(t, pool.QueryRow(ctx, `SELECT o.closed_at IS NOT NULL, p.name, s.status FROM organizations o
					JOIN subscriptions s ON s.org_id = o.id JOIN plans p ON p.id = s.plan_id WHERE o.id = $1`, id).Scan(&closed, &plan, &status))
				require.True(t, closed)
				require.Equal(t, "cancelled", status, "its subscription renews nothing")
				var isDefault bool
				require.NoError(t, pool.QueryRow(ctx, "SELECT is_default FROM plans WHERE name = $1", plan).Scan(&isDefault))
				require.True(t, isDefault)
				orgList, err := s.List(ctx, tm.owner.UserID)
				require.NoError(t, err)
				for _, m := range orgList {
					require.NotEqual(t, id, m.Org.ID, "no longer listed to its members")
				}
			}
			var audits int
			require.NoError(t, pool.QueryRow(ctx, "SELECT count(*) FROM audit_events WHERE action = 'org.delete' AND target_id = $1 AND actor_id = $2",
				fmt.Sprint(id), tt.actor(tm).UserID).Scan(&audits))
			require.Equal(t, 1, audits)
			// Its members keep their accounts and personal organizations.
			for _, who := range []audit.Actor{tm.owner, tm.admin, tm.member, tm.viewer} {
				_, err := s.Personal(ctx, who.UserID)
				require.NoError(t, err)
			}
			_, err = s.Get(ctx, tm.owner.UserID, id)
			require.ErrorIs(t, err, orgs.ErrNotFound)
		})
	}
}

// rowsOf counts the rows that name organization id, by table, those with
// none left out.
func rowsOf(t *testing.T, pool *pgxpool.Pool, id int64) map[string]int {
	t.Helper()
	out := map[string]int{}
	for _, table := range []string{"organizations", "organization_members", "subscriptions", "webhook_channels", "api_keys", "org_invitations", "clusters", "orders"} {
		col := "org_id"
		if table == "organizations" {
			col = "id"
		}
		var n int
		require.NoError(t, pool.QueryRow(context.Background(), fmt.Sprintf("SELECT count(*) FROM %s WHERE %s = $1", table, col), id).Scan(&n))
		if n > 0 {
			out[table] = n
		}
	}
	return out
}

// newOrgCluster makes a cluster of team tm in status, made by its member.
func newOrgCluster(t *testing.T, pool *pgxpool.Pool, tm team, name, status string) {
	t.Helper()
	ctx := context.Background()
	q := queries.New(pool)
	cl, err := q.ClusterCreate(ctx, queries.ClusterCreateParams{
		OrgID: pgtype.Int8{Int64: tm.id, Valid: true}, OwnerID: tm.member.UserID, Name: name,
		Slug: fmt.Sprintf("%s-%d", name, tm.id), KubernetesVersion: "v1.34.0", PublicAccessMode: "nodeport",
	})
	require.NoError(t, err)
	_, err = pool.Exec(ctx, "UPDATE clusters SET status = $2 WHERE id = $1", cl.ID, status)
	require.NoError(t, err)
}

// personalOf is userID's personal organization.
func personalOf(t *testing.T, pool *pgxpool.Pool, userID int64) int64 {
	t.Helper()
	var id int64
	require.NoError(t, pool.QueryRow(context.Background(), "SELECT id FROM organizations WHERE personal_of = $1", userID).Scan(&id))
	return id
}

// order adds an order of the team in status, placed by its owner.
func order(t *testing.T, pool *pgxpool.Pool, tm team, status string) {
	t.Helper()
	_, err := pool.Exec(context.Background(), `INSERT INTO orders (user_id, org_id, plan_id, period, kind, currency, amount, total, method, status, expires_at)
		VALUES ($1, $2, (SELECT id FROM plans WHERE is_default), 'month', 'new', 'USD', 0, 0, 'manual', $3, now() + interval '1 day')`, tm.owner.UserID, tm.id, status)
	require.NoError(t, err)
}
