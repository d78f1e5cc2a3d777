package clusteraccess

import (
	"errors"
	"fmt"

	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
)

// Kubeconfig is a member's kubeconfig: the certificate authority of the
// admin kubeconfig's cluster (that of its current context, or its only
// cluster), server as the address, and a user entry that holds token and
// nothing else. Nothing else of the admin kubeconfig is copied, its client
// certificate and key least of all. The cluster and context are named
// contextName, the user userName.
func Kubeconfig(admin []byte, server, contextName, userName, token string) ([]byte, error) {
	switch {
	case server == "":
		return nil, errors.New("member kubeconfig: no server")
	case contextName == "" || userName == "":
		return nil, errors.New("member kubeconfig: no context or user name")
	case token == "":
		return nil, errors.New("member kubeconfig: no token")
	}
	cfg, err := clientcmd.Load(admin)
	if err != nil {
		return nil, fmt.Errorf("member kubeconfig: parse the admin kubeconfig: %w", err)
	}
	cluster, err := currentCluster(cfg)
	if err != nil {
		return nil, fmt.Errorf("member kubeconfig: the admin kubeconfig %w", err)
	}
	if len(cluster.CertificateAuthorityData) == 0 {
		// A file path would name a file on the platform's machine, not the
		// member's; the backends always write the CA inline.
		return nil, errors.New("member kubeconfig: the admin kubeconfig's cluster has no inline certificate-authority-data")
	}

	out := clientcmdapi.NewConfig()
	out.Clusters[contextName] = &clientcmdapi.Cluster{Server: server, CertificateAuthorityData: cluster.CertificateAuthorityData}
	out.AuthInfos[userName] = &clientcmdapi.AuthInfo{Token: token}
	out.Contexts[contextName] = &clientcmdapi.Context{Cluster: contextName, AuthInfo: userName}
	out.CurrentContext = contextName
	b, err := clientcmd.Write(*out)
	if err != nil {
		return nil, fmt.Errorf("member kubeconfig: write: %w", err)
	}
	return b, nil
}

// currentCluster is the cluster of cfg's current context, or its only
// cluster when no context is current.
func currentCluster(cfg *clientcmdapi.Config) (*clientcmdapi.Cluster, error) {
	if cfg.CurrentContext != "" {
		ctx, ok := cfg.Contexts[cfg.CurrentContext]
		if !ok {
			return nil, fmt.Errorf("has no context %q, its current one", cfg.CurrentContext)
		}
		cluster, ok := cfg.Clusters[ctx.Cluster]
		if !ok {
			return nil, fmt.Errorf("has no cluster %q, that of its current context", ctx.Cluster)
		}
		return cluster, nil
	}
	var only *clientcmdapi.Cluster
	for _, cluster := range cfg.Clusters {
		only = cluster
	}
	if len(cfg.Clusters) != 1 {
		return nil, fmt.Errorf("has no current context and %d clusters", len(cfg.Clusters))
	}
	return only, nil
}
