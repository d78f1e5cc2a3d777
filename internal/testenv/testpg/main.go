// Command testpg runs a command, such as go test ./..., with one
// PostgreSQL for all the test binaries it starts (TEST_DATABASE_URL), so
// that each does not start, initialise and migrate one of its own. Each
// test still gets a database of its own, cloned from the migrated
// template, which the first test binary makes (testenv). The server stops
// when the command ends; testpg exits with the command's status.
//
//	go run ./internal/testenv/testpg [-dir DIR] go test ./...
//
// With -dir the server keeps its data in DIR from one run to the next, and
// its URL stays the same: go test caches a package's passing result only
// while the environment its tests read, TEST_DATABASE_URL among it, is the
// same (make test-fast). A server already running in DIR is shared and left
// running; without -dir the server lives in a new temporary directory,
// removed at the end.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"syscall"
	"time"

	"github.com/kubebyon/kubebyon/internal/testenv"
)

func main() { os.Exit(run(os.Args[1:])) }

func run(args []string) int {
	fs := flag.NewFlagSet("testpg", flag.ContinueOnError)
	keep := fs.String("dir", "", "keep the server's data in this directory, from one run to the next")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	args = fs.Args()
	if len(args) == 0 {
		fmt.Fprintln(os.Stderr, "usage: testpg [-dir DIR] command [args...]")
		return 2
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	srv, dir, err := testenv.StartPostgres(ctx, *keep)
	cancel()
	if err != nil {
		fmt.Fprintln(os.Stderr, "testpg:", err)
		return 1
	}
	defer func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if err := srv.Stop(ctx); err != nil {
			fmt.Fprintln(os.Stderr, "testpg: stop PostgreSQL:", err)
		}
		if *keep == "" {
			_ = os.RemoveAll(dir)
		}
	}()

	cmd := exec.Command(args[0], args[1:]...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, os.Stdout, os.Stderr
	cmd.Env = append(os.Environ(), "TEST_DATABASE_URL="+srv.URL())
	if err := cmd.Start(); err != nil {
		fmt.Fprintln(os.Stderr, "testpg:", err)
		return 1
	}
	// A signal goes on to the command; testpg waits for it to end, then
	// stops the server.
	signals := make(chan os.Signal, 1)
	signal.Notify(signals, syscall.SIGINT, syscall.SIGTERM)
	go func() {
		for sig := range signals {
			_ = cmd.Process.Signal(sig)
		}
	}()
	err = cmd.Wait()
	signal.Stop(signals)
	var exit *exec.ExitError
	switch {
	case errors.As(err, &exit):
		return exit.ExitCode()
	case err != nil:
		fmt.Fprintln(os.Stderr, "testpg:", err)
		return 1
	}
	return 0
}
