package clusters

import "github.com/kubebyon/kubebyon/queries"

// Namespace is the host namespace a cluster's control plane lives in.
func Namespace(c queries.Cluster) string { return "kubebyon-" + c.Slug }

// ReleaseName is the cluster's vcluster Helm release. The chart names the
// StatefulSet and Service after it, and the kubeconfig Secret vc-<release>.
func ReleaseName(c queries.Cluster) string { return c.Name }

// KubeconfigSecretName is the Secret vcluster writes the admin kubeconfig to.
func KubeconfigSecretName(c queries.Cluster) string { return "vc-" + ReleaseName(c) }
