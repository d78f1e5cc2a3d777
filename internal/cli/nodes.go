package cli

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"strings"
	"time"

	"github.com/spf13/cobra"
)

func (a *App) nodesCommand() *cobra.Command {
	cmd := &cobra.Command{
		Use:     "nodes",
		Aliases: []string{"node"},
		Short:   "List, drain and join a cluster's machines",
	}
	group(cmd)
	cmd.AddCommand(a.nodesList(), a.nodesDrain(), a.nodesJoinCommand(), a.nodesWait())
	return cmd
}

func (a *App) nodesList() *cobra.Command {
	var cluster, output string
	cmd := &cobra.Command{
		Use:     "list --cluster NAME",
		Aliases: []string{"ls"},
		Short:   "List a cluster's nodes, read live from its control plane",
		Args:    args(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := checkOutput(output); err != nil {
				return err
			}
			c, cl, err := a.clientAndCluster(cmd.Context(), cluster)
			if err != nil {
				return err
			}
			list, err := c.Nodes(cmd.Context(), cl.ID)
			if err != nil {
				return fmt.Errorf("list the nodes of cluster %s: %w", cl.Name, err)
			}
			if output == outputJSON {
				if list == nil {
					list = []Node{}
				}
				return printJSON(a.Stdout, list)
			}
			rows, now := make([][]string, len(list)), a.now()
			for i, n := range list {
				rows[i] = nodeRow(now, n)
			}
			return printTable(a.Stdout, nodeHeader, rows)
		},
	}
	a.clusterFlag(cmd, &cluster)
	outputFlag(cmd, &output)
	return cmd
}

// clientAndCluster is the API client and the cluster of that name.
func (a *App) clientAndCluster(ctx context.Context, name string) (*Client, Cluster, error) {
	c, err := a.client()
	if err != nil {
		return nil, Cluster{}, err
	}
	cl, err := c.ClusterByName(ctx, name)
	return c, cl, err
}

func (a *App) nodesDrain() *cobra.Command {
	var (
		cluster, output       string
		force, emptyDir, wait bool
		timeoutSeconds        int
	)
	cmd := &cobra.Command{
		Use:   "drain NODE --cluster NAME",
		Short: "Cordon a node and evict its pods",
		Long: `Cordon a node and evict its pods (DaemonSets' pods stay). The platform does it;
--wait waits until it is done and fails if the drain fails.`,
		Args: args(cobra.ExactArgs(1)),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := checkOutput(output); err != nil {
				return err
			}
			var in DrainOptions
			// Only what was set is sent: the rest takes the platform's defaults.
			if cmd.Flags().Changed("force") {
				in.Force = &force
			}
			if cmd.Flags().Changed("delete-emptydir-data") {
				in.DeleteEmptyDirData = &emptyDir
			}
			if cmd.Flags().Changed("timeout-seconds") {
				in.TimeoutSeconds = &timeoutSeconds
			}
			c, cl, err := a.clientAndCluster(cmd.Context(), cluster)
			if err != nil {
				return err
			}
			op, loc, err := c.DrainNode(cmd.Context(), cl.ID, args[0], in)
			if err != nil {
				return fmt.Errorf("drain node %s: %w", args[0], err)
			}
			if wait {
				if output == outputTable {
					fmt.Fprintf(a.Stderr, "Draining node %s...\n", args[0])
				}
				if op, err = a.waitOperation(cmd.Context(), c, loc); err != nil {
					return err
				}
			}
			if output == outputJSON {
				return printJSON(a.Stdout, op)
			}
			switch op.Status {
			case "failed":
				return fmt.Errorf("draining node %s failed: %s", op.Node, op.Message)
			case "succeeded":
				fmt.Fprintf(a.Stdout, "Node %s drained\n", op.Node)
			default:
				fmt.Fprintf(a.Stdout, "Draining node %s (operation %d)\n", op.Node, op.ID)
			}
			return nil
		},
	}
	a.clusterFlag(cmd, &cluster)
	f := cmd.Flags()
	f.BoolVar(&force, "force", false, "also delete pods no controller manages")
	f.BoolVar(&emptyDir, "delete-emptydir-data", false, "also evict pods with emptyDir volumes (their data is lost)")
	f.IntVar(&timeoutSeconds, "timeout-seconds", 0, "give up the drain after this many seconds (default: the platform's)")
	f.BoolVar(&wait, "wait", false, "wait until the drain is done")
	outputFlag(cmd, &output)
	return cmd
}

