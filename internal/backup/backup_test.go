package backup_test

import (
	"archive/tar"
	"bytes"
	"context"
	"encoding/json"
	"io"
	"io/fs"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgtype"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/kubebyon/kubebyon/internal/audit"
	"github.com/kubebyon/kubebyon/internal/backup"
	"github.com/kubebyon/kubebyon/internal/database"
	"github.com/kubebyon/kubebyon/internal/testenv"
	"github.com/kubebyon/kubebyon/migrations"
	"github.com/kubebyon/kubebyon/queries"
)

func TestMain(m *testing.M) { testenv.Main(m) }

// db is a database of the test's own: its URL, for pg_dump and
// pg_restore, and a pool on it.
type db struct {
	url  string
	pool *pgxpool.Pool
}

func connect(t *testing.T, url string) db {
	t.Helper()
	pool, err := database.Connect(context.Background(), url)
	require.NoError(t, err)
	t.Cleanup(pool.Close)
	return db{url: url, pool: pool}
}

// migratedDB is a database with the platform's schema.
func migratedDB(t *testing.T) db { t.Helper(); return connect(t, testenv.DBURL(t)) }

// emptyDB is a database without any schema, to restore into.
func emptyDB(t *testing.T) db { t.Helper(); return connect(t, testenv.EmptyDBURL(t)) }

// sourceDB is a migrated database holding two users, a setting and an
// audit event: rows a restore must bring back.
func sourceDB(t *testing.T) db {
	t.Helper()
	d := migratedDB(t)
	ctx := context.Background()
	q := queries.New(d.pool)
	for _, email := range []string{"ada@example.com", "grace@example.com"} {
		u, err := q.UserCreate(ctx, queries.UserCreateParams{
			Email: email, Name: "Name of " + email, Role: "admin",
			PasswordHash:    pgtype.Text{String: "hash of " + email, Valid: true},
			EmailVerifiedAt: pgtype.Timestamptz{Time: time.Now().Add(-time.Hour), Valid: true},
		})
		require.NoError(t, err)
		require.NoError(t, audit.Record(ctx, q, audit.Actor{UserID: u.ID, Email: email}, audit.Event{
			Action: "user.signup", TargetType: "user", TargetID: email, Details: map[string]any{"via": "test"},
		}))
	}
	require.NoError(t, q.SettingUpsert(ctx, queries.SettingUpsertParams{Key: "mail", Value: []byte(`{"host":"mail.example.com"}`), Secret: true}))
	return d
}

// rows is what a database holds that the tests compare: every user, audit
// event and setting, as text.
func rows(t *testing.T, pool *pgxpool.Pool) []string {
	t.Helper()
	ctx := context.Background()
	var out []string
	for _, sql := range []string{
		"SELECT format('%s|%s|%s|%s|%s|%s', id, email, name, role, password_hash, email_verified_at) FROM users ORDER BY id",
		"SELECT format('%s|%s|%s|%s|%s|%s|%s', id, actor_id, actor_email, action, target_id, details, created_at) FROM audit_events ORDER BY id",
		"SELECT format('%s|%s|%s', key, value, secret) FROM settings ORDER BY key",
	} {
		r, err := pool.Query(ctx, sql)
		require.NoError(t, err)
		got, err := pgx.CollectRows(r, pgx.RowTo[string])
		require.NoError(t, err)
		out = append(out, got...)
	}
	return out
}

func tableCount(t *testing.T, pool *pgxpool.Pool) int {
	t.Helper()
	var n int
	require.NoError(t, pool.QueryRow(context.Background(),
		"SELECT count(*) FROM pg_tables WHERE schemaname NOT IN ('pg_catalog', 'information_schema')").Scan(&n))
	return n
}

// entries is the archive's entries by name, with their contents and modes.
func entries(t *testing.T, path string) map[string]entry {
	t.Helper()
	f, err := os.Open(path)
	require.NoError(t, err)
	defer f.Close()
	out := map[string]entry{}
	tr := tar.NewReader(f)
	for {
		h, err := tr.Next()
		if err == io.EOF {
			return out
		}
		require.NoError(t, err)
		b, err := io.ReadAll(tr)
		require.NoError(t, err)
		out[h.Name] = entry{data: b, mode: h.FileInfo().Mode().Perm()}
	}
}

