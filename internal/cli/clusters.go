package cli

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/spf13/cobra"
)

func (a *App) clustersCommand() *cobra.Command {
	cmd := &cobra.Command{
		Use:     "clusters",
		Aliases: []string{"cluster"},
		Short:   "List, create, wait for and delete clusters; get their kubeconfig",
	}
	group(cmd)
	cmd.AddCommand(a.clustersList(), a.clustersGet(), a.clustersCreate(), a.clustersDelete(),
		a.clustersKubeconfig(), a.clustersWait())
	return cmd
}

// outputFlag adds -o to cmd.
func outputFlag(cmd *cobra.Command, out *string) {
	cmd.Flags().StringVarP(out, "output", "o", outputTable, "output format: table or json")
	_ = cmd.RegisterFlagCompletionFunc("output", cobra.FixedCompletions([]string{outputTable, outputJSON}, cobra.ShellCompDirectiveNoFileComp))
}

// completeClusters completes a cluster name from the API (nothing when
// not logged in).
func (a *App) completeClusters(cmd *cobra.Command, args []string, _ string) ([]string, cobra.ShellCompDirective) {
	if len(args) > 0 {
		return nil, cobra.ShellCompDirectiveNoFileComp
	}
	return a.clusterNames(cmd.Context())
}

func (a *App) clusterNames(ctx context.Context) ([]string, cobra.ShellCompDirective) {
	c, err := a.client()
	if err != nil {
		return nil, cobra.ShellCompDirectiveNoFileComp
	}
	all, err := c.Clusters(ctx)
	if err != nil {
		return nil, cobra.ShellCompDirectiveNoFileComp
	}
	names := make([]string, len(all))
	for i, cl := range all {
		names[i] = cl.Name
	}
	return names, cobra.ShellCompDirectiveNoFileComp
}

func (a *App) printClusters(format string, list []Cluster, withMessage bool) error {
	if format == outputJSON {
		if list == nil {
			list = []Cluster{}
		}
		return printJSON(a.Stdout, list)
	}
	header, now := clusterHeader, a.now()
	if withMessage {
		header = append(append([]string(nil), header...), "MESSAGE")
	}
	rows := make([][]string, len(list))
	for i, cl := range list {
		rows[i] = clusterRow(now, cl)
		if withMessage {
			rows[i] = append(rows[i], cl.StatusMessage)
		}
	}
	return printTable(a.Stdout, header, rows)
}

func (a *App) clustersList() *cobra.Command {
	var output string
	cmd := &cobra.Command{
		Use:     "list",
		Aliases: []string{"ls"},
		Short:   "List your clusters, newest first",
		Args:    args(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := checkOutput(output); err != nil {
				return err
			}
			c, err := a.client()
			if err != nil {
				return err
			}
			all, err := c.Clusters(cmd.Context())
			if err != nil {
				return fmt.Errorf("list the clusters: %w", err)
			}
			return a.printClusters(output, all, false)
		},
	}
	outputFlag(cmd, &output)
	return cmd
}

func (a *App) clustersGet() *cobra.Command {
	var output string
	cmd := &cobra.Command{
		Use:               "get NAME",
		Short:             "Show a cluster",
		Args:              args(cobra.ExactArgs(1)),
		ValidArgsFunction: a.completeClusters,
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := checkOutput(output); err != nil {
				return err
			}
			c, err := a.client()
			if err != nil {
				return err
			}
			found, err := c.ClusterByName(cmd.Context(), args[0])
			if err != nil {
				return err
			}
			// The list leaves out the cluster's managed ingress.
			cl, err := c.Cluster(cmd.Context(), found.ID)
			if err != nil {
				return fmt.Errorf("read cluster %s: %w", args[0], err)
			}
			if output == outputJSON {
				return printJSON(a.Stdout, cl)
			}
			return a.printClusters(output, []Cluster{cl}, true)
		},
	}
	outputFlag(cmd, &output)
	return cmd
}

