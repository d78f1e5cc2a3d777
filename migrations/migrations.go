// Package migrations holds the platform's SQL schema and applies it, together
// with River's own tables, to a PostgreSQL database.
package migrations

import (
	"context"
	"embed"
	"errors"
	"fmt"
	"io/fs"
	"strings"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/jackc/tern/v2/migrate"
	"github.com/riverqueue/river/riverdriver/riverpgxv5"
	"github.com/riverqueue/river/rivermigrate"
)

//go:embed *.sql
var files embed.FS

// versionTable is where tern records the schema version.
const versionTable = "public.schema_version"

// Files returns the embedded migration files (for the test template database).
func Files() fs.FS { return files }

// Result says what Up changed.
type Result struct {
	FromVersion, ToVersion int32
	RiverApplied           []int
}

// Changed reports whether Up applied anything.
func (r Result) Changed() bool {
	return r.FromVersion != r.ToVersion || len(r.RiverApplied) > 0
}

// Up applies the platform's migrations and River's. It is idempotent and safe
// to run from several processes at once: tern holds an advisory lock, and
// River's migrator runs each step in a transaction.
func Up(ctx context.Context, pool *pgxpool.Pool) (Result, error) {
	var res Result
	err := withMigrator(ctx, pool, func(m *migrate.Migrator) error {
		from, err := m.GetCurrentVersion(ctx)
		if err != nil {
			return fmt.Errorf("read schema version: %w", err)
		}
		res.FromVersion = from
		if err := m.Migrate(ctx); err != nil {
			return fmt.Errorf("apply platform migrations: %w", err)
		}
		res.ToVersion, err = m.GetCurrentVersion(ctx)
		return err
	})
	if err != nil {
		return res, err
	}

	rm, err := rivermigrate.New(riverpgxv5.New(pool), nil)
	if err != nil {
		return res, fmt.Errorf("river migrator: %w", err)
	}
	out, err := rm.Migrate(ctx, rivermigrate.DirectionUp, nil)
	if err != nil {
		return res, fmt.Errorf("apply river migrations: %w", err)
	}
	for _, v := range out.Versions {
		res.RiverApplied = append(res.RiverApplied, v.Version)
	}
	return res, nil
}

// UpTo applies the platform's migrations up to version target only, and
// River's: the schema of an older release, for the upgrade test.
func UpTo(ctx context.Context, pool *pgxpool.Pool, target int32) error {
	err := withMigrator(ctx, pool, func(m *migrate.Migrator) error {
		if err := m.MigrateTo(ctx, target); err != nil {
			return fmt.Errorf("apply platform migrations to version %d: %w", target, err)
		}
		return nil
	})
	if err != nil {
		return err
	}
	rm, err := rivermigrate.New(riverpgxv5.New(pool), nil)
	if err != nil {
		return fmt.Errorf("river migrator: %w", err)
	}
	if _, err := rm.Migrate(ctx, rivermigrate.DirectionUp, nil); err != nil {
		return fmt.Errorf("apply river migrations: %w", err)
	}
	return nil
}

// ErrNotCurrent is wrapped by Check when the schema does not match this build.
var ErrNotCurrent = errors.New("database schema does not match this build")

// Check returns nil when the database holds exactly the schema this build
// expects, and an error wrapping ErrNotCurrent that says what to do otherwise.
func Check(ctx context.Context, pool *pgxpool.Pool) error {
	err := withMigrator(ctx, pool, func(m *migrate.Migrator) error {
		have, err := m.GetCurrentVersion(ctx)
		if err != nil {
			return fmt.Errorf("read schema version: %w", err)
		}
		want := int32(len(m.Migrations))
		switch {
		case have < want:
			return fmt.Errorf("%w: schema version is %d, this build needs %d; run 'kubebyon migrate' (or start with 'kubebyon serve --migrate')", ErrNotCurrent, have, want)
		case have > want:
			if by := stampOf(ctx, pool); by != "" {
				return fmt.Errorf("%w: schema version %d is newer than this build knows (%d); %s migrated it: run that release or a newer one", ErrNotCurrent, have, want, by)
			}
			return fmt.Errorf("%w: schema version %d is newer than this build knows (%d); run the newer kubebyon release", ErrNotCurrent, have, want)
		}
		return nil
	})
	if err != nil {
		return err
	}

	rm, err := rivermigrate.New(riverpgxv5.New(pool), nil)
	if err != nil {
		return fmt.Errorf("river migrator: %w", err)
	}
	v, err := rm.Validate(ctx, nil)
	if err != nil {
		return fmt.Errorf("check river migrations: %w", err)
	}
	if !v.OK {
		return fmt.Errorf("%w: River's tables are not current (%v); run 'kubebyon migrate'", ErrNotCurrent, v.Messages)
	}
	return nil
}

// Stamp records that release (such as "kubebyon v0.2.0") brought the
// schema to its version, in a comment on tern's version table, for an older
// build that refuses the schema to name the release to run (Check).
func Stamp(ctx context.Context, pool *pgxpool.Pool, release string) error {
	// COMMENT takes no parameters: a literal, quoted as SQL quotes.
	lit := "'" + strings.ReplaceAll(release, "'", "''") + "'"
	if _, err := pool.Exec(ctx, "COMMENT ON TABLE "+versionTable+" IS "+lit); err != nil {
		return fmt.Errorf("record the release of the schema: %w", err)
	}
	return nil
}

// stampOf is what Stamp recorded, or "".
func stampOf(ctx context.Context, pool *pgxpool.Pool) string {
	var by *string
	if err := pool.QueryRow(ctx, "SELECT obj_description($1::regclass, 'pg_class')", versionTable).Scan(&by); err != nil || by == nil {
		return ""
	}
	return *by
}

func withMigrator(ctx context.Context, pool *pgxpool.Pool, fn func(*migrate.Migrator) error) error {
	conn, err := pool.Acquire(ctx)
	if err != nil {
		return fmt.Errorf("connect to database: %w", err)
	}
	defer conn.Release()
	m, err := migrate.NewMigrator(ctx, conn.Conn(), versionTable)
	if err != nil {
		return fmt.Errorf("prepare migrations: %w", err)
	}
	if err := m.LoadMigrations(files); err != nil {
		return fmt.Errorf("load migrations: %w", err)
	}
	return fn(m)
}
