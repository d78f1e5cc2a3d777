package main_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/kubebyon/kubebyon/internal/database"
	"github.com/kubebyon/kubebyon/internal/pgserver"
	"github.com/kubebyon/kubebyon/internal/testenv"
)

// TestBackupAndRestore: the embedded database backed up (with its key)
// and restored into a fresh data directory holds the same rows, the
// platform serves it (the admin signs in with their password), a second
// restore over it is refused without --force, and a restore under a
// running serve is refused.
func TestBackupAndRestore(t *testing.T) {
	t.Parallel()
	base := t.TempDir()
	dataA, dataB := filepath.Join(base, "a"), filepath.Join(base, "b")
	file := filepath.Join(base, "kubebyon.backup")
	envA := []string{"KUBEBYON_DATA_DIR=" + dataA}
	envB := []string{"KUBEBYON_DATA_DIR=" + dataB}

	s := startServe(t, envA, "--migrate")
	s.waitReady(t)
	for _, email := range []string{"ops@example.com", "second@example.com"} {
		r := kubebyon(t, envA, "correct horse battery staple\n", "admin", "create", "--email", email, "--password-stdin")
		require.Equal(t, 0, r.code, r.stderr)
	}
	r := kubebyon(t, envA, "", "admin", "edge-token", "--name", "edge-1")
	require.Equal(t, 0, r.code, r.stderr)
	w := newWeb(t, s)
	w.signIn("ops@example.com", "correct horse battery staple")
	s.stop(t)

	// Without --to: a usage error.
	r = kubebyon(t, envA, "", "backup")
	require.Equal(t, 2, r.code, r.stderr)
	require.Contains(t, r.stderr, "--to FILE is required")

	// Not running: backup starts the embedded server itself.
	r = kubebyon(t, envA, "", "backup", "--to", file, "--include-secret-key")
	require.Equal(t, 0, r.code, r.stderr)
	require.Contains(t, r.stdout, "wrote "+file)
	require.Contains(t, r.stdout, "secret key is in this backup")
	fi, err := os.Stat(file)
	require.NoError(t, err)
	require.Equal(t, os.FileMode(0o600), fi.Mode().Perm(), "a backup holds password hashes: its owner's only")
	require.NoFileExists(t, filepath.Join(dataA, "postgres", "pgdata", "postmaster.pid"), "backup left PostgreSQL running")

	r = kubebyon(t, envB, "", "restore", "--from", file)
	require.Equal(t, 0, r.code, r.stderr)
	require.Contains(t, r.stdout, "restored "+file)
	require.Contains(t, r.stdout, "secret key was written to "+filepath.Join(dataB, "secret.key"))
	keyA, err := os.ReadFile(filepath.Join(dataA, "secret.key"))
	require.NoError(t, err)
	keyB, err := os.ReadFile(filepath.Join(dataB, "secret.key"))
	require.NoError(t, err)
	require.Equal(t, keyA, keyB)

	countsA, usersA := embeddedSnapshot(t, dataA)
	countsB, usersB := embeddedSnapshot(t, dataB)
	require.Equal(t, countsA, countsB)
	require.Equal(t, usersA, usersB)
	require.Equal(t, 2, countsB["users"])
	require.Positive(t, countsB["sessions"], "the sign-in's session")
	require.Equal(t, 1, countsB["edge_tokens"])

	r = kubebyon(t, envB, "", "restore", "--from", file)
	require.Equal(t, 1, r.code, r.stdout)
	require.Contains(t, r.stderr, "the database is not empty")
	require.Contains(t, r.stderr, "--force")

	s = startServe(t, envB)
	s.waitReady(t)
	w = newWeb(t, s)
	w.signIn("ops@example.com", "correct horse battery staple")
	code, body := w.get("/admin/users")
	require.Equal(t, 200, code)
	require.Contains(t, body, "second@example.com")

	r = kubebyon(t, envB, "", "restore", "--from", file, "--force")
	require.Equal(t, 1, r.code, r.stdout)
	require.Contains(t, r.stderr, "kubebyon serve or worker is running the embedded PostgreSQL in "+dataB+": stop it first")

	// Under a running serve, backup shares its PostgreSQL. Without the key
	// in it, it says where the key is.
	second := filepath.Join(base, "second.backup")
	r = kubebyon(t, envB, "", "backup", "--to", second)
	require.Equal(t, 0, r.code, r.stderr)
	require.Contains(t, r.stdout, "Keep the platform's secret key too")
	require.Contains(t, r.stdout, filepath.Join(dataB, "secret.key"))
	s.stop(t)

	// --force replaces what the database holds.
	r = kubebyon(t, envB, "", "restore", "--from", second, "--force")
	require.Equal(t, 0, r.code, r.stderr)
	require.Contains(t, r.stdout, "This backup holds no secret key")
	countsB2, usersB2 := embeddedSnapshot(t, dataB)
	require.Equal(t, countsB["users"], countsB2["users"])
	// The admin signed in again before this backup; the other did not.
	require.Contains(t, usersB2[0], "ops@example.com")
	require.Equal(t, usersB[1], usersB2[1])
}

