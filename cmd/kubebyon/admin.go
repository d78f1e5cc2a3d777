package main

import (
	"bufio"
	"context"
	"errors"
	"flag"
	"fmt"
	"net/mail"
	"strings"
	"time"

	"github.com/kubebyon/kubebyon/internal/adminusers"
	"github.com/kubebyon/kubebyon/internal/audit"
	"github.com/kubebyon/kubebyon/internal/config"
	"github.com/kubebyon/kubebyon/internal/database"
	"github.com/kubebyon/kubebyon/internal/edge"
	"github.com/kubebyon/kubebyon/internal/input"
	"github.com/kubebyon/kubebyon/internal/passwords"
	"github.com/kubebyon/kubebyon/migrations"
)

const adminUsage = `Usage:
  kubebyon admin create  --email EMAIL [--name NAME] [--password-stdin]
  kubebyon admin promote --email EMAIL
  kubebyon admin edge-token --name NAME

create makes a new admin account whose email counts as verified. Without
--password-stdin a random password is generated and printed once.
promote makes an existing account an admin.
edge-token makes an edge token for 'kubebyon edge' and prints it once.
`

// admin bootstraps admins without the browser.
func (c *cli) admin(args []string) error {
	if len(args) == 0 || (args[0] != "create" && args[0] != "promote" && args[0] != "edge-token") {
		fmt.Fprint(c.stderr, adminUsage)
		return errUsage
	}
	action := args[0]
	if action == "edge-token" {
		return c.adminEdgeToken(args[1:])
	}
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

	ctx, cancel := context.WithTimeout(context.Background(), adminTimeout)
	defer cancel()
	db, err := c.adminDB(ctx, common)
	if err != nil {
		return err
	}
	defer db.Close(context.Background())
	users := &adminusers.Service{Pool: db.Pool}
	if action == "promote" {
		u, err := users.PromoteByEmail(ctx, addr.Address)
		if errors.Is(err, adminusers.ErrNoAccount) {
			return fmt.Errorf("no account with email %s; create one with 'kubebyon admin create --email %s'", addr.Address, addr.Address)
		}
		if err != nil {
			return err
		}
		fmt.Fprintf(c.stdout, "%s is now an admin\n", u.Email)
		return nil
	}

	hash, err := passwords.Hash(password)
	if err != nil {
		return err
	}
	u, err := users.CreateAdmin(ctx, addr.Address, *name, hash, !*pwStdin)
	if errors.Is(err, adminusers.ErrAccountExists) {
		return fmt.Errorf("an account with email %s exists already; make it an admin with 'kubebyon admin promote --email %s'", addr.Address, addr.Address)
	}
	if err != nil {
		return err
	}
	fmt.Fprintf(c.stdout, "created admin %s\n", u.Email)
	if !*pwStdin {
		fmt.Fprintf(c.stdout, "password (shown once; a new one is asked for at the first sign-in): %s\n", password)
	}
	return nil
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

// adminEdgeToken makes an edge token and prints it, once.
func (c *cli) adminEdgeToken(args []string) error {
	fs := flag.NewFlagSet("admin edge-token", flag.ContinueOnError)
	fs.Usage = func() { fmt.Fprint(c.stderr, adminUsage); fs.PrintDefaults() }
	common := config.RegisterCommon(fs, c.getenv)
	name := fs.String("name", "", "what the token is for, such as the edge machine's name")
	if err := c.parse(fs, args); err != nil {
		return err
	}
	if err := common.Validate(); err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(context.Background(), adminTimeout)
	defer cancel()
	db, err := c.adminDB(ctx, common)
	if err != nil {
		return err
	}
	defer db.Close(context.Background())
	tok, err := (&edge.Service{Pool: db.Pool}).CreateToken(ctx, *name, audit.Actor{Email: "cli"})
	var fe input.Errors
	if errors.As(err, &fe) {
		return fmt.Errorf("--name %q: give the token a name of at most %d characters", *name, edge.MaxNameLength)
	}
	if err != nil {
		return err
	}
	fmt.Fprintf(c.stdout, "edge token %q (%s), shown only now:\n%s\n", tok.Token.Name, tok.Token.Prefix, tok.Value)
	return nil
}

// adminTimeout bounds an admin command.
const adminTimeout = 2 * time.Minute

// adminDB opens the database of an admin command and checks its schema.
func (c *cli) adminDB(ctx context.Context, common *config.Common) (*database.DB, error) {
	db, err := database.Open(ctx, common, common.Logger(c.stderr))
	if err != nil {
		return nil, err
	}
	if err := migrations.Check(ctx, db.Pool); err != nil {
		_ = db.Close(context.Background())
		return nil, err
	}
	return db, nil
}
