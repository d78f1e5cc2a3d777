// Package cli is kubebyon's client commands for users (login, clusters,
// tokens, nodes, completion): a client of the JSON API only, with the
// user's API key.
package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"

	"github.com/spf13/cobra"
)

// App is one run of the client commands, with its environment and streams.
type App struct {
	Env    Env
	Stdin  io.Reader
	Stdout io.Writer
	Stderr io.Writer
	// PollInterval is how often the wait commands ask again (2s when 0).
	PollInterval time.Duration
	// HTTP makes the requests (a client with a 1 minute timeout when nil).
	HTTP *http.Client
	// Now is the time ages are counted from (time.Now when nil).
	Now func() time.Time

	settings settings
}

// Run runs the client command args (its name first, such as "clusters")
// and returns the exit code: 0, 1 on failure, 2 on a usage error.
func Run(ctx context.Context, args []string, env func(string) string, stdin io.Reader, stdout, stderr io.Writer) int {
	a := &App{Env: env, Stdin: stdin, Stdout: stdout, Stderr: stderr}
	return a.Run(ctx, args)
}

// usageError is a command used wrongly: exit code 2.
type usageError struct{ error }

func usageErrorf(format string, args ...any) error {
	return usageError{fmt.Errorf(format, args...)}
}

// Run is the package's Run with a's settings.
func (a *App) Run(ctx context.Context, args []string) int {
	root := a.root()
	root.SetArgs(args)
	err := root.ExecuteContext(ctx)
	if err == nil {
		return 0
	}
	var ue usageError
	if errors.As(err, &ue) || cobraUsage(err) {
		fmt.Fprintf(a.Stderr, "kubebyon: %s\nRun 'kubebyon %s --help' for usage.\n", err, strings.Join(commandPath(root, args), " "))
		return 2
	}
	// The API's own message is for people already: it is printed as it
	// is, with what is wrong with each field.
	var ae *APIError
	if errors.As(err, &ae) {
		err = ae
	}
	fmt.Fprintf(a.Stderr, "kubebyon: %s\n", err)
	return 1
}

// cobraUsage tells whether err is cobra's own for a command used wrongly
// (it has no error types for them).
func cobraUsage(err error) bool {
	for _, prefix := range []string{"unknown command", "required flag(s)", "flag needs", "unknown flag", "unknown shorthand"} {
		if strings.HasPrefix(err.Error(), prefix) {
			return true
		}
	}
	return false
}

// commandPath is the names of the command args reach, for the usage hint.
func commandPath(root *cobra.Command, args []string) []string {
	cmd, _, err := root.Find(args)
	if err != nil || cmd == nil {
		return nil
	}
	return strings.Fields(strings.TrimPrefix(cmd.CommandPath(), root.Name()))
}

func (a *App) root() *cobra.Command {
	root := &cobra.Command{
		Use:   "kubebyon",
		Short: "The KubeBYON client: your clusters, join tokens and nodes",
		Long: `The KubeBYON client: your clusters, join tokens and nodes, through the
platform's API with your API key.

Start with 'kubebyon login --url URL --api-key KEY'. The URL and key come from
the config file, over them $KUBEBYON_URL and $KUBEBYON_API_KEY, over those the
flags --url and --api-key.`,
		SilenceErrors: true,
		SilenceUsage:  true,
	}
	group(root)
	root.SetIn(a.Stdin)
	root.SetOut(a.Stdout)
	root.SetErr(a.Stderr)
	// Wrong flags are usage errors (exit 2), as for the server commands.
	root.SetFlagErrorFunc(func(_ *cobra.Command, err error) error { return usageError{err} })
	f := root.PersistentFlags()
	f.StringVar(&a.settings.configFile, "config", "", "config file (default: <user config dir>/kubebyon/config.yaml)")
	f.StringVar(&a.settings.url, "url", "", "the platform's URL (over $KUBEBYON_URL and the config file)")
	f.StringVar(&a.settings.apiKey, "api-key", "", "API key (over $KUBEBYON_API_KEY and the config file)")
	root.AddCommand(a.loginCommand(), a.clustersCommand(), a.tokensCommand(), a.nodesCommand())
	return root
}

// group makes cmd a command of commands: alone it shows its help, with an
// unknown subcommand it is a usage error (cobra would show the help and
// succeed).
func group(cmd *cobra.Command) {
	cmd.Args = func(_ *cobra.Command, args []string) error {
		if len(args) > 0 {
			return usageErrorf("unknown command %q for %q", args[0], cmd.CommandPath())
		}
		return nil
	}
	cmd.RunE = func(cmd *cobra.Command, _ []string) error { return cmd.Help() }
}

// args wraps a cobra argument check so that its failure is a usage error.
func args(check cobra.PositionalArgs) cobra.PositionalArgs {
	return func(cmd *cobra.Command, a []string) error {
		if err := check(cmd, a); err != nil {
			return usageError{err}
		}
		return nil
	}
}

// client is the API client from the config, environment and flags.
func (a *App) client() (*Client, error) {
	c, err := a.settings.resolve(a.Env)
	if err != nil {
		return nil, err
	}
	return a.clientFor(c), nil
}

func (a *App) clientFor(c Config) *Client {
	hc := a.HTTP
	if hc == nil {
		hc = &http.Client{Timeout: time.Minute}
	}
	return &Client{BaseURL: c.URL, APIKey: c.APIKey, HTTP: hc}
}

func (a *App) now() time.Time {
	if a.Now != nil {
		return a.Now()
	}
	return time.Now()
}

func (a *App) pollInterval() time.Duration {
	if a.PollInterval > 0 {
		return a.PollInterval
	}
	return 2 * time.Second
}

// poll calls check every poll interval until it is done or fails, or ctx
// ends; errors that may pass (the platform busy, the network) are retried.
func (a *App) poll(ctx context.Context, check func() (done bool, err error)) error {
	t := time.NewTicker(a.pollInterval())
	defer t.Stop()
	for {
		done, err := check()
		if err != nil && !transient(err) {
			return err
		}
		if err == nil && done {
			return nil
		}
		select {
		case <-ctx.Done():
			if err != nil {
				return fmt.Errorf("%w (last: %v)", ctx.Err(), err)
			}
			return ctx.Err()
		case <-t.C:
		}
	}
}

func (a *App) loginCommand() *cobra.Command {
	return &cobra.Command{
		Use:   "login --url URL --api-key KEY",
		Short: "Check an API key and save it with the platform's URL",
		Long: `Check an API key and save it with the platform's URL in the config file
(mode 0600), for the other commands.

Make the key on the console's "API keys" page: a write key for the commands that
change something.`,
		Args: args(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			c := Config{URL: a.settings.url, APIKey: a.settings.apiKey}
			if c.URL == "" {
				c.URL = a.Env("KUBEBYON_URL")
			}
			if c.APIKey == "" {
				c.APIKey = a.Env("KUBEBYON_API_KEY")
			}
			c.URL = strings.TrimRight(c.URL, "/")
			if c.URL == "" || c.APIKey == "" {
				return usageErrorf("login needs --url and --api-key")
			}
			me, err := a.clientFor(c).Me(cmd.Context())
			if err != nil {
				return fmt.Errorf("check the API key: %w", err)
			}
			path, err := configPath(a.Env, a.settings.configFile)
			if err != nil {
				return err
			}
			if err := saveConfig(path, c); err != nil {
				return err
			}
			fmt.Fprintf(a.Stdout, "Logged in to %s as %s\n", c.URL, me.Email)
			return nil
		},
	}
}
