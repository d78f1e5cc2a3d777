package clusters

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/kubebyon/kubebyon/internal/audit"
	"github.com/kubebyon/kubebyon/internal/clusteraccess"
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

// MemberKubeconfigTTL is how long the token of a member's own kubeconfig
// is valid. Removing the member, or changing their role, ends it sooner
// (RevokeArgs); a member who needs longer downloads it again.
const MemberKubeconfigTTL = 24 * time.Hour

// Kubeconfig returns the kubeconfig of an organization's ready cluster
// for the member who acts, and records who downloaded which. The owner of
// a personal organization, who cannot be removed from it, gets the admin
// kubeconfig the backend wrote. Everyone else gets their own: a token of
// a ServiceAccount of theirs in the virtual cluster, bound to the
// ClusterRole of their role (orgs.KubernetesAccess: cluster-admin for
// owners, admins and members; view for viewers where the organization
// allows it, else orgs.ErrForbidden), which removal from the organization
// revokes in the cluster itself. A read key acts as a viewer.
func (s *Service) Kubeconfig(ctx context.Context, who orgs.Acting, id int64, actor audit.Actor) (queries.Cluster, []byte, error) {
	r, err := queries.New(s.Pool).ClusterForKubeconfig(ctx, queries.ClusterForKubeconfigParams{ID: id, OrgID: who.OrgID, UserID: who.UserID})
	if errors.Is(err, pgx.ErrNoRows) {
		return queries.Cluster{}, nil, ErrNotFound
	}
	if err != nil {
		return queries.Cluster{}, nil, fmt.Errorf("load cluster %d: %w", id, err)
	}
	c, role := r.Cluster, orgs.Role(r.MemberRole)
	if !who.May(orgs.Operate) && orgs.Allows(role, orgs.Operate) {
		role = orgs.Viewer
	}
	level := orgs.KubernetesAccess(role, r.ViewerKubeconfig)
	if level == "" {
		return c, nil, orgs.ErrForbidden
	}
	if c.Status != StatusReady || c.Endpoint == "" {
		return c, nil, ErrNotReady
	}
	raw, err := s.readKubeconfigSecret(ctx, c)
	if err != nil {
		return c, nil, err
	}
	details := map[string]any{"name": c.Name, "level": level}
	var out []byte
	if r.PersonalOwner && orgs.Allows(role, orgs.Operate) {
		out, err = publicKubeconfig(c, raw)
		details["credential"] = "admin"
	} else {
		var expires time.Time
		out, expires, err = s.memberKubeconfig(ctx, c, raw, clusteraccess.Member{UserID: who.UserID, Email: r.MemberEmail}, clusteraccess.Level(level))
		details["credential"] = "member_token"
		details["expires_at"] = expires.UTC().Format(time.RFC3339)
	}
	if err != nil {
		return c, nil, err
	}
	// A single insert: it needs no transaction of its own.
	if err := audit.Record(ctx, queries.New(s.Pool), actor, audit.Event{
		Action: "cluster.kubeconfig_download", TargetType: "cluster", TargetID: fmt.Sprint(c.ID), Details: details,
	}); err != nil {
		return c, nil, err
	}
	return c, out, nil
}

// publicKubeconfig is the admin kubeconfig raw the backend wrote for use
// inside the host cluster, with every server replaced by the cluster's
// public endpoint, which is what users reach.
func publicKubeconfig(c queries.Cluster, raw []byte) ([]byte, error) {
	cfg, err := clientcmd.Load(raw)
	if err != nil {
		return nil, fmt.Errorf("%w: parse the kubeconfig of cluster %d: %v", ErrKubeconfigMissing, c.ID, err)
	}
	if len(cfg.Clusters) == 0 {
		return nil, fmt.Errorf("%w: the kubeconfig of cluster %d names no cluster", ErrKubeconfigMissing, c.ID)
	}
	for _, entry := range cfg.Clusters {
		entry.Server = "https://" + c.Endpoint
	}
	out, err := clientcmd.Write(*cfg)
	if err != nil {
		return nil, fmt.Errorf("write the kubeconfig of cluster %d: %w", c.ID, err)
	}
	return out, nil
}

// memberKubeconfig grants member level in cluster c (through its admin
// kubeconfig raw, as the platform reaches the cluster) and returns their
// own kubeconfig for the public endpoint, with the token's expiry.
func (s *Service) memberKubeconfig(ctx context.Context, c queries.Cluster, raw []byte, member clusteraccess.Member, level clusteraccess.Level) ([]byte, time.Time, error) {
	rc, err := clientcmd.RESTConfigFromKubeConfig(raw)
	if err != nil {
		return nil, time.Time{}, fmt.Errorf("%w: parse the kubeconfig of cluster %d: %v", ErrKubeconfigMissing, c.ID, err)
	}
	rc.Timeout = hostTimeout
	client, err := kubernetes.NewForConfig(rc)
	if err != nil {
		return nil, time.Time{}, fmt.Errorf("client of cluster %d: %w", c.ID, err)
	}
	token, expires, err := clusteraccess.Grant(ctx, client, member, level, MemberKubeconfigTTL)
	if err != nil {
		return nil, time.Time{}, fmt.Errorf("grant %s access to cluster %d: %w", level, c.ID, err)
	}
	name := fmt.Sprintf("%s-%s", c.Name, clusteraccess.ServiceAccountName(member.UserID))
	out, err := clusteraccess.Kubeconfig(raw, "https://"+c.Endpoint, c.Name, name, token)
	if err != nil {
		return nil, time.Time{}, fmt.Errorf("kubeconfig of cluster %d: %w", c.ID, err)
	}
	return out, expires, nil
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
