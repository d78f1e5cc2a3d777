package clusters

import (
	"github.com/kubebyon/kubebyon/internal/vcluster"
	"github.com/kubebyon/kubebyon/queries"
)

// Namespace is the host namespace a cluster's control plane lives in.
func Namespace(c queries.Cluster) string { return vcluster.Namespace(c) }

// ReleaseName is the cluster's vcluster Helm release.
func ReleaseName(c queries.Cluster) string { return vcluster.ReleaseName(c) }

// KubeconfigSecretName is the Secret vcluster writes the admin kubeconfig to.
func KubeconfigSecretName(c queries.Cluster) string { return vcluster.KubeconfigSecretName(c) }
