package clusters

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/jackc/pgx/v5"

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
// now), when the cluster is the acting organization's; ok is false when
// none does, and the failure stays until someone retries.
func (s *Service) PendingRetry(ctx context.Context, who orgs.Acting, id int64) (r Retry, ok bool, err error) {
	var state string
	// River's own table (no sqlc schema for it, as in adminjobs).
	err = s.Pool.QueryRow(ctx, `SELECT j.state::text, j.attempt, j.max_attempts FROM river_job j
JOIN clusters c ON c.id = $2 AND c.org_id = $3 AND org_member_in($3, $4, $5::text[])
WHERE j.kind = $1 AND (j.args->>'cluster_id')::bigint = c.id
  AND j.state IN ('available', 'scheduled', 'retryable', 'running') AND j.attempt < j.max_attempts
  AND coalesce(array_length(j.errors, 1), 0) > 0
ORDER BY j.id DESC LIMIT 1`, ReconcileArgs{}.Kind(), id, who.OrgID, who.UserID, who.Roles(orgs.Read)).Scan(&state, &r.Attempt, &r.MaxAttempts)
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
