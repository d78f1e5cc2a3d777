package main_test

import (
	"context"
	"encoding/base64"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/kubebyon/kubebyon/internal/database"
	"github.com/kubebyon/kubebyon/internal/secrets"
	"github.com/kubebyon/kubebyon/internal/settings"
	"github.com/kubebyon/kubebyon/internal/testenv"
	"github.com/kubebyon/kubebyon/migrations"
	"github.com/kubebyon/kubebyon/queries"
)

// The data of migrations/testdata/v0.1.0-data.sql, made by v0.1.0
// (upgrade_fixture_test.go): the key its secrets are sealed with, its
// accounts and the API key it made.
const (
	upgradeSecretKey     = "a3ViZWJ5b24gdjAuMS4wIHVwZ3JhZGUgZml4dHVyZSE=" // "kubebyon v0.1.0 upgrade fixture!"
	upgradeAdmin         = "ada@fixture.test"
	upgradeAdminPassword = "admin password of the v0.1.0 fixture"
	upgradeUser          = "uma@fixture.test"
	upgradeUserPassword  = "user password of the v0.1.0 fixture"
	upgradeAPIKeyV010    = "kbn_77mlfghb_2rzvvgifquepmkql2ccjktcb525smrd5"
)

func upgradeKey(t *testing.T) []byte {
	t.Helper()
	key, err := base64.StdEncoding.DecodeString(upgradeSecretKey)
	require.NoError(t, err)
	return key
}

// upgradeReleases are the tagged releases with a data fixture: the last
// migration of each, the API key its fixture holds, and when the fixture
// was made (its newest row; shiftFixtureTimes moves every time by the age
// of the fixture, so the test sees the data as fresh as it was made).
var upgradeReleases = []struct {
	tag    string
	schema int32
	apiKey string
	madeAt time.Time
}{
	{"v0.1.0", 44, upgradeAPIKeyV010, time.Date(2026, 12, 3, 5, 12, 1, 0, time.UTC)},
}

