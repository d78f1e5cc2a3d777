package clusters

import (
	"context"
	"fmt"
	"strings"

	"github.com/kubebyon/kubebyon/internal/orgs"
)

// Catalog messages that say, in words an owner can act on, why a cluster
// failed. The worker records the Go error itself as the status message:
// it names the host's internal addresses, so pages and notices show one of
// these and fold the error away.
const (
	FailureNoHost          = "ClusterFailureNoHost"
	FailureNotReadyInTime  = "ClusterFailureNotReadyInTime"
	FailureHostUnreachable = "ClusterFailureHostUnreachable"
	FailureInstall         = "ClusterFailureInstall"
	FailureQuota           = "ClusterFailureQuota"
	FailureGeneric         = "ClusterFailureGeneric"
)

// failureSigns are, in order, the words of a recorded error that tell its
// kind; the first match wins. The timeout's message comes first: it quotes
// what the cluster was waiting for, which may be a connection error.
var failureSigns = []struct {
	id    string
	signs []string
}{
	{FailureNoHost, []string{"no host cluster is configured"}},
	{FailureNotReadyInTime, []string{"did not become ready within"}},
	{FailureQuota, []string{"exceeded quota", "insufficient cpu", "insufficient memory", "quota"}},
	{FailureInstall, []string{"imagepull", "errimagepull", "pull image", "pulling image", "manifest unknown", "chart", "helm"}},
	{FailureHostUnreachable, []string{
		"connection refused", "no such host", "i/o timeout", "dial tcp", "deadline exceeded",
		"tls handshake", "connection reset", "no route to host", "server is currently unable", "unexpected eof",
	}},
}

// FailureMessage names the catalog message that explains statusMessage, a
// failed cluster's recorded error: FailureGeneric when the error says
// nothing known, "" for no error.
func FailureMessage(statusMessage string) string {
	if statusMessage == "" {
		return ""
	}
	lower := strings.ToLower(statusMessage)
	for _, f := range failureSigns {
		for _, s := range f.signs {
			if strings.Contains(lower, s) {
				return f.id
			}
		}
	}
	return FailureGeneric
}

// Retry is the reconcile job that River will run again for a failed
// cluster: Attempt is the attempt to come, of MaxAttempts.
type Retry struct {
	Attempt, MaxAttempts int
}

// PendingRetry finds the reconcile job of cluster id that River still
// retries (it failed at least once and has attempts left, or runs again
// now), when the cluster is the acting organization's and failed; ok is
// false when none does, and the failure stays until someone retries.
func (s *Service) PendingRetry(ctx context.Context, who orgs.Acting, id int64) (r Retry, ok bool, err error) {
	retries, err := s.pendingRetries(ctx, who, id)
	r, ok = retries[id]
	return r, ok, err
}

// PendingRetries is PendingRetry for every failed cluster of the acting
// organization, in one query: those River still retries, by id.
func (s *Service) PendingRetries(ctx context.Context, who orgs.Acting) (map[int64]Retry, error) {
	return s.pendingRetries(ctx, who, 0)
}

// pendingRetries reads the retries of the organization's failed cluster
// id, or of all of them (id 0). A failed cluster is rare: the query starts
// from them and finds each one's job by River's index of its arguments.
func (s *Service) pendingRetries(ctx context.Context, who orgs.Acting, id int64) (map[int64]Retry, error) {
	// River's own table (no sqlc schema for it, as in adminjobs).
	rows, err := s.Pool.Query(ctx, `SELECT DISTINCT ON (c.id) c.id, j.state::text, j.attempt, j.max_attempts
FROM clusters c JOIN river_job j ON j.kind = $1 AND j.args @> jsonb_build_object('cluster_id', c.id)
WHERE ($2::bigint = 0 OR c.id = $2) AND c.status = 'failed' AND c.org_id = $3 AND EXISTS (SELECT 1 FROM organization_members om WHERE om.org_id = $3 AND om.user_id = $4 AND om.role = ANY ($5::text[]))
  AND j.state IN ('available', 'scheduled', 'retryable', 'running') AND j.attempt < j.max_attempts
  AND coalesce(array_length(j.errors, 1), 0) > 0
ORDER BY c.id, j.id DESC`, ReconcileArgs{}.Kind(), id, who.OrgID, who.UserID, who.Roles(orgs.Read))
	if err != nil {
		return nil, fmt.Errorf("find the retries of failed clusters: %w", err)
	}
	defer rows.Close()
	retries := map[int64]Retry{}
	for rows.Next() {
		var id int64
		var state string
		var r Retry
		if err := rows.Scan(&id, &state, &r.Attempt, &r.MaxAttempts); err != nil {
			return nil, fmt.Errorf("read the retries of failed clusters: %w", err)
		}
		if state != "running" {
			// attempt counts the attempts made; the next is the one to come.
			r.Attempt++
		}
		retries[id] = r
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("read the retries of failed clusters: %w", err)
	}
	return retries, nil
}
