// Package testenv starts the real components tests run against: PostgreSQL
// (a database per test, cloned from a migrated template) and headless
// Chromium. A test package that uses it calls testenv.Main from TestMain so
// that what it started is stopped at the end.
package testenv

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io/fs"
	"net/url"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/kubebyon/kubebyon/internal/database"
	"github.com/kubebyon/kubebyon/internal/pgserver"
	"github.com/kubebyon/kubebyon/migrations"
)

// env is what one test binary shares: the PostgreSQL server and the name of
// its migrated template database. It is made once, on first use.
type env struct {
	once     sync.Once
	err      error
	adminURL string // a URL to the server's maintenance database
	template string
	server   *pgserver.Server
	dir      string
}

// The test binary's one environment. Tests in a package share the server, as
// they share the binary; every test still gets a database of its own.
var shared env

// Main runs the package's tests, stops what testenv started and exits.
func Main(m *testing.M) { os.Exit(Run(m)) }

// Run runs the package's tests and stops what testenv started, returning
// the exit code, for a TestMain with its own clean-up.
func Run(m *testing.M) int {
	sweepStale()
	code := m.Run()
	stopMailpit()
	stopKube()
	stopChromium()
	if shared.server != nil {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		_ = shared.server.Stop(ctx)
		cancel()
	}
	if shared.dir != "" {
		_ = os.RemoveAll(shared.dir)
	}
	return code
}

func (e *env) init() error {
	e.once.Do(func() { e.err = e.start() })
	return e.err
}

// StartPostgres starts a PostgreSQL for tests, fast and not durable, in
// dir, or in a new directory when dir is "" (returned, for the caller to
// remove; the next run removes it once this process is gone). A test
// binary starts its own unless TEST_DATABASE_URL names one; cmd testpg
// starts one for every test binary of a go test run. A server already
// running in dir is shared, and left running by Stop.
func StartPostgres(ctx context.Context, dir string) (_ *pgserver.Server, _ string, err error) {
	made := dir == ""
	if made {
		if dir, err = tempDir("kubebyon-testpg-"); err != nil {
			return nil, "", err
		}
	}
	srv, err := pgserver.Start(ctx, pgserver.Options{
		Dir:      dir,
		Database: "kubebyon",
		Settings: map[string]string{
			// Durability is not what these tests check; speed matters.
			"fsync": "off", "synchronous_commit": "off", "full_page_writes": "off",
			"max_connections": "800",
			// Nor is upkeep: an autovacuum worker in the template makes
			// CREATE DATABASE wait for it to leave (in steps of 100 ms,
			// 250-400 ms a database).
			"autovacuum": "off",
		},
	})
	if err != nil {
		if made {
			_ = os.RemoveAll(dir)
		}
		return nil, "", fmt.Errorf("start test PostgreSQL: %w", err)
	}
	return srv, dir, nil
}

func (e *env) start() error {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	e.adminURL = os.Getenv("TEST_DATABASE_URL")
	if e.adminURL == "" {
		srv, dir, err := StartPostgres(ctx, "")
		if err != nil {
			return fmt.Errorf("%w (or set TEST_DATABASE_URL)", err)
		}
		e.server, e.dir = srv, dir
		e.adminURL = srv.URL()
	}
	name, err := templateName()
	if err != nil {
		return err
	}
	e.template = name
	return e.ensureTemplate(ctx)
}

// templateName is derived from the migrations, so a changed schema gets a
// new template even on a shared TEST_DATABASE_URL server.
func templateName() (string, error) {
	h := sha256.New()
	err := fs.WalkDir(migrations.Files(), ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := fs.ReadFile(migrations.Files(), p)
		if err != nil {
			return err
		}
		fmt.Fprintf(h, "%s\x00%s\x00", p, b)
		return nil
	})
	if err != nil {
		return "", fmt.Errorf("hash migrations: %w", err)
	}
	return "kubebyon_tmpl_" + hex.EncodeToString(h.Sum(nil))[:16], nil
}

