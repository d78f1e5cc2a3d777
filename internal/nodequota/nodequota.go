// Package nodequota is the per-cluster node quota: a validating admission
// webhook in the virtual cluster asks the platform before each Node is
// created, and the platform denies Nodes beyond the owner's plan limit of
// nodes per cluster. The platform switches it on in every cluster that
// becomes ready (EnableTx).
package nodequota

import (
	"context"
	"crypto/rand"
	"crypto/subtle"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/riverqueue/river"
	admissionv1 "k8s.io/api/admission/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubebyon/kubebyon/internal/audit"
	"github.com/kubebyon/kubebyon/internal/checks"
	"github.com/kubebyon/kubebyon/internal/entitlements"
	"github.com/kubebyon/kubebyon/internal/secrets"
	"github.com/kubebyon/kubebyon/queries"
)

// ErrForbidden is a webhook call for a cluster without the quota, or with
// the wrong key.
var ErrForbidden = errors.New("node quota webhook: unknown cluster or wrong key")

// Service answers the webhook.
type Service struct {
	Pool *pgxpool.Pool
	Box  *secrets.Box
	// Clients reach the virtual clusters to count their Nodes; share one
	// between calls.
	Clients *Clients
}

// System is who switches the quota on: the platform, for no user.
var System = audit.Actor{Email: "system"}

// EnableTx switches the quota of c on in the caller's transaction tx, as
// the platform does for every ready cluster (the plan in effect limits
// the nodes of every cluster, so the owner has no switch): a new key, so a
// URL seen before stops working, an audit event by System, a sync that
// writes the webhook configuration, and its periodic re-sync. c must have
// been read in tx with its row locked. A quota already on is left as it
// is, and so is a cluster being deleted; either way it reports false.
func EnableTx(ctx context.Context, tx pgx.Tx, rc *river.Client[pgx.Tx], box *secrets.Box, c queries.Cluster) (bool, error) {
	if c.NodeQuotaEnabled && c.NodeQuotaSecret != "" {
		return false, nil
	}
	q := queries.New(tx)
	_, err := q.ClusterSetNodeQuota(ctx, queries.ClusterSetNodeQuotaParams{ID: c.ID, Enabled: true, SealedSecret: box.Seal([]byte(rand.Text()))})
	if errors.Is(err, pgx.ErrNoRows) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("switch node quota of cluster %d on: %w", c.ID, err)
	}
	if err := audit.Record(ctx, q, System, audit.Event{
		Action: "cluster.node_quota", TargetType: "cluster", TargetID: fmt.Sprint(c.ID),
		Details: map[string]any{"cluster": c.Name, "enabled": true},
	}); err != nil {
		return false, err
	}
	if _, err := rc.InsertTx(ctx, tx, SyncArgs{ClusterID: c.ID}, nil); err != nil {
		return false, fmt.Errorf("queue node quota sync of cluster %d: %w", c.ID, err)
	}
	// Then written again every SyncInterval, in case it is changed.
	if err := checks.Schedule(ctx, q, c.ID, checks.NodeQuotaSync, time.Now().Add(SyncInterval)); err != nil {
		return false, err
	}
	return true, nil
}

// Decision is the answer to one admission review: Limit is the plan's
// nodes per cluster when the Node is denied.
type Decision struct {
	Allowed bool
	Limit   int32
}

// Review decides on an admission request that came with key for the
// cluster. Only Node creations are counted; anything else is allowed.
func (s *Service) Review(ctx context.Context, clusterID int64, key string, req *admissionv1.AdmissionRequest) (Decision, error) {
	c, err := queries.New(s.Pool).ClusterGetByID(ctx, clusterID)
	if errors.Is(err, pgx.ErrNoRows) {
		return Decision{}, ErrForbidden
	}
	if err != nil {
		return Decision{}, fmt.Errorf("load cluster %d: %w", clusterID, err)
	}
	if !c.NodeQuotaEnabled || c.NodeQuotaSecret == "" {
		return Decision{}, ErrForbidden
	}
	want, err := s.Box.Open(c.NodeQuotaSecret)
	if err != nil {
		return Decision{}, fmt.Errorf("open node quota key of cluster %d: %w", c.ID, err)
	}
	if subtle.ConstantTimeCompare(want, []byte(key)) != 1 {
		return Decision{}, ErrForbidden
	}
	if req.Operation != admissionv1.Create || req.Kind.Group != "" || req.Kind.Kind != "Node" {
		return Decision{Allowed: true}, nil
	}
	ent, err := entitlements.For(ctx, queries.New(s.Pool), c.OrgID)
	if err != nil {
		return Decision{}, err
	}
	n, err := s.countNodes(ctx, c)
	if err != nil {
		return Decision{}, err
	}
	if err := ent.Node(int64(n)); err != nil {
		return Decision{Limit: ent.Plan.MaxNodesPerCluster}, nil
	}
	return Decision{Allowed: true}, nil
}

// countNodes counts the Nodes that exist in the virtual cluster; the one
// under review is not among them yet. Any failed call drops the kept
// client: an auth or connection error is what a recreated control plane
// looks like, and a kept client that fails is tried once more afresh, so
// that a changed kubeconfig costs no review.
func (s *Service) countNodes(ctx context.Context, c queries.Cluster) (int, error) {
	n, kept, err := s.tryCountNodes(ctx, c)
	if err != nil && kept {
		n, _, err = s.tryCountNodes(ctx, c)
	}
	return n, err
}

// tryCountNodes counts with the kept or a new client, reporting which.
func (s *Service) tryCountNodes(ctx context.Context, c queries.Cluster) (int, bool, error) {
	kc, kept, err := s.Clients.get(ctx, c)
	if err != nil {
		return 0, false, err
	}
	list, err := kc.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
	if err != nil {
		s.Clients.forget(c.ID)
		return 0, kept, fmt.Errorf("list nodes of cluster %d: %w", c.ID, err)
	}
	return len(list.Items), kept, nil
}
