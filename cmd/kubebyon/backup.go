package main

import (
	"bytes"
	"context"
	"encoding/base64"
	"errors"
	"flag"
	"fmt"
	"os"

	"github.com/kubebyon/kubebyon/internal/backup"
	"github.com/kubebyon/kubebyon/internal/config"
	"github.com/kubebyon/kubebyon/internal/database"
	"github.com/kubebyon/kubebyon/migrations"
)

// backup writes the database, embedded or DATABASE_URL's, to a file.
func (c *cli) backup(args []string) error {
	fs := flag.NewFlagSet("backup", flag.ContinueOnError)
	common := config.RegisterCommon(fs, c.getenv)
	to := fs.String("to", "", "the backup file to write (required)")
	withKey := fs.Bool("include-secret-key", false, "put the platform's secret key in the backup too: then whoever has the file can open every sealed secret in it; keep the file as safe as the key")
	if err := c.parse(fs, args); err != nil {
		return err
	}
	if err := c.required(fs, "to", *to); err != nil {
		return err
	}
	if err := common.Validate(); err != nil {
		return err
	}
	var key []byte
	if *withKey {
		k, err := existingKey(common)
		if err != nil {
			return err
		}
		key = []byte(base64.StdEncoding.EncodeToString(k) + "\n")
	}

	ctx, cancel := signalContext()
	defer cancel()
	// A running serve's embedded PostgreSQL is shared: pg_dump reads one
	// consistent snapshot while serve goes on writing.
	db, err := database.Open(ctx, common, common.Logger(c.stderr))
	if err != nil {
		return err
	}
	defer db.Close(context.Background())
	m, err := backup.Write(ctx, db.Pool, db.URL(), *to, version, key)
	if err != nil {
		return fmt.Errorf("back up to %s: %w", *to, err)
	}
	fmt.Fprintf(c.stdout, "wrote %s (schema version %d)\n", *to, m.SchemaVersion)
	if *withKey {
		fmt.Fprintln(c.stdout, "The platform's secret key is in this backup: whoever has the file can open the secrets sealed in it. Keep it as safe as the key.")
		return nil
	}
	fmt.Fprintf(c.stdout, "Keep the platform's secret key too, apart from this file: it is not in the backup, and without it the secrets sealed in the database (kubeconfigs, join tokens, mail and payment settings) cannot be opened. It is %s.\n", keyWhere(common))
	return nil
}

// restore loads a backup into an empty database.
func (c *cli) restore(args []string) error {
	fs := flag.NewFlagSet("restore", flag.ContinueOnError)
	common := config.RegisterCommon(fs, c.getenv)
	from := fs.String("from", "", "the backup file to read (required)")
	force := fs.Bool("force", false, "replace what the database holds (drops its public schema first)")
	if err := c.parse(fs, args); err != nil {
		return err
	}
	if err := c.required(fs, "from", *from); err != nil {
		return err
	}
	if err := common.Validate(); err != nil {
		return err
	}
	a, err := backup.Open(*from)
	if err != nil {
		return err
	}
	defer a.Close()
	writeKey, err := checkBackupKey(common, a.Key)
	if err != nil {
		return err
	}

	ctx, cancel := signalContext()
	defer cancel()
	db, err := database.Open(ctx, common, common.Logger(c.stderr))
	if err != nil {
		return err
	}
	defer db.Close(context.Background())
	// Tables dropped and loaded under a running platform would leave its
	// workers and sessions on data that is half one and half the other.
	if db.EmbeddedShared() {
		return fmt.Errorf("a kubebyon serve or worker is running the embedded PostgreSQL in %s: stop it first, then restore", common.DataDir)
	}
	err = a.Restore(ctx, db.Pool, db.URL(), *force)
	if errors.Is(err, backup.ErrNotEmpty) {
		return fmt.Errorf("%w: restore into a fresh data directory (or an empty database), or add --force to replace what it holds", err)
	}
	if err != nil {
		return fmt.Errorf("restore %s: %w", *from, err)
	}
	if writeKey {
		if err := os.WriteFile(common.SecretKeyFile(), a.Key, 0o600); err != nil {
			return fmt.Errorf("write the backup's secret key: %w", err)
		}
	}
	m := a.Manifest
	fmt.Fprintf(c.stdout, "restored %s (made by kubebyon %s at %s, schema version %d)\n", *from, m.Version, m.Created.Format("2006-01-02 15:04:05 UTC"), m.SchemaVersion)
	if err := migrations.Check(ctx, db.Pool); errors.Is(err, migrations.ErrNotCurrent) {
		fmt.Fprintf(c.stdout, "The schema is not this build's: %v\n", err)
	} else if err != nil {
		return err
	}
	switch {
	case writeKey:
		fmt.Fprintf(c.stdout, "The backup's secret key was written to %s.\n", common.SecretKeyFile())
	case a.Key == nil:
		fmt.Fprintf(c.stdout, "This backup holds no secret key: run the platform with the key of the server it was taken from (%s here), or the secrets sealed in it will not open.\n", keyWhere(common))
	}
	return nil
}

// checkBackupKey compares a backup's key (nil when it holds none) with the
// one this platform is configured with, and says whether to write it to the
// data dir: only there is none there and none is configured. A different
// key is refused: the restored secrets would not open with it.
func checkBackupKey(common *config.Common, archived []byte) (write bool, err error) {
	if archived == nil {
		return false, nil
	}
	want, err := config.DecodeSecretKey(string(archived))
	if err != nil {
		return false, fmt.Errorf("the backup's secret key: %w", err)
	}
	if common.SecretKey != "" {
		have, err := config.DecodeSecretKey(common.SecretKey)
		if err != nil {
			return false, err
		}
		if !bytes.Equal(have, want) {
			return false, errors.New("the backup holds a secret key other than KUBEBYON_SECRET_KEY: the restored secrets open only with the backup's; set KUBEBYON_SECRET_KEY to it (tar -xOf FILE secret.key), or unset it for the key to be written to the data dir")
		}
		return false, nil
	}
	raw, err := os.ReadFile(common.SecretKeyFile())
	if errors.Is(err, os.ErrNotExist) {
		return true, nil
	}
	if err != nil {
		return false, fmt.Errorf("read secret key file: %w", err)
	}
	if have, err := config.DecodeSecretKey(string(raw)); err != nil || !bytes.Equal(have, want) {
		return false, fmt.Errorf("%s holds a secret key other than the backup's: the restored secrets open only with the backup's; move that file away and restore again", common.SecretKeyFile())
	}
	return false, nil
}

// existingKey is the configured key or the data dir's, without making one.
func existingKey(common *config.Common) ([]byte, error) {
	if common.SecretKey != "" {
		return config.DecodeSecretKey(common.SecretKey)
	}
	raw, err := os.ReadFile(common.SecretKeyFile())
	if err != nil {
		return nil, fmt.Errorf("--include-secret-key: no KUBEBYON_SECRET_KEY and no key file to include: %w", err)
	}
	key, err := config.DecodeSecretKey(string(raw))
	if err != nil {
		return nil, fmt.Errorf("secret key file %s: %w", common.SecretKeyFile(), err)
	}
	return key, nil
}

// keyWhere says where this platform's secret key comes from.
func keyWhere(common *config.Common) string {
	if common.SecretKey != "" {
		return "the value of KUBEBYON_SECRET_KEY"
	}
	return "the file " + common.SecretKeyFile()
}
