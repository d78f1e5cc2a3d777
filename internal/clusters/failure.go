package clusters

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/jackc/pgx/v5"
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
// now); ok is false when
// none does, and the failure stays until someone retries. The caller has
// read the cluster for the acting user: only its id reaches the query.
func (s *Service) PendingRetry(ctx context.Context, id int64) (r Retry, ok bool, err error) {
	var state string
	// River's own table (no sqlc schema for it, as in adminjobs).
	err = s.Pool.QueryRow(ctx, `SELECT state::text, attempt, max_attempts FROM river_job
WHERE kind = $1 AND (args->>'cluster_id')::bigint = $2
  AND state IN ('available', 'scheduled', 'retryable', 'running') AND attempt < max_attempts
  AND coalesce(array_length(errors, 1), 0) > 0
ORDER BY id DESC LIMIT 1`, ReconcileArgs{}.Kind(), id).Scan(&state, &r.Attempt, &r.MaxAttempts)
	if errors.Is(err, pgx.ErrNoRows) {
		return Retry{}, false, nil
	}
	if err != nil {
		return Retry{}, false, fmt.Errorf("find the retry of cluster %d: %w", id, err)
	}
	if state != "running" {
		// attempt counts the attempts made; the next is the one to come.
		r.Attempt++
	}
	return r, true, nil
}
