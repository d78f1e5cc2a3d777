// Package controlplane is the one interface the cluster lifecycle drives a
// control plane through, with one implementation per backend: vcluster
// (the Helm chart with private nodes) and Kamaji (a TenantControlPlane).
// Everything above it (the edge, join tokens, nodes, ingress, metrics)
// reaches the control plane through its admin kubeconfig and does not
// know which backend runs it.
package controlplane

import (
	"context"
	"fmt"
	"log/slog"

	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/kubebyon/kubebyon/internal/helm"
	"github.com/kubebyon/kubebyon/internal/kamaji"
	"github.com/kubebyon/kubebyon/internal/settings"
	"github.com/kubebyon/kubebyon/internal/vcluster"
	"github.com/kubebyon/kubebyon/queries"
)

// Host is the host cluster's clients, their calls bounded.
type Host struct {
	Config  *rest.Config
	Client  kubernetes.Interface
	Dynamic dynamic.Interface
}

// NewHost makes the clients of a host configuration.
func NewHost(cfg *rest.Config) (Host, error) {
	client, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return Host{}, fmt.Errorf("host cluster client: %w", err)
	}
	dyn, err := dynamic.NewForConfig(cfg)
	if err != nil {
		return Host{}, fmt.Errorf("host cluster dynamic client: %w", err)
	}
	return Host{Config: cfg, Client: client, Dynamic: dyn}, nil
}

// Installed says what an Install did, for the cluster's timeline: Reason
// is empty when nothing changed.
type Installed struct {
	Reason, Message string
}

// Env is what an install needs besides the cluster and the settings.
type Env struct {
	// HostAddress is a Ready host node's address of the type the edge
	// sends to (Kamaji advertises a NodePort control plane there).
	HostAddress string
}

// Backend runs clusters' control planes on the host.
type Backend interface {
	// Name is the backend's name (settings.BackendVCluster, ...).
	Name() string
	// Install writes the control plane (idempotent: a second call with
	// the same cluster changes nothing).
	Install(ctx context.Context, h Host, c queries.Cluster, rt settings.Runtime, env Env, logger *slog.Logger) (Installed, error)
	// Status reports whether the control plane serves, and if not what
	// it waits for.
	Status(ctx context.Context, h Host, c queries.Cluster) (ready bool, waiting string, err error)
	// Remove takes the control plane off the host (the namespace goes
	// after it); it reports whether there was one.
	Remove(ctx context.Context, h Host, c queries.Cluster, logger *slog.Logger) (bool, error)
	// Replicas and Scale suspend and resume the control plane; a missing
	// one is a NotFound error.
	Replicas(ctx context.Context, h Host, c queries.Cluster) (int32, error)
	Scale(ctx context.Context, h Host, c queries.Cluster, replicas int32) error
	// JoinsWithKubeadm says whether nodes join with the platform's own
	// kubeadm script (else the script hands over to the control plane's).
	JoinsWithKubeadm() bool
}

// For returns the backend of a cluster; charts loads vcluster's chart.
func For(c queries.Cluster, charts *vcluster.Charts) Backend {
	if c.Backend == settings.BackendKamaji {
		return Kamaji{}
	}
	return VCluster{Charts: charts}
}

// VCluster runs control planes with the vcluster chart, private nodes on.
type VCluster struct {
	Charts *vcluster.Charts
}

// Name implements Backend.
func (VCluster) Name() string { return settings.BackendVCluster }

// JoinsWithKubeadm implements Backend: vcluster serves its own node script.
func (VCluster) JoinsWithKubeadm() bool { return false }

// Install implements Backend: the licence Secret and the Helm release.
func (b VCluster) Install(ctx context.Context, h Host, c queries.Cluster, rt settings.Runtime, _ Env, logger *slog.Logger) (Installed, error) {
	if err := vcluster.EnsurePlatformSecret(ctx, h.Client, c, rt); err != nil {
		return Installed{}, err
	}
	ch, err := b.Charts.Load(rt)
	if err != nil {
		return Installed{}, err
	}
	values, err := vcluster.Values(c, rt)
	if err != nil {
		return Installed{}, err
	}
	outcome, err := b.Charts.Apply(ctx, h.Config, vcluster.Namespace(c), vcluster.ReleaseName(c), ch, values, logger)
	if err != nil {
		return Installed{}, err
	}
	switch outcome {
	case helm.Installed:
		logger.Info("vcluster installed")
		return Installed{Reason: "Installing", Message: "vcluster " + ch.Metadata.Version}, nil
	case helm.Upgraded:
		logger.Info("vcluster upgraded")
		return Installed{Reason: "Upgrading", Message: "vcluster " + ch.Metadata.Version}, nil
	}
	return Installed{}, nil
}

