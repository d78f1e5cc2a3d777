package jointokens

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/jackc/pgx/v5"
	bootstraputil "k8s.io/cluster-bootstrap/token/util"

	"github.com/kubebyon/kubebyon/internal/clusters"
	"github.com/kubebyon/kubebyon/internal/entitlements"
	"github.com/kubebyon/kubebyon/queries"
)

// Why a join is refused. Each is a catalog message ID the join script
// prints.
var (
	ErrJoinUnknown  = errors.New("JoinRefusedUnknown")
	ErrJoinRevoked  = errors.New("JoinRefusedRevoked")
	ErrJoinExpired  = errors.New("JoinRefusedExpired")
	ErrJoinUsedUp   = errors.New("JoinRefusedUsedUp")
	ErrJoinNotReady = errors.New("JoinRefusedClusterNotReady")
	// ErrJoinSuspended refuses a join to a cluster an admin suspended.
	ErrJoinSuspended = errors.New("JoinRefusedClusterSuspended")
	// ErrJoinNodeLimit refuses a join to a cluster that has as many nodes
	// as its owner's plan allows.
	ErrJoinNodeLimit = errors.New("JoinRefusedNodeLimit")
	// ErrJoinRateLimited refuses a client that asked too often.
	ErrJoinRateLimited = errors.New("JoinRefusedRateLimited")
	// ErrEventInvalid is a malformed report of the join script.
	ErrEventInvalid = errors.New("JoinEventInvalid")
)

// RefusalCode is the short, stable name of a refusal that tools read
// from the join endpoint's X-KubeBYON-Join-Refused header; ok is false
// for an error that is no refusal.
func RefusalCode(reason error) (code string, ok bool) {
	switch {
	case errors.Is(reason, ErrJoinUnknown):
		return "unknown", true
	case errors.Is(reason, ErrJoinRevoked):
		return "revoked", true
	case errors.Is(reason, ErrJoinExpired):
		return "expired", true
	case errors.Is(reason, ErrJoinUsedUp):
		return "used-up", true
	case errors.Is(reason, ErrJoinNotReady):
		return "cluster-not-ready", true
	case errors.Is(reason, ErrJoinSuspended):
		return "cluster-suspended", true
	case errors.Is(reason, ErrJoinNodeLimit):
		return "node-limit", true
	case errors.Is(reason, ErrJoinRateLimited):
		return "rate-limited", true
	case errors.Is(reason, ErrJoinUnavailable):
		return "unavailable", true
	}
	return "", false
}

// Bounds of a join event's step name, message and host, in characters.
const (
	maxEventStepChars    = 40
	MaxEventMessageChars = 1000
	maxEventHostChars    = 253
)

// Check finds the token the join script was asked for and tells whether
// it may join a node now.
func (s *Service) Check(ctx context.Context, value string) (queries.JoinTokenGetByHashRow, error) {
	if !bootstraputil.IsValidBootstrapToken(value) {
		return queries.JoinTokenGetByHashRow{}, ErrJoinUnknown
	}
	row, err := queries.New(s.Pool).JoinTokenGetByHash(ctx, s.hash(value))
	if errors.Is(err, pgx.ErrNoRows) {
		return row, ErrJoinUnknown
	}
	if err != nil {
		return row, fmt.Errorf("find join token: %w", err)
	}
	if row.ClusterStatus == clusters.StatusDeleted {
		return row, ErrJoinUnknown
	}
	switch Status(queries.JoinToken{
		ExpiresAt: row.ExpiresAt, MaxUses: row.MaxUses, Uses: row.Uses, RevokedAt: row.RevokedAt, UsedUpAt: row.UsedUpAt,
	}, s.now()) {
	case StatusRevoked:
		return row, ErrJoinRevoked
	case StatusExpired:
		return row, ErrJoinExpired
	case StatusUsedUp:
		return row, ErrJoinUsedUp
	}
	if row.ClusterStatus == clusters.StatusSuspended || row.ClusterStatus == clusters.StatusResuming {
		return row, ErrJoinSuspended
	}
	if row.ClusterStatus != clusters.StatusReady || row.ClusterEndpoint == "" {
		return row, ErrJoinNotReady
	}
	// The recorded nodes (kept by the health check) against the plan: a
	// machine joining at the limit would be refused by the node quota
	// webhook at best, and would run unpaid for at worst.
	if entitlements.NodeLimit(row.ClusterNodes, row.PlanMaxNodes) != nil {
		return row, ErrJoinNodeLimit
	}
	return row, nil
}