type entry struct {
	data []byte
	mode fs.FileMode
}

// dirNames is what dir holds.
func dirNames(t *testing.T, dir string) []string {
	t.Helper()
	des, err := os.ReadDir(dir)
	require.NoError(t, err)
	var names []string
	for _, de := range des {
		names = append(names, de.Name())
	}
	return names
}

// TestWriteAndRestore: a backup written from one database and restored
// into an empty one brings back its rows and a current schema; the file is
// its owner's only, alone in its directory, and describes itself.
func TestWriteAndRestore(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	src := sourceDB(t)
	dir := t.TempDir()
	path := filepath.Join(dir, "kubebyon.backup")

	m, err := backup.Write(ctx, src.pool, src.url, path, "v9.9.9-test", nil)
	require.NoError(t, err)
	wantVersion, err := backup.SchemaVersion(ctx, src.pool)
	require.NoError(t, err)
	require.Positive(t, wantVersion)
	require.Equal(t, 1, m.Format)
	require.Equal(t, "v9.9.9-test", m.Version)
	require.Equal(t, wantVersion, m.SchemaVersion)
	require.False(t, m.SecretKey)
	require.WithinDuration(t, time.Now(), m.Created, time.Minute)
	require.Equal(t, time.UTC, m.Created.Location())

	fi, err := os.Stat(path)
	require.NoError(t, err)
	require.Equal(t, fs.FileMode(0o600), fi.Mode().Perm(), "a backup holds password hashes: its owner's only")
	require.Equal(t, []string{"kubebyon.backup"}, dirNames(t, dir), "no temporary files left beside the backup")

	es := entries(t, path)
	require.Len(t, es, 2)
	require.Contains(t, es, "manifest.json")
	require.Contains(t, es, "database.pgdump")
	for name, e := range es {
		require.Equal(t, fs.FileMode(0o600), e.mode, name)
	}
	var written backup.Manifest
	require.NoError(t, json.Unmarshal(es["manifest.json"].data, &written))
	require.Equal(t, m.SchemaVersion, written.SchemaVersion)
	require.True(t, m.Created.Equal(written.Created))
	require.True(t, bytes.HasPrefix(es["database.pgdump"].data, []byte("PGDMP")), "pg_dump's custom format")

	a, err := backup.Open(path)
	require.NoError(t, err)
	t.Cleanup(a.Close)
	require.Equal(t, m.Format, a.Manifest.Format)
	require.Equal(t, m.Version, a.Manifest.Version)
	require.Equal(t, m.SchemaVersion, a.Manifest.SchemaVersion)
	require.False(t, a.Manifest.SecretKey)
	require.True(t, m.Created.Equal(a.Manifest.Created))
	require.Nil(t, a.Key)

	dst := emptyDB(t)
	require.NoError(t, a.Restore(ctx, dst.pool, dst.url, false))

	// A fresh pool: the restore made the tables under the first one.
	restored := connect(t, dst.url)
	want := rows(t, src.pool)
	require.Len(t, want, 2+2+1)
	require.Equal(t, want, rows(t, restored.pool))
	gotVersion, err := backup.SchemaVersion(ctx, restored.pool)
	require.NoError(t, err)
	require.Equal(t, wantVersion, gotVersion)
	require.NoError(t, migrations.Check(ctx, restored.pool), "the platform's and River's schema, current")
	require.Equal(t, tableCount(t, src.pool), tableCount(t, restored.pool))

	// Identities go on after the restored rows.
	u, err := queries.New(restored.pool).UserCreate(ctx, queries.UserCreateParams{Email: "new@example.com", Name: "New", Role: "user"})
	require.NoError(t, err)
	var maxID int64
	require.NoError(t, src.pool.QueryRow(ctx, "SELECT max(id) FROM users").Scan(&maxID))
	require.Greater(t, u.ID, maxID)
}