func (a *App) clustersCreate() *cobra.Command {
	var (
		in      ClusterCreate
		wait    bool
		timeout time.Duration
		output  string
	)
	cmd := &cobra.Command{
		Use:   "create NAME",
		Short: "Create a cluster",
		Long: `Create a cluster. It starts pending while the platform installs its control
plane; --wait waits until it is ready (and fails if it fails).`,
		Args: args(cobra.ExactArgs(1)),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := checkOutput(output); err != nil {
				return err
			}
			c, err := a.client()
			if err != nil {
				return err
			}
			in.Name = args[0]
			cl, err := c.CreateCluster(cmd.Context(), in)
			if err != nil {
				return fmt.Errorf("create cluster %s: %w", in.Name, err)
			}
			if wait {
				if output == outputTable {
					fmt.Fprintf(a.Stderr, "Cluster %s created; waiting for it to be ready...\n", cl.Name)
				}
				if cl, err = a.waitReady(cmd.Context(), c, cl, timeout); err != nil {
					return err
				}
			}
			return a.printClusters(output, []Cluster{cl}, false)
		},
	}
	f := cmd.Flags()
	f.StringVar(&in.KubernetesVersion, "kubernetes-version", "", "Kubernetes version (default: the newest the platform offers)")
	f.StringVar(&in.PublicAccessMode, "public-access-mode", "", "nodeport or loadbalancer (default: the platform's)")
	f.StringVar(&in.Description, "description", "", "description")
	f.StringVar(&in.Backend, "backend", "", "vcluster or kamaji (default: the first your plan allows)")
	f.BoolVar(&wait, "wait", false, "wait until the cluster is ready")
	f.DurationVar(&timeout, "timeout", 10*time.Minute, "how long --wait waits")
	_ = cmd.RegisterFlagCompletionFunc("public-access-mode", cobra.FixedCompletions([]string{"nodeport", "loadbalancer"}, cobra.ShellCompDirectiveNoFileComp))
	_ = cmd.RegisterFlagCompletionFunc("backend", cobra.FixedCompletions([]string{"vcluster", "kamaji"}, cobra.ShellCompDirectiveNoFileComp))
	outputFlag(cmd, &output)
	return cmd
}

func (a *App) clustersDelete() *cobra.Command {
	var yes bool
	cmd := &cobra.Command{
		Use:               "delete NAME --yes",
		Short:             "Delete a cluster, its control plane and its data",
		Args:              args(cobra.ExactArgs(1)),
		ValidArgsFunction: a.completeClusters,
		RunE: func(cmd *cobra.Command, args []string) error {
			// Checked before anything is asked: nothing of it comes back.
			if !yes {
				return usageErrorf("deleting cluster %s cannot be undone: add --yes", args[0])
			}
			c, err := a.client()
			if err != nil {
				return err
			}
			cl, err := c.ClusterByName(cmd.Context(), args[0])
			if err != nil {
				return err
			}
			if _, err := c.DeleteCluster(cmd.Context(), cl.ID); err != nil {
				return fmt.Errorf("delete cluster %s: %w", cl.Name, err)
			}
			fmt.Fprintf(a.Stdout, "Cluster %s is being deleted\n", cl.Name)
			return nil
		},
	}
	cmd.Flags().BoolVar(&yes, "yes", false, "yes, delete it")
	return cmd
}

func (a *App) clustersKubeconfig() *cobra.Command {
	var (
		path  string
		print bool
	)
	cmd := &cobra.Command{
		Use:   "kubeconfig NAME",
		Short: "Add a ready cluster to your kube config and make it the current context",
		Long: `Download a ready cluster's admin kubeconfig and merge it into your kube config
(the first file of $KUBECONFIG, else ~/.kube/config; --kubeconfig for another)
as the cluster, user and context kubebyon-NAME, replacing those of that name,
and make it the current context. --print prints it instead.`,
		Args:              args(cobra.ExactArgs(1)),
		ValidArgsFunction: a.completeClusters,
		RunE: func(cmd *cobra.Command, args []string) error {
			c, err := a.client()
			if err != nil {
				return err
			}
			cl, err := c.ClusterByName(cmd.Context(), args[0])
			if err != nil {
				return err
			}
			raw, err := c.Kubeconfig(cmd.Context(), cl.ID)
			if err != nil {
				return fmt.Errorf("download the kubeconfig of cluster %s: %w", cl.Name, err)
			}
			if print {
				_, err := a.Stdout.Write(raw)
				return err
			}
			if path == "" {
				if path, err = defaultKubeconfig(a.Env); err != nil {
					return err
				}
			}
			if err := mergeKubeconfig(path, cl.Name, raw); err != nil {
				return err
			}
			fmt.Fprintf(a.Stdout, "Merged cluster %s into %s as context %s (now current)\n", cl.Name, path, contextName(cl.Name))
			return nil
		},
	}
	cmd.Flags().StringVar(&path, "kubeconfig", "", "kube config file to merge into (default: the first of $KUBECONFIG, else ~/.kube/config)")
	cmd.Flags().BoolVar(&print, "print", false, "print the kubeconfig instead of merging it")
	return cmd
}

