// Package backup writes the platform's database to a file and reads it back:
// pg_dump and pg_restore, from the PostgreSQL binaries the embedded server
// uses, in a tar archive with a manifest and, only when asked, the secret
// key.
package backup

import (
	"archive/tar"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/kubebyon/kubebyon/internal/pgserver"
)

// The archive's entries.
const (
	manifestName = "manifest.json"
	// dumpName is pg_dump's custom format: 'tar xf' the archive and
	// pg_restore it by hand if need be.
	dumpName = "database.pgdump"
	keyName  = "secret.key"
)

// format is the archive layout's version, in the manifest.
const format = 1

// Manifest describes a backup.
type Manifest struct {
	Format        int       `json:"format"`
	Created       time.Time `json:"created"`
	Version       string    `json:"kubebyon_version"`
	SchemaVersion int32     `json:"schema_version"`
	SecretKey     bool      `json:"secret_key_included"`
}

// ErrNotEmpty says that the database to restore into already holds tables.
var ErrNotEmpty = errors.New("the database is not empty")

// Tool returns the path of a PostgreSQL client program: the one beside the
// server binaries the embedded PostgreSQL uses, else the one on PATH.
func Tool(name string) (string, error) {
	if dir, err := pgserver.FindBinDir(); err == nil {
		p := filepath.Join(dir, name)
		if _, err := os.Stat(p); err == nil {
			return p, nil
		}
	}
	p, err := exec.LookPath(name)
	if err != nil {
		return "", fmt.Errorf("%s not found beside the PostgreSQL server binaries nor on PATH: install the PostgreSQL client programs (Debian package 'postgresql-client')", name)
	}
	return p, nil
}

// Write dumps the database at url into an archive at path, with key in it
// when key is not nil. The file is written whole or not at all, readable by
// its owner only: it holds password hashes and sealed secrets.
func Write(ctx context.Context, pool *pgxpool.Pool, url, path, version string, key []byte) (Manifest, error) {
	m := Manifest{Format: format, Created: time.Now().UTC(), Version: version, SecretKey: key != nil}
	var err error
	if m.SchemaVersion, err = SchemaVersion(ctx, pool); err != nil {
		return m, err
	}
	if m.SchemaVersion == 0 {
		return m, errors.New("the database holds no KubeBYON schema: nothing to back up (is this the platform's data dir, or DATABASE_URL?)")
	}
	pgDump, err := Tool("pg_dump")
	if err != nil {
		return m, err
	}
	tmp, err := os.CreateTemp(filepath.Dir(path), ".kubebyon-backup-*")
	if err != nil {
		return m, fmt.Errorf("create backup file: %w", err)
	}
	defer os.Remove(tmp.Name())
	defer tmp.Close()
	// Made by us first, readable by its owner only (as CreateTemp's):
	// pg_dump writes into it rather than making it with the umask's mode,
	// which would leave the password hashes and sealed secrets readable by
	// everyone until the archive is written.
	dump := tmp.Name() + ".pgdump"
	df, err := os.OpenFile(dump, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o600)
	if err != nil {
		return m, fmt.Errorf("create backup file: %w", err)
	}
	df.Close()
	defer os.Remove(dump)

	// pg_dump reads in one repeatable-read transaction: a consistent copy,
	// even while serve writes.
	if err := run(ctx, pgDump, "--format=custom", "--dbname="+url, "--file="+dump); err != nil {
		return m, err
	}
	manifest, err := json.MarshalIndent(m, "", "  ")
	if err != nil {
		return m, err
	}
	tw := tar.NewWriter(tmp)
	if err := addBytes(tw, manifestName, manifest); err != nil {
		return m, err
	}
	if err := addFile(tw, dumpName, dump); err != nil {
		return m, err
	}
	if key != nil {
		if err := addBytes(tw, keyName, key); err != nil {
			return m, err
		}
	}
	if err := tw.Close(); err != nil {
		return m, fmt.Errorf("write backup file: %w", err)
	}
	if err := tmp.Sync(); err != nil {
		return m, fmt.Errorf("write backup file: %w", err)
	}
	if err := tmp.Close(); err != nil {
		return m, fmt.Errorf("write backup file: %w", err)
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		return m, fmt.Errorf("write backup file: %w", err)
	}
	return m, nil
}

// Archive is an opened backup: its manifest, the key if it holds one, and
// the dump unpacked into a temporary file until Close.
type Archive struct {
	Manifest Manifest
	Key      []byte
	dump     string
}

