package clusters

import (
	"context"
	"errors"
	"fmt"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/kubebyon/kubebyon/internal/audit"
	"github.com/kubebyon/kubebyon/internal/orgs"
	"github.com/kubebyon/kubebyon/internal/settings"
	"github.com/kubebyon/kubebyon/queries"
)

// Errors of the kubeconfig download (catalog message IDs).
var (
	ErrNotReady          = errors.New("ErrClusterNotReady")
	ErrKubeconfigMissing = errors.New("ErrClusterKubeconfigMissing")
)

// hostTimeout bounds the host cluster calls of one request.
const hostTimeout = 15 * time.Second

// Kubeconfig returns the admin kubeconfig of an organization's ready cluster,
// for a member who may operate it, and
// records that it was handed out. vcluster writes it for use inside the
// host cluster; every server in it is replaced by the cluster's public
// endpoint, which is what users reach.
func (s *Service) Kubeconfig(ctx context.Context, who orgs.Acting, id int64, actor audit.Actor) (queries.Cluster, []byte, error) {
	c, err := s.GetFor(ctx, who, orgs.Operate, id)
	if err != nil {
		return c, nil, err
	}
	if c.Status != StatusReady || c.Endpoint == "" {
		return c, nil, ErrNotReady
	}
	raw, err := s.readKubeconfigSecret(ctx, c)
	if err != nil {
		return c, nil, err
	}
	cfg, err := clientcmd.Load(raw)
	if err != nil {
		return c, nil, fmt.Errorf("%w: parse the kubeconfig of cluster %d: %v", ErrKubeconfigMissing, c.ID, err)
	}
	if len(cfg.Clusters) == 0 {
		return c, nil, fmt.Errorf("%w: the kubeconfig of cluster %d names no cluster", ErrKubeconfigMissing, c.ID)
	}
	for _, entry := range cfg.Clusters {
		entry.Server = "https://" + c.Endpoint
	}
	out, err := clientcmd.Write(*cfg)
	if err != nil {
		return c, nil, fmt.Errorf("write the kubeconfig of cluster %d: %w", c.ID, err)
	}
	// A single insert: it needs no transaction of its own.
	if err := audit.Record(ctx, queries.New(s.Pool), actor, audit.Event{
		Action: "cluster.kubeconfig_download", TargetType: "cluster", TargetID: fmt.Sprint(c.ID),
		Details: map[string]any{"name": c.Name},
	}); err != nil {
		return c, nil, err
	}
	return c, out, nil
}

// readKubeconfigSecret reads the admin kubeconfig the backend wrote to
// the host.
func (s *Service) readKubeconfigSecret(ctx context.Context, c queries.Cluster) ([]byte, error) {
	rt, err := s.Runtime(ctx)
	if err != nil {
		return nil, err
	}
	rc, err := rt.HostConfig(s.KubeconfigPath)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrNoHostCluster, err)
	}
	rc.Timeout = hostTimeout
	client, err := kubernetes.NewForConfig(rc)
	if err != nil {
		return nil, fmt.Errorf("host cluster client: %w", err)
	}
	return ReadAdminKubeconfig(ctx, client, c)
}

// ReadAdminKubeconfig reads the admin kubeconfig the cluster's backend
// wrote to the host (vcluster's vc-<release>, Kamaji's
// <name>-admin-kubeconfig), whatever the cluster's status.
func ReadAdminKubeconfig(ctx context.Context, client kubernetes.Interface, c queries.Cluster) ([]byte, error) {
	name, key := AdminKubeconfigSecret(c)
	ns := Namespace(c)
	secret, err := client.CoreV1().Secrets(ns).Get(ctx, name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil, fmt.Errorf("%w: secret %s/%s not found", ErrKubeconfigMissing, ns, name)
	}
	if err != nil {
		return nil, fmt.Errorf("read secret %s/%s: %w", ns, name, err)
	}
	raw := secret.Data[key]
	if len(raw) == 0 {
		return nil, fmt.Errorf("%w: secret %s/%s has no %q", ErrKubeconfigMissing, ns, name, key)
	}
	if !settings.SelfContained(raw) {
		// The backends write certificates and keys inline; anything else
		// did not come from them, and the platform must not run or read it.
		return nil, fmt.Errorf("%w: secret %s/%s names a program or a file", ErrKubeconfigMissing, ns, name)
	}
	return raw, nil
}

// VirtualConfig is the platform's own client configuration for a ready
// cluster's virtual control plane: vcluster's kubeconfig as written, whose
// server is the cluster's exported address (exportKubeConfig.server).
func (s *Service) VirtualConfig(ctx context.Context, c queries.Cluster) (*rest.Config, error) {
	if c.Status != StatusReady {
		return nil, ErrNotReady
	}
	raw, err := s.readKubeconfigSecret(ctx, c)
	if err != nil {
		return nil, err
	}
	cfg, err := clientcmd.RESTConfigFromKubeConfig(raw)
	if err != nil {
		return nil, fmt.Errorf("%w: parse the kubeconfig of cluster %d: %v", ErrKubeconfigMissing, c.ID, err)
	}
	cfg.Timeout = hostTimeout
	return cfg, nil
}
