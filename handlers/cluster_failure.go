package handlers

import (
	"context"
	"slices"

	"github.com/kubebyon/kubebyon/internal/clusters"
	"github.com/kubebyon/kubebyon/internal/orgs"
	"github.com/kubebyon/kubebyon/queries"
	"github.com/kubebyon/kubebyon/views"
)

// showRetry marks v, the view of cl, as retrying when cl failed and River
// still has attempts left for its reconcile job: the page then says
// "Retrying (attempt 3 of 25)" and keeps watching, and "Failed" only once
// no retry remains. It reports whether it did.
func (h *Handlers) showRetry(ctx context.Context, who orgs.Acting, v *views.Cluster, cl queries.Cluster) (bool, error) {
	if cl.Status != clusters.StatusFailed {
		return false, nil
	}
	r, ok, err := h.Clusters.PendingRetry(ctx, who, cl.ID)
	if err != nil || !ok {
		return false, err
	}
	v.Status, v.RetryAttempt, v.RetryMax = views.ClusterStatusRetrying, r.Attempt, r.MaxAttempts
	return true, nil
}

// showRetries marks, as showRetry does, the failed clusters of a list
// that River still retries, with one query for all of them, and none when
// the list shows no failed cluster.
func (h *Handlers) showRetries(ctx context.Context, who orgs.Acting, list []views.Cluster) error {
	if !slices.ContainsFunc(list, func(v views.Cluster) bool { return v.Status == clusters.StatusFailed }) {
		return nil
	}
	retries, err := h.Clusters.PendingRetries(ctx, who)
	if err != nil {
		return err
	}
	for i := range list {
		if r, ok := retries[list[i].ID]; ok {
			list[i].Status, list[i].RetryAttempt, list[i].RetryMax = views.ClusterStatusRetrying, r.Attempt, r.MaxAttempts
		}
	}
	return nil
}
