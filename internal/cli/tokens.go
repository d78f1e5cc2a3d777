package cli

import (
	"fmt"

	"github.com/spf13/cobra"
)

func (a *App) tokensCommand() *cobra.Command {
	cmd := &cobra.Command{
		Use:     "tokens",
		Aliases: []string{"token"},
		Short:   "Make join tokens, which join machines to a cluster",
	}
	group(cmd)
	cmd.AddCommand(a.tokensCreate())
	return cmd
}

// clusterFlag adds the required --cluster NAME to cmd.
func (a *App) clusterFlag(cmd *cobra.Command, name *string) {
	cmd.Flags().StringVar(name, "cluster", "", "the cluster's name")
	_ = cmd.MarkFlagRequired("cluster")
	_ = cmd.RegisterFlagCompletionFunc("cluster", func(cmd *cobra.Command, _ []string, _ string) ([]string, cobra.ShellCompDirective) {
		return a.clusterNames(cmd.Context())
	})
}

// lifetimes are the join tokens' lifetimes the API takes.
var lifetimes = []string{"1h", "24h", "7d", "none"}

// tokenFlags adds what a join token is made with to cmd.
func tokenFlags(cmd *cobra.Command, in *JoinTokenCreate) {
	f := cmd.Flags()
	f.StringVar(&in.Lifetime, "lifetime", "1h", "how long it works: 1h, 24h, 7d or none")
	_ = cmd.RegisterFlagCompletionFunc("lifetime", cobra.FixedCompletions(lifetimes, cobra.ShellCompDirectiveNoFileComp))
}

func checkLifetime(l string) error {
	for _, ok := range lifetimes {
		if l == ok {
			return nil
		}
	}
	return usageErrorf("--lifetime must be 1h, 24h, 7d or none")
}

func (a *App) tokensCreate() *cobra.Command {
	var (
		cluster, output string
		in              JoinTokenCreate
	)
	cmd := &cobra.Command{
		Use:   "create --cluster NAME",
		Short: "Make a join token, with the command that joins a machine",
		Long: `Make a join token of a ready cluster and print it with its command: run the
command as root on a Linux machine to join it to the cluster.`,
		Args: args(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := checkOutput(output); err != nil {
				return err
			}
			if err := checkLifetime(in.Lifetime); err != nil {
				return err
			}
			if in.MaxUses < 0 {
				return usageErrorf("--max-uses must be 0 (any number) or more")
			}
			c, err := a.client()
			if err != nil {
				return err
			}
			cl, err := c.ClusterByName(cmd.Context(), cluster)
			if err != nil {
				return err
			}
			t, err := c.CreateJoinToken(cmd.Context(), cl.ID, in)
			if err != nil {
				return fmt.Errorf("make a join token of cluster %s: %w", cl.Name, err)
			}
			if output == outputJSON {
				return printJSON(a.Stdout, t)
			}
			expires, uses := "never", "any number"
			if t.ExpiresAt != nil {
				expires = t.ExpiresAt.Local().Format("2006-01-02 15:04:05 MST")
			}
			if t.MaxUses != nil {
				uses = fmt.Sprint(*t.MaxUses)
			}
			fmt.Fprintf(a.Stdout, "Token:    %s\nExpires:  %s\nMachines: %s\n\nRun as root on a Linux machine to join it to cluster %s:\n\n  %s\n",
				t.Token, expires, uses, cl.Name, t.Command)
			return nil
		},
	}
	a.clusterFlag(cmd, &cluster)
	tokenFlags(cmd, &in)
	cmd.Flags().StringVar(&in.Description, "description", "", "what the token is for")
	cmd.Flags().IntVar(&in.MaxUses, "max-uses", 1, "how many machines may join with it (0: any number)")
	outputFlag(cmd, &output)
	return cmd
}