// TestUpgradeFromRelease: a released schema, with the data that release's
// platform made in it, migrates to this build's, and this build serves it:
// the user signs in with their password and sees their clusters and a join
// token's command (its value sealed by the release, opened with the same
// key), their API key works on the API, the admin's pages list the users
// and clusters.
func TestUpgradeFromRelease(t *testing.T) {
	t.Parallel()
	for _, rel := range upgradeReleases {
		t.Run(rel.tag, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			url := testenv.EmptyDBURL(t)
			pool, err := database.Connect(ctx, url)
			require.NoError(t, err)
			defer pool.Close()
			require.NoError(t, migrations.UpTo(ctx, pool, rel.schema))
			fixture, err := os.ReadFile(filepath.Join("..", "..", "migrations", "testdata", rel.tag+"-data.sql"))
			require.NoError(t, err)
			// On a connection of its own: the dump's SETs stay there. The
			// dump holds every row of the release's database, the ones its
			// migrations seed (the default plan) too: those go first.
			conn, err := pgx.Connect(ctx, url)
			require.NoError(t, err)
			_, err = conn.Exec(ctx, `DO $$ DECLARE t text; BEGIN
				FOR t IN SELECT tablename FROM pg_tables WHERE schemaname = 'public' AND tablename NOT IN ('schema_version', 'river_migration') LOOP
					EXECUTE format('TRUNCATE public.%I CASCADE', t);
				END LOOP; END $$`)
			require.NoError(t, err)
			_, err = conn.Exec(ctx, notSQL.ReplaceAllString(string(fixture), ""))
			require.NoError(t, err, "load %s's data into its schema", rel.tag)
			shiftFixtureTimes(ctx, t, conn, time.Since(rel.madeAt))
			require.NoError(t, conn.Close(ctx))
			res, err := migrations.Up(ctx, pool)
			require.NoError(t, err, "migrate %s's data to this build's schema", rel.tag)
			require.Equal(t, rel.schema, res.FromVersion)
			require.NoError(t, migrations.Check(ctx, pool))

			// The sealed secrets open with the release's key.
			box, err := secrets.New(upgradeKey(t))
			require.NoError(t, err)
			_, err = settings.Load(ctx, queries.New(pool), box)
			require.NoError(t, err)
			rows, err := pool.Query(ctx, "SELECT sealed_token FROM join_tokens")
			require.NoError(t, err)
			sealed, err := pgx.CollectRows(rows, pgx.RowTo[string])
			require.NoError(t, err)
			require.NotEmpty(t, sealed)
			var tokenValues []string
			for _, s := range sealed {
				v, err := box.Open(s)
				require.NoError(t, err)
				tokenValues = append(tokenValues, string(v))
			}
			// Every user of the release has a personal organization, of
			// which they are the only member, as its owner.
			var users, personal int
			require.NoError(t, pool.QueryRow(ctx, `SELECT
				(SELECT count(*) FROM users),
				(SELECT count(*) FROM users u
				   JOIN organizations o ON o.personal_of = u.id
				   JOIN organization_members m ON m.org_id = o.id AND m.user_id = u.id AND m.role = 'owner'
				  WHERE (SELECT count(*) FROM organization_members x WHERE x.org_id = o.id) = 1)`).Scan(&users, &personal))
			require.Positive(t, users)
			require.Equal(t, users, personal, "every user of %s has a personal organization", rel.tag)
			// Each user's subscription, as the release kept it, is their
			// personal organization's (migration 059), and so is every
			// order they placed.
			var subscribed, misplaced int
			require.NoError(t, pool.QueryRow(ctx, `SELECT
				(SELECT count(*) FROM users u
				   JOIN organizations o ON o.personal_of = u.id
				   JOIN subscriptions s ON s.org_id = o.id),
				(SELECT count(*) FROM orders x JOIN organizations o ON o.personal_of = x.user_id WHERE x.org_id <> o.id)`).Scan(&subscribed, &misplaced))
			require.Equal(t, users, subscribed, "every user of %s has their subscription in their personal organization", rel.tag)
			require.Zero(t, misplaced, "every order of %s is its user's personal organization's", rel.tag)

			var webID int64
			require.NoError(t, pool.QueryRow(ctx, "SELECT id FROM clusters WHERE name = 'web'").Scan(&webID))
			// Every cluster is in its maker's personal organization.
			var clusters, inPersonal int
			require.NoError(t, pool.QueryRow(ctx, `SELECT count(*),
				count(*) FILTER (WHERE org_id = (SELECT o.id FROM organizations o WHERE o.personal_of = c.owner_id))
				FROM clusters c`).Scan(&clusters, &inPersonal))
			require.Positive(t, clusters)
			require.Equal(t, clusters, inPersonal, "every cluster of %s lands in its maker's personal organization", rel.tag)

			s := startServe(t, []string{"DATABASE_URL=" + url, "KUBEBYON_DATA_DIR=" + t.TempDir(), "KUBEBYON_SECRET_KEY=" + upgradeSecretKey})
			s.waitReady(t)

			user := newWeb(t, s)
			user.signIn(upgradeUser, upgradeUserPassword)
			code, body := user.get("/clusters")
			require.Equal(t, http.StatusOK, code)
			require.Contains(t, body, "web")
			require.Contains(t, body, "db")
			code, body = user.get(fmt.Sprintf("/clusters/%d/tokens", webID))
			require.Equal(t, http.StatusOK, code)
			for _, v := range tokenValues {
				require.Contains(t, body, "/join/"+v+" | sudo sh", "the join command of a token %s made", rel.tag)
			}
			code, _ = user.get("/notifications")
			require.Equal(t, http.StatusOK, code)

			req, err := http.NewRequest(http.MethodGet, "http://"+s.addr+"/api/v1/clusters", nil)
			require.NoError(t, err)
			req.Header.Set("Authorization", "Bearer "+rel.apiKey)
			resp, body := user.do(req)
			require.Equal(t, http.StatusOK, resp.StatusCode, body)
			require.Contains(t, body, `"web"`)

			admin := newWeb(t, s)
			admin.signIn(upgradeAdmin, upgradeAdminPassword)
			for path, want := range map[string]string{"/admin/users": upgradeUser, "/admin/clusters": "web", "/admin/plans": "free"} {
				code, body := admin.get(path)
				require.Equal(t, http.StatusOK, code, path)
				require.Contains(t, body, want, path)
			}
			// The release made no order (that needs Stripe): the page reads
			// the table all the same.
			code, _ = admin.get("/admin/orders")
			require.Equal(t, http.StatusOK, code)
			s.stop(t)
		})
	}
}