// TestWriteSecretKey: the secret key is in the archive, and comes back
// from Open, only when asked for.
func TestWriteSecretKey(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	src := migratedDB(t)
	dir := t.TempDir()

	tests := []struct {
		name string
		key  []byte
	}{
		{name: "without key"},
		{name: "with key", key: []byte("c2VjcmV0IGtleSBvZiB0aGUgdGVzdA==\n")},
	}
	for _, tt := range tests {
		path := filepath.Join(dir, strings.ReplaceAll(tt.name, " ", "-")+".backup")
		m, err := backup.Write(ctx, src.pool, src.url, path, "test", tt.key)
		require.NoError(t, err, tt.name)
		require.Equal(t, tt.key != nil, m.SecretKey, tt.name)

		es := entries(t, path)
		e, ok := es["secret.key"]
		require.Equal(t, tt.key != nil, ok, tt.name)
		if tt.key != nil {
			require.Equal(t, tt.key, e.data, tt.name)
			require.Equal(t, fs.FileMode(0o600), e.mode, tt.name)
		}

		a, err := backup.Open(path)
		require.NoError(t, err, tt.name)
		require.Equal(t, tt.key, a.Key, tt.name)
		require.Equal(t, tt.key != nil, a.Manifest.SecretKey, tt.name)
		a.Close()
	}
}

// TestWriteWholeOrNothing: a backup that fails leaves no file, no
// temporary file, and an older backup at the path as it was.
func TestWriteWholeOrNothing(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	src := migratedDB(t)
	empty := emptyDB(t)
	// The pool reads the schema; pg_dump is pointed at a database that is
	// not there.
	missingURL := withDatabase(t, src.url, "kubebyon_no_such_database")

	tests := []struct {
		name    string
		pool    *pgxpool.Pool
		url     string
		old     bool // an older backup is at the path
		wantErr string
	}{
		{
			name: "pg_dump fails", pool: src.pool, url: missingURL, old: true,
			wantErr: "pg_dump: exit status",
		},
		{
			name: "no schema", pool: empty.pool, url: empty.url, old: true,
			wantErr: "the database holds no KubeBYON schema: nothing to back up",
		},
		{
			name: "no schema, no older file", pool: empty.pool, url: empty.url,
			wantErr: "the database holds no KubeBYON schema",
		},
	}
	for _, tt := range tests {
		dir := t.TempDir()
		path := filepath.Join(dir, "kubebyon.backup")
		if tt.old {
			require.NoError(t, os.WriteFile(path, []byte("an older backup"), 0o600), tt.name)
		}
		_, err := backup.Write(ctx, tt.pool, tt.url, path, "test", []byte("key"))
		require.ErrorContains(t, err, tt.wantErr, tt.name)
		if tt.old {
			b, err := os.ReadFile(path)
			require.NoError(t, err, tt.name)
			require.Equal(t, "an older backup", string(b), tt.name)
			require.Equal(t, []string{"kubebyon.backup"}, dirNames(t, dir), tt.name)
		} else {
			require.Empty(t, dirNames(t, dir), tt.name)
		}
	}

	_, err := backup.Write(ctx, src.pool, src.url, filepath.Join(t.TempDir(), "no", "such", "dir", "x.backup"), "test", nil)
	require.ErrorContains(t, err, "create backup file")
}

// withDatabase is conn (a URL or keyword/value string) with its database
// replaced by name.
func withDatabase(t *testing.T, conn, name string) string {
	t.Helper()
	if strings.HasPrefix(conn, "postgres://") || strings.HasPrefix(conn, "postgresql://") {
		u, err := url.Parse(conn)
		require.NoError(t, err)
		u.Path = "/" + name
		return u.String()
	}
	// libpq: the last of a repeated keyword counts.
	return conn + " dbname=" + name
}

// writeBackup writes a backup of a source database with rows.
func writeBackup(t *testing.T) (src db, path string) {
	t.Helper()
	src = sourceDB(t)
	path = filepath.Join(t.TempDir(), "kubebyon.backup")
	_, err := backup.Write(context.Background(), src.pool, src.url, path, "test", nil)
	require.NoError(t, err)
	return src, path
}

