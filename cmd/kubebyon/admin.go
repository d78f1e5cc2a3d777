package main

import (
	"bufio"
	"context"
	"errors"
	"flag"
	"fmt"
	"net/mail"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgtype"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/kubebyon/kubebyon/internal/audit"
	"github.com/kubebyon/kubebyon/internal/config"
	"github.com/kubebyon/kubebyon/internal/database"
	"github.com/kubebyon/kubebyon/internal/passwords"
	"github.com/kubebyon/kubebyon/migrations"
	"github.com/kubebyon/kubebyon/queries"
)

const adminUsage = `Usage:
  kubebyon admin create  --email EMAIL [--name NAME] [--password-stdin]
  kubebyon admin promote --email EMAIL

create makes a new admin account whose email counts as verified. Without
--password-stdin a random password is generated and printed once.
promote makes an existing account an admin.
`

// admin bootstraps admins without the browser.
func (c *cli) admin(args []string) error {
	if len(args) == 0 || (args[0] != "create" && args[0] != "promote") {
		fmt.Fprint(c.stderr, adminUsage)
		return errUsage
	}
	action := args[0]
	fs := flag.NewFlagSet("admin "+action, flag.ContinueOnError)
	fs.Usage = func() { fmt.Fprint(c.stderr, adminUsage); fs.PrintDefaults() }
	common := config.RegisterCommon(fs, c.getenv)
	email := fs.String("email", "", "the account's email address")
	name := fs.String("name", "", "display name (create)")
	pwStdin := fs.Bool("password-stdin", false, "read the password from the first line of standard input (create)")
	if err := c.parse(fs, args[1:]); err != nil {
		return err
	}
	addr, err := mail.ParseAddress(*email)
	if err != nil || addr.Address != strings.TrimSpace(*email) {
		return fmt.Errorf("--email %q is not an email address", *email)
	}
	if err := common.Validate(); err != nil {
		return err
	}

	password := ""
	if action == "create" {
		if password, err = c.adminPassword(*pwStdin); err != nil {
			return err
		}
	}

	logger := common.Logger(c.stderr)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	db, err := database.Open(ctx, common, logger)
	if err != nil {
		return err
	}
	defer db.Close(context.Background())
	if err := migrations.Check(ctx, db.Pool); err != nil {
		return err
	}
	if action == "promote" {
		u, err := promoteAdmin(ctx, db.Pool, addr.Address)
		if errors.Is(err, pgx.ErrNoRows) {
			return fmt.Errorf("no account with email %s; create one with 'kubebyon admin create --email %s'", addr.Address, addr.Address)
		}
		if err != nil {
			return fmt.Errorf("promote %s: %w", addr.Address, err)
		}
		fmt.Fprintf(c.stdout, "%s is now an admin\n", u.Email)
		return nil
	}

	hash, err := passwords.Hash(password)
	if err != nil {
		return err
	}
	u, err := createAdmin(ctx, db.Pool, addr.Address, *name, hash)
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) && pgErr.Code == "23505" {
		return fmt.Errorf("an account with email %s exists already; make it an admin with 'kubebyon admin promote --email %s'", addr.Address, addr.Address)
	}
	if err != nil {
		return fmt.Errorf("create admin %s: %w", addr.Address, err)
	}
	fmt.Fprintf(c.stdout, "created admin %s\n", u.Email)
	if !*pwStdin {
		fmt.Fprintf(c.stdout, "password (shown once): %s\n", password)
	}
	return nil
}

// promoteAdmin makes the account with email an admin, with its audit event.
// The audit log names the command as the actor: it runs as no user.
func promoteAdmin(ctx context.Context, pool *pgxpool.Pool, email string) (queries.User, error) {
	var u queries.User
	err := pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) error {
		q := queries.New(tx)
		var err error
		if u, err = q.UserSetRoleByEmail(ctx, queries.UserSetRoleByEmailParams{Email: email, Role: "admin"}); err != nil {
			return err
		}
		return audit.Record(ctx, q, audit.Actor{Email: "cli"}, audit.Event{
			Action: "admin.promote_via_cli", TargetType: "user", TargetID: strconv.FormatInt(u.ID, 10),
			Details: map[string]any{"email": u.Email},
		})
	})
	return u, err
}

// createAdmin makes a verified admin account, with its audit event.
func createAdmin(ctx context.Context, pool *pgxpool.Pool, email, name, hash string) (queries.User, error) {
	var u queries.User
	err := pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) error {
		q := queries.New(tx)
		var err error
		u, err = q.UserCreate(ctx, queries.UserCreateParams{
			Email:           email,
			Name:            name,
			PasswordHash:    pgtype.Text{String: hash, Valid: true},
			Role:            "admin",
			EmailVerifiedAt: pgtype.Timestamptz{Time: time.Now(), Valid: true},
		})
		if err != nil {
			return err
		}
		return audit.Record(ctx, q, audit.Actor{Email: "cli"}, audit.Event{
			Action: "admin.create_via_cli", TargetType: "user", TargetID: strconv.FormatInt(u.ID, 10),
			Details: map[string]any{"email": u.Email},
		})
	})
	return u, err
}

func (c *cli) adminPassword(fromStdin bool) (string, error) {
	if !fromStdin {
		return passwords.Generate(), nil
	}
	line, err := bufio.NewReader(c.stdin).ReadString('\n')
	if err != nil && line == "" {
		return "", fmt.Errorf("read password from standard input: %w", err)
	}
	pw := strings.TrimRight(line, "\r\n")
	if len([]rune(pw)) < passwords.MinLength {
		return "", fmt.Errorf("the password must have at least %d characters", passwords.MinLength)
	}
	return pw, nil
}