// Open reads the archive at path.
func Open(path string) (*Archive, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("open backup: %w", err)
	}
	defer f.Close()
	a := &Archive{}
	seen := false
	tr := tar.NewReader(f)
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			a.Close()
			return nil, fmt.Errorf("%s is not a kubebyon backup: %w", path, err)
		}
		switch h.Name {
		case manifestName:
			if err := json.NewDecoder(tr).Decode(&a.Manifest); err != nil {
				a.Close()
				return nil, fmt.Errorf("%s: read manifest: %w", path, err)
			}
			seen = true
		case keyName:
			if a.Key, err = io.ReadAll(tr); err != nil {
				a.Close()
				return nil, fmt.Errorf("%s: read secret key: %w", path, err)
			}
		case dumpName:
			if err := a.unpack(tr); err != nil {
				a.Close()
				return nil, fmt.Errorf("%s: %w", path, err)
			}
		}
	}
	switch {
	case !seen || a.dump == "":
		a.Close()
		return nil, fmt.Errorf("%s is not a kubebyon backup (no %s or %s in it)", path, manifestName, dumpName)
	case a.Manifest.Format != format:
		a.Close()
		return nil, fmt.Errorf("%s is a backup of format %d; this kubebyon reads format %d", path, a.Manifest.Format, format)
	}
	return a, nil
}

func (a *Archive) unpack(r io.Reader) error {
	f, err := os.CreateTemp("", "kubebyon-restore-*.pgdump")
	if err != nil {
		return fmt.Errorf("unpack database dump: %w", err)
	}
	a.dump = f.Name()
	if _, err := io.Copy(f, r); err != nil {
		f.Close()
		return fmt.Errorf("unpack database dump: %w", err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("unpack database dump: %w", err)
	}
	return nil
}

// Close removes the unpacked dump.
func (a *Archive) Close() {
	if a.dump != "" {
		_ = os.Remove(a.dump)
	}
}

// Restore loads the archive's database into the database at url, which
// must hold no tables unless force is set: then its public schema, every
// table of the platform and of River, is dropped first. The restore is one
// transaction: it applies whole or not at all.
func (a *Archive) Restore(ctx context.Context, pool *pgxpool.Pool, url string, force bool) error {
	pgRestore, err := Tool("pg_restore")
	if err != nil {
		return err
	}
	var tables int
	if err := pool.QueryRow(ctx, `SELECT count(*) FROM pg_tables WHERE schemaname NOT IN ('pg_catalog', 'information_schema')`).Scan(&tables); err != nil {
		return fmt.Errorf("look at the database: %w", err)
	}
	if tables > 0 {
		if !force {
			return fmt.Errorf("%w (%d tables)", ErrNotEmpty, tables)
		}
		if _, err := pool.Exec(ctx, "DROP SCHEMA public CASCADE; CREATE SCHEMA public"); err != nil {
			return fmt.Errorf("empty the database: %w", err)
		}
	}
	// The dump creates the public schema's contents; its owner and grants
	// are the server's business (another user may restore it).
	return run(ctx, pgRestore, "--dbname="+url, "--no-owner", "--no-acl", "--single-transaction", "--exit-on-error", a.dump)
}

// SchemaVersion is tern's record of the platform's schema: 0 when none.
func SchemaVersion(ctx context.Context, pool *pgxpool.Pool) (int32, error) {
	var exists bool
	if err := pool.QueryRow(ctx, "SELECT to_regclass('public.schema_version') IS NOT NULL").Scan(&exists); err != nil {
		return 0, fmt.Errorf("read schema version: %w", err)
	}
	if !exists {
		return 0, nil
	}
	var v int32
	err := pool.QueryRow(ctx, "SELECT version FROM public.schema_version").Scan(&v)
	if errors.Is(err, pgx.ErrNoRows) {
		return 0, nil
	}
	if err != nil {
		return 0, fmt.Errorf("read schema version: %w", err)
	}
	return v, nil
}

func run(ctx context.Context, name string, args ...string) error {
	cmd := exec.CommandContext(ctx, name, args...)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("%s: %w: %s", filepath.Base(name), err, bytes.TrimSpace(out.Bytes()))
	}
	return nil
}

func addBytes(tw *tar.Writer, name string, b []byte) error {
	if err := tw.WriteHeader(&tar.Header{Name: name, Mode: 0o600, Size: int64(len(b)), ModTime: time.Now()}); err != nil {
		return fmt.Errorf("write backup file: %w", err)
	}
	if _, err := tw.Write(b); err != nil {
		return fmt.Errorf("write backup file: %w", err)
	}
	return nil
}

func addFile(tw *tar.Writer, name, path string) error {
	f, err := os.Open(path)
	if err != nil {
		return fmt.Errorf("read database dump: %w", err)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return fmt.Errorf("read database dump: %w", err)
	}
	if err := tw.WriteHeader(&tar.Header{Name: name, Mode: 0o600, Size: fi.Size(), ModTime: fi.ModTime()}); err != nil {
		return fmt.Errorf("write backup file: %w", err)
	}
	if _, err := io.Copy(tw, f); err != nil {
		return fmt.Errorf("write backup file: %w", err)
	}
	return nil
}