// TestRestoreIntoNonEmpty: a database that holds tables is refused
// (ErrNotEmpty) and left as it was, unless forced: then what it held is
// replaced by the backup's.
func TestRestoreIntoNonEmpty(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	src, path := writeBackup(t)
	a, err := backup.Open(path)
	require.NoError(t, err)
	t.Cleanup(a.Close)

	dst := migratedDB(t)
	_, err = queries.New(dst.pool).UserCreate(ctx, queries.UserCreateParams{Email: "only-in-target@example.com", Name: "T", Role: "user"})
	require.NoError(t, err)
	before := rows(t, dst.pool)

	err = a.Restore(ctx, dst.pool, dst.url, false)
	require.ErrorIs(t, err, backup.ErrNotEmpty)
	require.ErrorContains(t, err, "tables)")
	require.Equal(t, before, rows(t, dst.pool), "a refused restore changes nothing")

	require.NoError(t, a.Restore(ctx, dst.pool, dst.url, true))
	restored := connect(t, dst.url)
	require.Equal(t, rows(t, src.pool), rows(t, restored.pool))
	require.NoError(t, migrations.Check(ctx, restored.pool))
	var n int
	require.NoError(t, restored.pool.QueryRow(ctx, "SELECT count(*) FROM users WHERE email = 'only-in-target@example.com'").Scan(&n))
	require.Zero(t, n, "the target's own rows are gone")
}

// TestRestoreWholeOrNothing: a restore that fails part way leaves the
// database without any of the backup's tables, and says why.
func TestRestoreWholeOrNothing(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	_, path := writeBackup(t)
	a, err := backup.Open(path)
	require.NoError(t, err)
	t.Cleanup(a.Close)

	dst := emptyDB(t)
	// Not a table, so the database counts as empty; but the name is taken
	// when the restore comes to create the users table.
	_, err = dst.pool.Exec(ctx, "CREATE SEQUENCE public.users")
	require.NoError(t, err)

	err = a.Restore(ctx, dst.pool, dst.url, false)
	require.ErrorContains(t, err, "pg_restore: exit status")
	require.ErrorContains(t, err, `"users" already exists`)
	require.Zero(t, tableCount(t, dst.pool), "nothing of the failed restore remains")
}

// tarFile is a tar archive of files (name and contents, in order).
func tarFile(t *testing.T, files ...[2]string) []byte {
	t.Helper()
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for _, f := range files {
		require.NoError(t, tw.WriteHeader(&tar.Header{Name: f[0], Mode: 0o600, Size: int64(len(f[1]))}))
		_, err := tw.Write([]byte(f[1]))
		require.NoError(t, err)
	}
	require.NoError(t, tw.Close())
	return buf.Bytes()
}

func manifestJSON(t *testing.T, m backup.Manifest) string {
	t.Helper()
	b, err := json.Marshal(m)
	require.NoError(t, err)
	return string(b)
}

// TestOpenRefusesForeign: what is not a backup of this format is refused
// with an error that names the file and says what is wrong.
func TestOpenRefusesForeign(t *testing.T) {
	t.Parallel()
	current := manifestJSON(t, backup.Manifest{Format: 1, Created: time.Now().UTC(), Version: "test", SchemaVersion: 3})
	newer := manifestJSON(t, backup.Manifest{Format: 2, Created: time.Now().UTC(), Version: "test", SchemaVersion: 3})
	bigDump := strings.Repeat("PGDMP dump bytes ", 4096)
	whole := tarFile(t, [2]string{"manifest.json", current}, [2]string{"database.pgdump", bigDump})

	tests := []struct {
		name    string
		data    []byte
		wantErr string
	}{
		{name: "empty file", data: nil, wantErr: "is not a kubebyon backup (no manifest.json or database.pgdump in it)"},
		{name: "text", data: []byte(strings.Repeat("not a tar archive\n", 64)), wantErr: "is not a kubebyon backup: archive/tar"},
		{name: "plain pg_dump", data: []byte("PGDMP" + strings.Repeat("\x00", 2048)), wantErr: "is not a kubebyon backup"},
		{
			name:    "another tar",
			data:    tarFile(t, [2]string{"README", "hello"}, [2]string{"data.csv", "a,b\n"}),
			wantErr: "is not a kubebyon backup (no manifest.json or database.pgdump in it)",
		},
		{
			name:    "manifest without dump",
			data:    tarFile(t, [2]string{"manifest.json", current}),
			wantErr: "is not a kubebyon backup (no manifest.json or database.pgdump in it)",
		},
		{
			name:    "dump without manifest",
			data:    tarFile(t, [2]string{"database.pgdump", "PGDMP"}),
			wantErr: "is not a kubebyon backup (no manifest.json or database.pgdump in it)",
		},
		{
			name:    "broken manifest",
			data:    tarFile(t, [2]string{"manifest.json", "{not json"}, [2]string{"database.pgdump", "PGDMP"}),
			wantErr: ": read manifest: ",
		},
		{
			name:    "newer format",
			data:    tarFile(t, [2]string{"manifest.json", newer}, [2]string{"database.pgdump", "PGDMP"}),
			wantErr: "is a backup of format 2; this kubebyon reads format 1",
		},
		{
			name:    "no format",
			data:    tarFile(t, [2]string{"manifest.json", "{}"}, [2]string{"database.pgdump", "PGDMP"}),
			wantErr: "is a backup of format 0; this kubebyon reads format 1",
		},
		{name: "truncated", data: whole[:len(whole)/2], wantErr: "unpack database dump: unexpected EOF"},
	}
	dir := t.TempDir()
	for _, tt := range tests {
		path := filepath.Join(dir, strings.ReplaceAll(tt.name, " ", "-"))
		require.NoError(t, os.WriteFile(path, tt.data, 0o600), tt.name)
		a, err := backup.Open(path)
		require.ErrorContains(t, err, tt.wantErr, tt.name)
		require.ErrorContains(t, err, path, tt.name)
		require.Nil(t, a, tt.name)
	}

	// The whole archive, for contrast, opens.
	path := filepath.Join(dir, "whole")
	require.NoError(t, os.WriteFile(path, whole, 0o600))
	a, err := backup.Open(path)
	require.NoError(t, err)
	a.Close()

	_, err = backup.Open(filepath.Join(dir, "missing"))
	require.ErrorIs(t, err, fs.ErrNotExist)
	require.ErrorContains(t, err, "open backup")
}

