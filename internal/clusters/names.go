package clusters

import (
	"github.com/kubebyon/kubebyon/internal/kamaji"
	"github.com/kubebyon/kubebyon/internal/settings"
	"github.com/kubebyon/kubebyon/internal/vcluster"
	"github.com/kubebyon/kubebyon/queries"
)

// Namespace is the host namespace a cluster's control plane lives in.
func Namespace(c queries.Cluster) string { return vcluster.Namespace(c) }

// ReleaseName is the cluster's vcluster Helm release.
func ReleaseName(c queries.Cluster) string { return vcluster.ReleaseName(c) }

// KubeconfigSecretName is the Secret vcluster writes the admin kubeconfig to.
func KubeconfigSecretName(c queries.Cluster) string { return vcluster.KubeconfigSecretName(c) }

// AdminKubeconfigSecret names the host Secret and key the cluster's
// backend writes the admin kubeconfig to: vcluster's vc-<release> (key
// config), Kamaji's <name>-admin-kubeconfig (key admin.conf).
func AdminKubeconfigSecret(c queries.Cluster) (secret, key string) {
	if c.Backend == settings.BackendKamaji {
		return kamaji.AdminKubeconfigSecret(c), kamaji.AdminKubeconfigKey
	}
	return KubeconfigSecretName(c), "config"
}