// TestBackupWithDatabaseURL: with DATABASE_URL, backup and restore use
// pg_dump and pg_restore on that server.
func TestBackupWithDatabaseURL(t *testing.T) {
	t.Parallel()
	from, to := testenv.DBURL(t), testenv.EmptyDBURL(t)
	file := filepath.Join(t.TempDir(), "kubebyon.backup")
	env := []string{"DATABASE_URL=" + from, "KUBEBYON_DATA_DIR=" + t.TempDir(), "KUBEBYON_SECRET_KEY=" + strings.Repeat("A", 43) + "="}
	r := kubebyon(t, env, "pw of the external one\n", "admin", "create", "--email", "ext@example.com", "--password-stdin")
	require.Equal(t, 0, r.code, r.stderr)
	r = kubebyon(t, env, "", "backup", "--to", file)
	require.Equal(t, 0, r.code, r.stderr)
	require.Contains(t, r.stdout, "the value of KUBEBYON_SECRET_KEY")

	env[0] = "DATABASE_URL=" + to
	r = kubebyon(t, env, "", "restore", "--from", file)
	require.Equal(t, 0, r.code, r.stderr)
	countsFrom, usersFrom := snapshot(t, from)
	countsTo, usersTo := snapshot(t, to)
	require.Equal(t, countsFrom, countsTo)
	require.Equal(t, usersFrom, usersTo)
	require.Len(t, usersTo, 1)

	// A database without the platform's schema: nothing to back up.
	r = kubebyon(t, []string{"DATABASE_URL=" + testenv.EmptyDBURL(t), "KUBEBYON_DATA_DIR=" + t.TempDir()}, "", "backup", "--to", filepath.Join(t.TempDir(), "empty.backup"))
	require.Equal(t, 1, r.code, r.stdout)
	require.Contains(t, r.stderr, "the database holds no KubeBYON schema")

	// Not a backup: said so, nothing touched.
	notBackup := filepath.Join(t.TempDir(), "notes.txt")
	require.NoError(t, os.WriteFile(notBackup, []byte("hello"), 0o600))
	r = kubebyon(t, env, "", "restore", "--from", notBackup)
	require.Equal(t, 1, r.code)
	require.Contains(t, r.stderr, "is not a kubebyon backup")
}

// embeddedSnapshot starts the embedded PostgreSQL of a data dir and takes
// snapshot of its database.
func embeddedSnapshot(t *testing.T, dataDir string) (map[string]int, []string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	srv, err := pgserver.Start(ctx, pgserver.Options{Dir: filepath.Join(dataDir, "postgres"), Database: database.EmbeddedName})
	require.NoError(t, err)
	defer func() { require.NoError(t, srv.Stop(context.Background())) }()
	return snapshot(t, srv.URL())
}

// snapshot is the row count of every table, and every user's row as text.
func snapshot(t *testing.T, url string) (map[string]int, []string) {
	t.Helper()
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, url)
	require.NoError(t, err)
	defer conn.Close(ctx)
	rows, err := conn.Query(ctx, "SELECT tablename FROM pg_tables WHERE schemaname = 'public' ORDER BY 1")
	require.NoError(t, err)
	tables, err := pgx.CollectRows(rows, pgx.RowTo[string])
	require.NoError(t, err)
	require.NotEmpty(t, tables)
	counts := map[string]int{}
	for _, table := range tables {
		var n int
		require.NoError(t, conn.QueryRow(ctx, fmt.Sprintf("SELECT count(*) FROM %s", pgx.Identifier{table}.Sanitize())).Scan(&n))
		counts[table] = n
	}
	rows, err = conn.Query(ctx, "SELECT u::text FROM users u ORDER BY id")
	require.NoError(t, err)
	users, err := pgx.CollectRows(rows, pgx.RowTo[string])
	require.NoError(t, err)
	return counts, users
}
