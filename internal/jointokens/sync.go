package jointokens

import (
	"context"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	certificatesv1client "k8s.io/client-go/kubernetes/typed/certificates/v1"
	corev1client "k8s.io/client-go/kubernetes/typed/core/v1"
	"k8s.io/client-go/rest"
	bootstrapapi "k8s.io/cluster-bootstrap/token/api"

	"github.com/kubebyon/kubebyon/internal/checks"
	"github.com/kubebyon/kubebyon/internal/clusters"
	"github.com/kubebyon/kubebyon/queries"
)

// nodeUserPrefix is how a kubelet's client certificate names its node.
const nodeUserPrefix = "system:node:"

// Sync learns from a ready cluster's CertificateSigningRequests and Nodes
// which nodes joined with which of its tokens: kubelet TLS bootstrap files
// each CSR as system:bootstrap:<token id>, for CN system:node:<name>. It
// records each node once, notes when each recorded node registered its
// Node object (a node that filed its CSR but never registered is stuck),
// then counts the token's uses and deletes the bootstrap Secret of a token
// that reached its use limit. A use is a node that registered: while a
// kubelet's CSR is pending, it may reconnect with the token and must
// still be able to finish. Running it twice changes nothing.
//
// more reports whether the cluster still has something to sync (a token in
// use, a node not registered yet): its check stays due, else it goes idle.
// An error reaching the control plane is a checks.UnreachableError.
func (s *Service) Sync(ctx context.Context, clusterID int64) (more bool, err error) {
	q := queries.New(s.Pool)
	c, err := q.ClusterGetByID(ctx, clusterID)
	if errors.Is(err, pgx.ErrNoRows) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("load cluster %d: %w", clusterID, err)
	}
	if c.Status != clusters.StatusReady {
		return false, nil
	}
	tokens, err := q.JoinTokenListToSync(ctx, c.ID)
	if err != nil {
		return false, fmt.Errorf("list join tokens of cluster %d: %w", c.ID, err)
	}
	awaiting, err := q.JoinTokenNodeCountAwaiting(ctx, c.ID)
	if err != nil {
		return false, fmt.Errorf("count nodes awaiting registration in cluster %d: %w", c.ID, err)
	}
	if len(tokens) == 0 && awaiting == 0 {
		return false, nil
	}
	client, err := s.syncClient(ctx, c)
	if err != nil {
		return true, checks.Unreachable(err)
	}
	if len(tokens) > 0 {
		if err := s.syncCSRs(ctx, q, client, c, tokens); err != nil {
			return true, err
		}
	}
	if err := s.syncRegistered(ctx, q, client, c); err != nil {
		return true, err
	}
	if err := s.countUses(ctx, q, client, tokens); err != nil {
		return true, err
	}
	// What this sync changed decides: a token used up or a node
	// registered may leave nothing more to do.
	tokens, err = q.JoinTokenListToSync(ctx, c.ID)
	if err != nil {
		return true, fmt.Errorf("list join tokens of cluster %d: %w", c.ID, err)
	}
	awaiting, err = q.JoinTokenNodeCountAwaiting(ctx, c.ID)
	if err != nil {
		return true, fmt.Errorf("count nodes awaiting registration in cluster %d: %w", c.ID, err)
	}
	return len(tokens) > 0 || awaiting > 0, nil
}

// syncCSRs records the nodes of the tokens' CSRs.
func (s *Service) syncCSRs(ctx context.Context, q *queries.Queries, client syncClient, c queries.Cluster, tokens []queries.JoinToken) error {
	csrs, err := client.certs.CertificateSigningRequests().List(ctx, metav1.ListOptions{})
	if err != nil {
		return checks.Unreachable(fmt.Errorf("list CSRs of cluster %d: %w", c.ID, err))
	}
	byTokenID := make(map[string]queries.JoinToken, len(tokens))
	for _, t := range tokens {
		byTokenID[t.TokenID] = t
	}
	for _, csr := range csrs.Items {
		id, ok := strings.CutPrefix(csr.Spec.Username, bootstrapapi.BootstrapUserPrefix)
		if !ok {
			continue
		}
		t, ok := byTokenID[id]
		if !ok {
			continue
		}
		node, ok := nodeName(csr.Spec.Request)
		if !ok {
			continue
		}
		if _, err := q.JoinTokenNodeRecord(ctx, queries.JoinTokenNodeRecordParams{TokenID: t.ID, NodeName: node, CsrName: csr.Name}); err != nil {
			return fmt.Errorf("record node %s of join token %d: %w", node, t.ID, err)
		}
	}
	return nil
}