// waitOperation polls a node operation at path until it is no longer
// running; a failed one is returned, for its message, without an error.
func (a *App) waitOperation(ctx context.Context, c *Client, path string) (NodeOperation, error) {
	// The Location is a path; were it ever a whole URL, its path is ours.
	if u, err := url.Parse(path); err == nil && u.IsAbs() {
		path = u.RequestURI()
	}
	var op NodeOperation
	err := a.poll(ctx, func() (bool, error) {
		var err error
		op, err = c.NodeOperation(ctx, path)
		return err == nil && op.Status != "running", err
	})
	if err != nil {
		return op, fmt.Errorf("wait for the operation: %w", err)
	}
	return op, nil
}

func (a *App) nodesJoinCommand() *cobra.Command {
	var (
		cluster string
		in      = JoinTokenCreate{MaxUses: 1}
	)
	cmd := &cobra.Command{
		Use:   "join-command --cluster NAME",
		Short: "Print a command that joins one machine (a fresh single-use token)",
		Long: `Make a fresh join token for one machine and print only its command, for
cloud-init, Ansible and the like: run it as root on the Linux machine.`,
		Args: args(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := checkLifetime(in.Lifetime); err != nil {
				return err
			}
			c, cl, err := a.clientAndCluster(cmd.Context(), cluster)
			if err != nil {
				return err
			}
			t, err := c.CreateJoinToken(cmd.Context(), cl.ID, in)
			if err != nil {
				return fmt.Errorf("make a join token of cluster %s: %w", cl.Name, err)
			}
			if t.Command == "" {
				return errors.New("the platform sent no join command")
			}
			fmt.Fprintln(a.Stdout, strings.TrimSpace(t.Command))
			return nil
		},
	}
	a.clusterFlag(cmd, &cluster)
	tokenFlags(cmd, &in)
	cmd.Flags().StringVar(&in.Description, "description", "", "what the token is for")
	return cmd
}

func (a *App) nodesWait() *cobra.Command {
	var (
		cluster, forState string
		timeout           time.Duration
	)
	cmd := &cobra.Command{
		Use:   "wait NODE --cluster NAME --for ready",
		Short: "Wait until a node is Ready",
		Long:  `Wait until a node has joined the cluster and is Ready, asking every 2 seconds.`,
		Args:  args(cobra.ExactArgs(1)),
		RunE: func(cmd *cobra.Command, args []string) error {
			if forState != "ready" {
				return usageErrorf("--for must be ready")
			}
			c, cl, err := a.clientAndCluster(cmd.Context(), cluster)
			if err != nil {
				return err
			}
			ctx, cancel := context.WithTimeout(cmd.Context(), timeout)
			defer cancel()
			status := "not joined"
			err = a.poll(ctx, func() (bool, error) {
				list, err := c.Nodes(ctx, cl.ID)
				if err != nil {
					return false, err
				}
				for _, n := range list {
					if n.Name == args[0] {
						status = n.Status
						return n.Status == "Ready", nil
					}
				}
				return false, nil
			})
			if errors.Is(err, context.DeadlineExceeded) {
				return fmt.Errorf("node %s is not ready after %s (%s)", args[0], timeout, status)
			}
			if err != nil {
				return fmt.Errorf("wait for node %s: %w", args[0], err)
			}
			fmt.Fprintf(a.Stdout, "Node %s is ready\n", args[0])
			return nil
		},
	}
	a.clusterFlag(cmd, &cluster)
	cmd.Flags().StringVar(&forState, "for", "", "ready")
	cmd.Flags().DurationVar(&timeout, "timeout", 10*time.Minute, "how long to wait")
	_ = cmd.MarkFlagRequired("for")
	_ = cmd.RegisterFlagCompletionFunc("for", cobra.FixedCompletions([]string{"ready"}, cobra.ShellCompDirectiveNoFileComp))
	return cmd
}