// ErrJoinUnavailable refuses a join while the platform cannot read the
// cluster's CA from its kubeconfig.
var ErrJoinUnavailable = errors.New("JoinRefusedUnavailable")

// CACert is the PEM of the CA that signs the cluster's control plane
// certificate, which the join script checks the endpoint against. It is
// read from the cluster's kubeconfig the first time and kept on the row.
func (s *Service) CACert(ctx context.Context, row queries.JoinTokenGetByHashRow) (string, error) {
	if row.ClusterCaCert != "" {
		return row.ClusterCaCert, nil
	}
	q := queries.New(s.Pool)
	c, err := q.ClusterGetByID(ctx, row.ClusterID)
	if err != nil {
		return "", fmt.Errorf("load cluster %d: %w", row.ClusterID, err)
	}
	cfg, err := s.Virtual(ctx, c)
	if err != nil {
		return "", fmt.Errorf("%w: kubeconfig of cluster %d: %w", ErrJoinUnavailable, c.ID, err)
	}
	ca := strings.TrimSpace(string(cfg.CAData))
	if ca == "" {
		return "", fmt.Errorf("%w: the kubeconfig of cluster %d names no CA", ErrJoinUnavailable, c.ID)
	}
	if err := q.ClusterSetCACert(ctx, queries.ClusterSetCACertParams{CaCert: ca, ID: c.ID, UpdatedAt: c.UpdatedAt}); err != nil {
		return "", fmt.Errorf("keep the CA of cluster %d: %w", c.ID, err)
	}
	return ca, nil
}

// StepJoin is the join script's last step: the control plane's join
// script ran, so the machine's kubelet has filed its CSR (or failed to).
const StepJoin = "join"

// Event is one step the join script reports, from the machine Host (its
// node name or host name, as the script knows it) at ClientIP.
type Event struct {
	Step, Status, Message, Host, ClientIP string
}

// The statuses of a join step the script reports.
const (
	EventOK     = "ok"
	EventFailed = "failed"
)

// RecordEvent stores a step the join script reported for a token that may
// still be used (a script started just before the token expired or was
// used up may report its end). It returns the token's cluster.
func (s *Service) RecordEvent(ctx context.Context, value string, e Event) (int64, error) {
	row, err := s.Check(ctx, value)
	if err != nil && !errors.Is(err, ErrJoinUsedUp) && !errors.Is(err, ErrJoinExpired) && !errors.Is(err, ErrJoinNotReady) && !errors.Is(err, ErrJoinSuspended) {
		return 0, err
	}
	e.Step, e.Message, e.Host = strings.TrimSpace(e.Step), strings.TrimSpace(e.Message), strings.TrimSpace(e.Host)
	if e.Step == "" || len(e.Step) > maxEventStepChars || strings.Trim(e.Step, "abcdefghijklmnopqrstuvwxyz_-0123456789") != "" ||
		(e.Status != EventOK && e.Status != EventFailed) || !printable(e.Message) || !printable(e.Host) {
		return 0, ErrEventInvalid
	}
	e.Message, e.Host = truncate(e.Message, MaxEventMessageChars), truncate(e.Host, maxEventHostChars)
	if _, err := queries.New(s.Pool).JoinEventCreate(ctx, queries.JoinEventCreateParams{
		TokenID: row.ID, Step: e.Step, Status: e.Status, Message: e.Message, ClientIp: e.ClientIP, Host: e.Host,
	}); err != nil {
		return 0, fmt.Errorf("record join event: %w", err)
	}
	return row.ClusterID, nil
}

// printable reports whether a reported text is valid UTF-8 without NUL.
func printable(s string) bool {
	return utf8.ValidString(s) && !strings.ContainsRune(s, 0)
}

// truncate cuts s to at most n characters.
func truncate(s string, n int) string {
	if utf8.RuneCountInString(s) > n {
		return string([]rune(s)[:n])
	}
	return s
}
