package main_test

import (
	"context"
	"strconv"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/kubebyon/kubebyon/internal/testenv"
)

// TestAdminCommandAudits checks that 'admin create' and 'admin promote'
// leave audit events naming the CLI, and that a failed promote leaves none.
func TestAdminCommandAudits(t *testing.T) {
	t.Parallel()
	dbURL := testenv.DBURL(t)
	env := []string{"DATABASE_URL=" + dbURL, "KUBEBYON_DATA_DIR=" + t.TempDir()}
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, dbURL)
	require.NoError(t, err)
	t.Cleanup(func() { conn.Close(context.Background()) })

	r := kubebyon(t, env, "a long enough password\n", "admin", "create", "--email", "root@example.com", "--password-stdin")
	require.Equal(t, 0, r.code, r.stderr)

	var plainID int64
	require.NoError(t, conn.QueryRow(ctx, "INSERT INTO users (email, name) VALUES ('plain@example.com', 'Plain') RETURNING id").Scan(&plainID))
	r = kubebyon(t, env, "", "admin", "promote", "--email", "Plain@example.com")
	require.Equal(t, 0, r.code, r.stderr)
	r = kubebyon(t, env, "", "admin", "promote", "--email", "nobody@example.com")
	require.Equal(t, 1, r.code)

	var rootID int64
	require.NoError(t, conn.QueryRow(ctx, "SELECT id FROM users WHERE email = 'root@example.com' AND role = 'admin'").Scan(&rootID))
	rows, err := conn.Query(ctx, "SELECT action, actor_id IS NULL, actor_email, target_type, target_id, details->>'email' FROM audit_events ORDER BY id")
	require.NoError(t, err)
	type event struct{ action, actorEmail, targetType, targetID, email string }
	var got []event
	for rows.Next() {
		var e event
		var noActor bool
		require.NoError(t, rows.Scan(&e.action, &noActor, &e.actorEmail, &e.targetType, &e.targetID, &e.email))
		require.True(t, noActor, "the CLI acts as no user")
		got = append(got, e)
	}
	require.NoError(t, rows.Err())
	require.Equal(t, []event{
		{"admin.create_via_cli", "cli", "user", strconv.FormatInt(rootID, 10), "root@example.com"},
		{"admin.promote_via_cli", "cli", "user", strconv.FormatInt(plainID, 10), "plain@example.com"},
	}, got)
}