// ensureTemplate creates and migrates the template database unless a
// complete one (marked IS_TEMPLATE) exists. Several test binaries may race
// here; an advisory lock serialises them.
func (e *env) ensureTemplate(ctx context.Context) error {
	conn, err := pgx.Connect(ctx, e.adminURL)
	if err != nil {
		return fmt.Errorf("connect to test PostgreSQL: %w", err)
	}
	defer conn.Close(ctx)
	if _, err := conn.Exec(ctx, "SELECT pg_advisory_lock(hashtext('kubebyon-testenv-template'))"); err != nil {
		return err
	}
	defer conn.Exec(ctx, "SELECT pg_advisory_unlock(hashtext('kubebyon-testenv-template'))") //nolint:errcheck

	var isTemplate *bool
	err = conn.QueryRow(ctx, "SELECT datistemplate FROM pg_database WHERE datname = $1", e.template).Scan(&isTemplate)
	if err == nil && isTemplate != nil && *isTemplate {
		return nil
	}
	ident := pgx.Identifier{e.template}.Sanitize()
	if err == nil {
		// Left half-made by an interrupted run.
		if _, err := conn.Exec(ctx, "DROP DATABASE "+ident+" WITH (FORCE)"); err != nil {
			return err
		}
	}
	if _, err := conn.Exec(ctx, "CREATE DATABASE "+ident); err != nil {
		return fmt.Errorf("create template database: %w", err)
	}
	pool, err := database.Connect(ctx, withDatabase(e.adminURL, e.template))
	if err != nil {
		return err
	}
	_, err = migrations.Up(ctx, pool)
	pool.Close()
	if err != nil {
		return fmt.Errorf("migrate template database: %w", err)
	}
	if _, err := conn.Exec(ctx, "ALTER DATABASE "+ident+" IS_TEMPLATE true"); err != nil {
		return err
	}
	return nil
}

// withDatabase returns url with its database replaced by db. It takes URLs
// and keyword/value connection strings.
func withDatabase(conn, db string) string {
	if strings.HasPrefix(conn, "postgres://") || strings.HasPrefix(conn, "postgresql://") {
		u, err := url.Parse(conn)
		if err == nil {
			u.Path = "/" + db
			return u.String()
		}
	}
	return conn + " dbname=" + db
}

// newDatabase creates a database for t, from the template or empty, and
// drops it when t ends.
func newDatabase(t testing.TB, fromTemplate bool) string {
	t.Helper()
	if err := shared.init(); err != nil {
		t.Fatalf("testenv: %v", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	conn, err := pgx.Connect(ctx, shared.adminURL)
	if err != nil {
		t.Fatalf("testenv: connect: %v", err)
	}
	defer conn.Close(ctx)

	name := "t_" + strings.ToLower(rand.Text())
	sql := "CREATE DATABASE " + pgx.Identifier{name}.Sanitize()
	if fromTemplate {
		sql += " TEMPLATE " + pgx.Identifier{shared.template}.Sanitize()
	}
	if _, err := conn.Exec(ctx, sql); err != nil {
		t.Fatalf("testenv: create database: %v", err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		c, err := pgx.Connect(ctx, shared.adminURL)
		if err != nil {
			t.Errorf("testenv: connect to drop %s: %v", name, err)
			return
		}
		defer c.Close(ctx)
		if _, err := c.Exec(ctx, "DROP DATABASE "+pgx.Identifier{name}.Sanitize()+" WITH (FORCE)"); err != nil {
			t.Errorf("testenv: drop %s: %v", name, err)
		}
	})
	return withDatabase(shared.adminURL, name)
}

// DB returns a pool on a new, migrated database that only t uses.
func DB(t testing.TB) *pgxpool.Pool {
	t.Helper()
	return connect(t, DBURL(t))
}

// DBURL returns the URL of a new, migrated database that only t uses, for a
// test that hands it to a subprocess.
func DBURL(t testing.TB) string {
	t.Helper()
	return newDatabase(t, true)
}

// EmptyDBURL returns the URL of a new database without any schema.
func EmptyDBURL(t testing.TB) string {
	t.Helper()
	return newDatabase(t, false)
}

func connect(t testing.TB, url string) *pgxpool.Pool {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	pool, err := database.Connect(ctx, url)
	if err != nil {
		t.Fatalf("testenv: %v", err)
	}
	t.Cleanup(pool.Close)
	return pool
}