// shiftFixtureTimes moves every time and date in the public tables by by:
// a fixture's join tokens, sessions and subscriptions expire relative to
// when it was made, and the test must pass on any day it runs.
func shiftFixtureTimes(ctx context.Context, t *testing.T, conn *pgx.Conn, by time.Duration) {
	t.Helper()
	_, err := conn.Exec(ctx, fmt.Sprintf(`DO $$ DECLARE c record; BEGIN
		FOR c IN SELECT col.table_name, col.column_name FROM information_schema.columns col
			JOIN pg_tables tab ON tab.schemaname = col.table_schema AND tab.tablename = col.table_name
			WHERE col.table_schema = 'public' AND col.is_generated = 'NEVER'
				AND col.data_type IN ('timestamp with time zone', 'timestamp without time zone', 'date') LOOP
			EXECUTE format('UPDATE public.%%I SET %%I = %%I + interval %%L', c.table_name, c.column_name, c.column_name, '%d microseconds');
		END LOOP; END $$`, by.Microseconds()))
	require.NoError(t, err, "shift the fixture's times by %s", by)
}

// notSQL matches what of pg_dump's script is not to run here: psql's
// meta-commands (\restrict ...), and the empty search_path, under which
// the triggers' functions, which name tables unqualified as the
// migrations do, would not find them.
var notSQL = regexp.MustCompile(`(?m)^(\\.*|SELECT pg_catalog\.set_config\('search_path', '', false\);)$`)

// TestServeRefusesNewerSchema: a build older than the database's schema
// does not start on it, and names the release that migrated it (migrate
// records it), or says to run a newer one when none is recorded.
func TestServeRefusesNewerSchema(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	url := testenv.EmptyDBURL(t)
	env := []string{"DATABASE_URL=" + url, "KUBEBYON_DATA_DIR=" + t.TempDir()}
	r := kubebyon(t, env, "", "migrate")
	require.Equal(t, 0, r.code, r.stderr)
	pool, err := database.Connect(ctx, url)
	require.NoError(t, err)
	defer pool.Close()
	var stamp string
	require.NoError(t, pool.QueryRow(ctx, "SELECT obj_description('public.schema_version'::regclass, 'pg_class')").Scan(&stamp))
	v := kubebyon(t, nil, "", "version")
	require.Equal(t, "kubebyon "+strings.Fields(v.stdout)[1], stamp, "migrate records the build that migrated")

	var have int32
	require.NoError(t, pool.QueryRow(ctx, "UPDATE schema_version SET version = version + 1 RETURNING version").Scan(&have))
	require.NoError(t, migrations.Stamp(ctx, pool, "kubebyon v9.9.9"))
	start := time.Now()
	r = kubebyon(t, env, "", "serve", "--listen", freeAddr(t), "--metrics-listen", freeAddr(t))
	require.Equal(t, 1, r.code, r.stderr)
	require.Less(t, time.Since(start), 30*time.Second)
	lines := strings.Split(strings.TrimSpace(r.stderr), "\n")
	require.Contains(t, lines[len(lines)-1], fmt.Sprintf("schema version %d is newer than this build knows (%d); kubebyon v9.9.9 migrated it: run that release or a newer one", have, have-1))

	// A schema migrated before releases were recorded.
	_, err = pool.Exec(ctx, "COMMENT ON TABLE schema_version IS NULL")
	require.NoError(t, err)
	r = kubebyon(t, env, "", "serve", "--listen", freeAddr(t), "--metrics-listen", freeAddr(t))
	require.Equal(t, 1, r.code, r.stderr)
	require.Contains(t, r.stderr, fmt.Sprintf("schema version %d is newer than this build knows (%d); run the newer kubebyon release", have, have-1))
}