// Status implements Backend: the StatefulSet and vcluster's Secret.
func (VCluster) Status(ctx context.Context, h Host, c queries.Cluster) (bool, string, error) {
	r, err := vcluster.CheckReady(ctx, h.Client, c)
	if err != nil {
		return false, "", err
	}
	return r.Ready(), r.String(), nil
}

// Remove implements Backend: the Helm release.
func (VCluster) Remove(_ context.Context, h Host, c queries.Cluster, logger *slog.Logger) (bool, error) {
	return helm.Uninstall(h.Config, vcluster.Namespace(c), vcluster.ReleaseName(c), logger)
}

// Replicas implements Backend: the StatefulSet's.
func (VCluster) Replicas(ctx context.Context, h Host, c queries.Cluster) (int32, error) {
	return vcluster.ControlPlaneReplicas(ctx, h.Client, c)
}

// Scale implements Backend: through the StatefulSet's scale.
func (VCluster) Scale(ctx context.Context, h Host, c queries.Cluster, replicas int32) error {
	return vcluster.ScaleControlPlane(ctx, h.Client, c, replicas)
}

// Kamaji runs control planes as Kamaji TenantControlPlanes.
type Kamaji struct{}

// Name implements Backend.
func (Kamaji) Name() string { return settings.BackendKamaji }

// JoinsWithKubeadm implements Backend: nodes run kubeadm join.
func (Kamaji) JoinsWithKubeadm() bool { return true }

// Install implements Backend: the TenantControlPlane, applied. Replicas
// already set on it (an admin's, or a resume's) are kept.
func (Kamaji) Install(ctx context.Context, h Host, c queries.Cluster, rt settings.Runtime, env Env, logger *slog.Logger) (Installed, error) {
	replicas := int32(1)
	if n, err := kamaji.Replicas(ctx, h.Dynamic, vcluster.Namespace(c), kamaji.Name(c)); err == nil && n > 0 {
		replicas = n
	}
	tcp, err := kamaji.Desired(c, rt, vcluster.Namespace(c), env.HostAddress, replicas)
	if err != nil {
		return Installed{}, err
	}
	created, err := kamaji.Apply(ctx, h.Dynamic, tcp)
	if err != nil {
		return Installed{}, err
	}
	if created {
		logger.Info("tenant control plane created")
		return Installed{Reason: "Installing", Message: "Kamaji TenantControlPlane, Kubernetes " + c.KubernetesVersion}, nil
	}
	return Installed{}, nil
}

// Status implements Backend: Kamaji's status and its kubeconfig Secret.
func (Kamaji) Status(ctx context.Context, h Host, c queries.Cluster) (bool, string, error) {
	r, err := kamaji.CheckReady(ctx, h.Dynamic, h.Client, vcluster.Namespace(c), kamaji.Name(c))
	if err != nil {
		return false, "", err
	}
	return r.Ready(), r.String(), nil
}

// Remove implements Backend: the TenantControlPlane.
func (Kamaji) Remove(ctx context.Context, h Host, c queries.Cluster, _ *slog.Logger) (bool, error) {
	return kamaji.Delete(ctx, h.Dynamic, vcluster.Namespace(c), kamaji.Name(c))
}

// Replicas implements Backend: what the TenantControlPlane asks for.
func (Kamaji) Replicas(ctx context.Context, h Host, c queries.Cluster) (int32, error) {
	return kamaji.Replicas(ctx, h.Dynamic, vcluster.Namespace(c), kamaji.Name(c))
}

// Scale implements Backend: the TenantControlPlane's replicas.
func (Kamaji) Scale(ctx context.Context, h Host, c queries.Cluster, replicas int32) error {
	return kamaji.Scale(ctx, h.Dynamic, vcluster.Namespace(c), kamaji.Name(c), replicas)
}