// countUses counts the tokens' uses, the nodes that joined with each and
// registered, and retires a token that reached its limit: its Secret
// deleted (the bootstrap token stops authenticating), marked used up.
func (s *Service) countUses(ctx context.Context, q *queries.Queries, client syncClient, tokens []queries.JoinToken) error {
	for _, t := range tokens {
		t, err := q.JoinTokenCountUses(ctx, t.ID)
		if err != nil {
			return fmt.Errorf("count uses of join token %d: %w", t.ID, err)
		}
		if !t.MaxUses.Valid || t.Uses < t.MaxUses.Int32 {
			continue
		}
		if err := deleteSecret(ctx, client.core, t.TokenID); err != nil {
			return checks.Unreachable(err)
		}
		if err := q.JoinTokenMarkUsedUp(ctx, t.ID); err != nil {
			return fmt.Errorf("mark join token %d used up: %w", t.ID, err)
		}
	}
	return nil
}

// syncRegistered notes which recorded nodes now have a Node object.
func (s *Service) syncRegistered(ctx context.Context, q *queries.Queries, client syncClient, c queries.Cluster) error {
	list, err := client.core.Nodes().List(ctx, metav1.ListOptions{})
	if err != nil {
		return checks.Unreachable(fmt.Errorf("list nodes of cluster %d: %w", c.ID, err))
	}
	names := make([]string, len(list.Items))
	for i, n := range list.Items {
		names[i] = n.Name
	}
	n, err := q.JoinTokenNodeMarkRegistered(ctx, queries.JoinTokenNodeMarkRegisteredParams{ClusterID: c.ID, NodeNames: names})
	if err != nil {
		return fmt.Errorf("mark registered nodes of cluster %d: %w", c.ID, err)
	}
	if n > 0 {
		// A node just joined: the nodes page lists it from the health
		// check's snapshot, which is taken now rather than in a minute.
		return checks.Schedule(ctx, q, c.ID, checks.NodeHealth, time.Now())
	}
	return nil
}

// nodeName is the node a kubelet CSR asks a certificate for: its subject's
// CN is system:node:<name>.
func nodeName(request []byte) (string, bool) {
	block, _ := pem.Decode(request)
	if block == nil || block.Type != "CERTIFICATE REQUEST" {
		return "", false
	}
	req, err := x509.ParseCertificateRequest(block.Bytes)
	if err != nil {
		return "", false
	}
	name, ok := strings.CutPrefix(req.Subject.CommonName, nodeUserPrefix)
	return name, ok && name != ""
}

// syncClient is what a sync calls: only the two API groups it reads, as a
// sync of every cluster with tokens runs every 30 seconds and a full
// clientset builds a client for each of some fifty groups.
type syncClient struct {
	core  corev1client.CoreV1Interface
	certs certificatesv1client.CertificatesV1Interface
}

func (s *Service) syncClient(ctx context.Context, c queries.Cluster) (syncClient, error) {
	cfg, err := s.Virtual(ctx, c)
	if err != nil {
		return syncClient{}, fmt.Errorf("virtual cluster %d: %w", c.ID, err)
	}
	cfg = checks.Bounded(cfg)
	httpClient, err := rest.HTTPClientFor(cfg)
	if err != nil {
		return syncClient{}, fmt.Errorf("virtual cluster %d client: %w", c.ID, err)
	}
	core, err := corev1client.NewForConfigAndClient(cfg, httpClient)
	if err != nil {
		return syncClient{}, fmt.Errorf("virtual cluster %d client: %w", c.ID, err)
	}
	certs, err := certificatesv1client.NewForConfigAndClient(cfg, httpClient)
	if err != nil {
		return syncClient{}, fmt.Errorf("virtual cluster %d client: %w", c.ID, err)
	}
	return syncClient{core: core, certs: certs}, nil
}
