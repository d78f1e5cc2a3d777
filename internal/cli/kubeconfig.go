package cli

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"

	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
)

// contextName is the name a cluster's entries take in the user's kube
// config: its own, whatever the downloaded file calls them (vcluster names
// every cluster alike).
func contextName(cluster string) string { return "kubebyon-" + cluster }

// defaultKubeconfig is where kubectl reads first: the first path of
// $KUBECONFIG, else ~/.kube/config.
func defaultKubeconfig(env Env) (string, error) {
	for _, p := range filepath.SplitList(env("KUBECONFIG")) {
		if p != "" {
			return p, nil
		}
	}
	home, err := homeDir(env)
	if err != nil {
		return "", fmt.Errorf("find the kube config: %w", err)
	}
	return filepath.Join(home, ".kube", "config"), nil
}

// mergeKubeconfig puts the downloaded kubeconfig of cluster into the kube
// config at path (made when missing) as its cluster, user and context
// kubebyon-<cluster>, replacing those of that name, and makes it the
// current context; the other entries stay as they were.
func mergeKubeconfig(path, cluster string, downloaded []byte) error {
	in, err := clientcmd.Load(downloaded)
	if err != nil {
		return fmt.Errorf("read the downloaded kubeconfig: %w", err)
	}
	ctx, err := pickContext(in)
	if err != nil {
		return fmt.Errorf("the downloaded kubeconfig: %w", err)
	}
	entry, user := in.Clusters[ctx.Cluster], in.AuthInfos[ctx.AuthInfo]
	if entry == nil || user == nil {
		return errors.New("the downloaded kubeconfig: its context names a cluster or user it does not have")
	}

	out, err := clientcmd.LoadFromFile(path)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		out = clientcmdapi.NewConfig()
	case err != nil:
		return fmt.Errorf("read the kube config: %w", err)
	}
	name := contextName(cluster)
	out.Clusters[name] = entry.DeepCopy()
	out.AuthInfos[name] = user.DeepCopy()
	out.Contexts[name] = &clientcmdapi.Context{Cluster: name, AuthInfo: name, Namespace: ctx.Namespace}
	out.CurrentContext = name

	b, err := clientcmd.Write(*out)
	if err != nil {
		return fmt.Errorf("write the kube config: %w", err)
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return fmt.Errorf("write the kube config: %w", err)
	}
	if err := writeFile(path, b); err != nil {
		return fmt.Errorf("write the kube config: %w", err)
	}
	return nil
}

// pickContext is the kubeconfig's current context, or its only one.
func pickContext(c *clientcmdapi.Config) (*clientcmdapi.Context, error) {
	if ctx := c.Contexts[c.CurrentContext]; ctx != nil {
		return ctx, nil
	}
	names := make([]string, 0, len(c.Contexts))
	for name := range c.Contexts {
		names = append(names, name)
	}
	sort.Strings(names)
	if len(names) == 0 {
		return nil, errors.New("it has no context")
	}
	return c.Contexts[names[0]], nil
}