// TestRestoreBadDump: an archive whose dump pg_restore cannot read is
// refused with pg_restore's word, and the database stays empty.
func TestRestoreBadDump(t *testing.T) {
	t.Parallel()
	m := manifestJSON(t, backup.Manifest{Format: 1, Created: time.Now().UTC(), Version: "test", SchemaVersion: 3})
	path := filepath.Join(t.TempDir(), "bad.backup")
	require.NoError(t, os.WriteFile(path, tarFile(t, [2]string{"manifest.json", m}, [2]string{"database.pgdump", "SELECT 1; -- not pg_dump's custom format"}), 0o600))
	a, err := backup.Open(path)
	require.NoError(t, err)
	t.Cleanup(a.Close)

	dst := emptyDB(t)
	err = a.Restore(context.Background(), dst.pool, dst.url, false)
	require.ErrorContains(t, err, "pg_restore: exit status")
	require.Zero(t, tableCount(t, dst.pool))
}

// TestSchemaVersion: tern's version of the platform's schema, the number
// of its migrations; 0 when there is no schema or no version recorded.
func TestSchemaVersion(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	sqlFiles, err := fs.Glob(migrations.Files(), "*.sql")
	require.NoError(t, err)

	noRow := emptyDB(t)
	_, err = noRow.pool.Exec(ctx, "CREATE TABLE public.schema_version (version int4 NOT NULL)")
	require.NoError(t, err)

	tests := []struct {
		name string
		pool *pgxpool.Pool
		want int32
	}{
		{name: "migrated", pool: migratedDB(t).pool, want: int32(len(sqlFiles))},
		{name: "empty", pool: emptyDB(t).pool, want: 0},
		{name: "version table without a row", pool: noRow.pool, want: 0},
	}
	for _, tt := range tests {
		got, err := backup.SchemaVersion(ctx, tt.pool)
		require.NoError(t, err, tt.name)
		require.Equal(t, tt.want, got, tt.name)
	}
}

// TestTool: PostgreSQL's client programs are found, as executables; a
// missing one is an error that says what to install.
func TestTool(t *testing.T) {
	t.Parallel()
	for _, name := range []string{"pg_dump", "pg_restore"} {
		p, err := backup.Tool(name)
		require.NoError(t, err, name)
		require.True(t, filepath.IsAbs(p), p)
		require.Equal(t, name, filepath.Base(p))
		fi, err := os.Stat(p)
		require.NoError(t, err, name)
		require.NotZero(t, fi.Mode().Perm()&0o111, "%s is executable", p)
	}
	_, err := backup.Tool("kubebyon-no-such-program")
	require.ErrorContains(t, err, "kubebyon-no-such-program not found")
	require.ErrorContains(t, err, "postgresql-client")
}
