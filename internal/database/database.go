// Package database opens the platform's PostgreSQL: the server named by
// DATABASE_URL, or an embedded one in the data dir when none is named.
package database

import (
	"context"
	"fmt"
	"log/slog"
	"path/filepath"
	"runtime"
	"strings"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/kubebyon/kubebyon/internal/config"
	"github.com/kubebyon/kubebyon/internal/pgserver"
)

// DefaultMaxConns is the pool size unless the URL sets pool_max_conns.
const DefaultMaxConns = 50

// WebConns is the size of the web pool (ConnectWeb): two connections per
// core of this process, at least four. A request waits for one more often
// than with a bigger pool, but PostgreSQL does less work per query with
// fewer backends busy at once: on two cores, with sixteen browsers asking,
// it spent a fifth less CPU per page with 4 connections than with 50
// (BenchmarkPages).
func WebConns() int32 { return int32(max(4, 2*runtime.GOMAXPROCS(0))) }

// EmbeddedName is the embedded server's database and superuser name.
const EmbeddedName = "kubebyon"

// DB is an open connection pool, and the embedded server behind it if any.
// Web, once OpenWeb has opened it, is the HTTP handlers' pool: apart from
// Pool (River and its workers), so that neither waits for the other's
// connections, and sized for the web alone.
type DB struct {
	Pool     *pgxpool.Pool
	Web      *pgxpool.Pool
	url      string
	embedded *pgserver.Server
}

// Open connects to the configured database, starting the embedded server
// first when DATABASE_URL is empty.
func Open(ctx context.Context, cfg *config.Common, logger *slog.Logger) (*DB, error) {
	db := &DB{}
	url := cfg.DatabaseURL
	if url == "" {
		srv, err := pgserver.Start(ctx, pgserver.Options{
			Dir:      filepath.Join(cfg.DataDir, "postgres"),
			Database: EmbeddedName,
			Logger:   logger,
		})
		if err != nil {
			return nil, fmt.Errorf("embedded PostgreSQL: %w", err)
		}
		db.embedded = srv
		url = srv.URL()
	}
	pool, err := Connect(ctx, url)
	if err != nil {
		_ = db.Close(context.Background())
		return nil, err
	}
	db.Pool, db.url = pool, url
	return db, nil
}

// URL is the connection string of the database Pool is on.
func (db *DB) URL() string { return db.url }

// EmbeddedShared reports whether the embedded server is run by another
// kubebyon process (a serve) that this one only connects to.
func (db *DB) EmbeddedShared() bool { return db.embedded != nil && db.embedded.Shared() }

// OpenWeb opens Web (ConnectWeb).
func (db *DB) OpenWeb(ctx context.Context) (*pgxpool.Pool, error) {
	web, err := ConnectWeb(ctx, db.url)
	if err != nil {
		return nil, err
	}
	db.Web = web
	return web, nil
}

// Connect opens a pool and checks that the server answers.
func Connect(ctx context.Context, url string) (*pgxpool.Pool, error) {
	pcfg, err := pgxpool.ParseConfig(url)
	if err != nil {
		return nil, fmt.Errorf("parse database URL: %w", err)
	}
	if !strings.Contains(url, "pool_max_conns") {
		// pgx's default (the number of CPUs, at least 4) is too few for
		// River's workers.
		pcfg.MaxConns = DefaultMaxConns
	}
	return open(ctx, pcfg)
}

// ConnectWeb opens a pool of WebConns connections for the HTTP handlers,
// whatever pool_max_conns the URL sets (that is Connect's), and checks
// that the server answers. Nothing that holds one of its connections may
// wait for another (a query inside a transaction on the pool itself): with
// every connection held so, the requests would wait for each other until
// their timeouts.
func ConnectWeb(ctx context.Context, url string) (*pgxpool.Pool, error) {
	pcfg, err := pgxpool.ParseConfig(url)
	if err != nil {
		return nil, fmt.Errorf("parse database URL: %w", err)
	}
	pcfg.MaxConns = WebConns()
	return open(ctx, pcfg)
}

func open(ctx context.Context, pcfg *pgxpool.Config) (*pgxpool.Pool, error) {
	pool, err := pgxpool.NewWithConfig(ctx, pcfg)
	if err != nil {
		return nil, fmt.Errorf("open database pool: %w", err)
	}
	pingCtx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	if err := pool.Ping(pingCtx); err != nil {
		pool.Close()
		return nil, fmt.Errorf("connect to database at %s: %w", pcfg.ConnConfig.Host, err)
	}
	return pool, nil
}

// restartBackoff is how Watch retries the embedded server: five attempts,
// the first after half a second, doubling, about 15 seconds in all. A server
// that does not come back by then will not without help.
func restartBackoff() wait.Backoff {
	return wait.Backoff{Duration: 500 * time.Millisecond, Factor: 2, Steps: 5}
}

// Watch restarts the embedded server whenever it exits, until ctx ends, and
// then drops the pool's connections to the old one. It returns an error when
// the server does not come back after restartBackoff's attempts; the program
// should then exit. With DATABASE_URL, or a server another process runs,
// there is nothing to watch: it returns nil when ctx ends.
func (db *DB) Watch(ctx context.Context) error {
	if db.embedded == nil {
		<-ctx.Done()
		return nil
	}
	return db.embedded.Watch(ctx, restartBackoff(), func() {
		db.Pool.Reset()
		if db.Web != nil {
			db.Web.Reset()
		}
	})
}

// Alive returns an error while the embedded server this process runs is
// down; the database is not this process's to judge otherwise.
func (db *DB) Alive() error {
	if db.embedded == nil {
		return nil
	}
	return db.embedded.Alive()
}

// Close closes the pool, then stops the embedded server.
func (db *DB) Close(ctx context.Context) error {
	if db.Web != nil {
		db.Web.Close()
	}
	if db.Pool != nil {
		db.Pool.Close()
	}
	if db.embedded == nil {
		return nil
	}
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	return db.embedded.Stop(ctx)
}