func (a *App) clustersWait() *cobra.Command {
	var (
		forState string
		timeout  time.Duration
	)
	cmd := &cobra.Command{
		Use:   "wait NAME --for ready|deleted",
		Short: "Wait until a cluster is ready, or deleted",
		Long: `Wait until a cluster is ready (failing when it fails) or gone once deleted,
asking the platform every 2 seconds.`,
		Args:              args(cobra.ExactArgs(1)),
		ValidArgsFunction: a.completeClusters,
		RunE: func(cmd *cobra.Command, args []string) error {
			if forState != "ready" && forState != "deleted" {
				return usageErrorf("--for must be ready or deleted")
			}
			c, err := a.client()
			if err != nil {
				return err
			}
			cl, err := c.ClusterByName(cmd.Context(), args[0])
			if forState == "deleted" && errors.Is(err, ErrNoCluster) {
				fmt.Fprintf(a.Stdout, "Cluster %s is deleted\n", args[0])
				return nil
			}
			if err != nil {
				return err
			}
			if forState == "deleted" {
				return a.waitDeleted(cmd.Context(), c, cl, timeout)
			}
			if _, err := a.waitReady(cmd.Context(), c, cl, timeout); err != nil {
				return err
			}
			fmt.Fprintf(a.Stdout, "Cluster %s is ready\n", cl.Name)
			return nil
		},
	}
	cmd.Flags().StringVar(&forState, "for", "", "ready or deleted")
	cmd.Flags().DurationVar(&timeout, "timeout", 10*time.Minute, "how long to wait")
	_ = cmd.MarkFlagRequired("for")
	_ = cmd.RegisterFlagCompletionFunc("for", cobra.FixedCompletions([]string{"ready", "deleted"}, cobra.ShellCompDirectiveNoFileComp))
	return cmd
}

// waitReady polls the cluster until it is ready; failed is an error with
// the platform's message, and so is running out of time.
func (a *App) waitReady(ctx context.Context, c *Client, cl Cluster, timeout time.Duration) (Cluster, error) {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	last := cl
	err := a.poll(ctx, func() (bool, error) {
		got, err := c.Cluster(ctx, cl.ID)
		if err != nil {
			return false, err
		}
		last = got
		switch got.Status {
		case "ready":
			return true, nil
		case "failed":
			return false, fmt.Errorf("cluster %s failed: %s", cl.Name, got.StatusMessage)
		case "deleting":
			return false, fmt.Errorf("cluster %s is being deleted", cl.Name)
		}
		return false, nil
	})
	switch {
	case errors.Is(err, context.DeadlineExceeded):
		return last, fmt.Errorf("cluster %s is not ready after %s (status %s)", cl.Name, timeout, last.Status)
	case isStatus(err, http.StatusNotFound):
		return last, fmt.Errorf("cluster %s is gone", cl.Name)
	}
	return last, err
}

// waitDeleted polls the cluster until the API no longer has it (404).
func (a *App) waitDeleted(ctx context.Context, c *Client, cl Cluster, timeout time.Duration) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	last := cl
	err := a.poll(ctx, func() (bool, error) {
		got, err := c.Cluster(ctx, cl.ID)
		if isStatus(err, http.StatusNotFound) {
			return true, nil
		}
		if err == nil {
			last = got
		}
		return false, err
	})
	if errors.Is(err, context.DeadlineExceeded) {
		return fmt.Errorf("cluster %s is not deleted after %s (status %s)", cl.Name, timeout, last.Status)
	}
	if err != nil {
		return err
	}
	fmt.Fprintf(a.Stdout, "Cluster %s is deleted\n", cl.Name)
	return nil
}
