package clusters

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/jackc/pgx/v5"

	"github.com/kubebyon/kubebyon/internal/orgs"
	"github.com/kubebyon/kubebyon/queries"
)

// Cluster statuses.
const (
	StatusPending      = "pending"
	StatusProvisioning = "provisioning"
	StatusReady        = "ready"
	StatusUpdating     = "updating"
	StatusFailed       = "failed"
	StatusDeleting     = "deleting"
	StatusDeleted      = "deleted"
	// StatusSuspended: an admin suspended the ready cluster; its control
	// plane is scaled to 0 (suspend.go).
	StatusSuspended = "suspended"
	// StatusResuming: an admin resumed it; it is ready again once its
	// control plane answers.
	StatusResuming = "resuming"
)

// TimelineLength is how many of the newest events the detail page shows,
// and how many a live update brings at most.
const TimelineLength = 100

// Event appends an event to the cluster's timeline, or, when the newest
// one says the same, counts it there (with when it was last seen), so that
// snoozes and retries do not repeat themselves in the timeline.
func Event(ctx context.Context, q *queries.Queries, clusterID int64, level, reason, message string) error {
	last, err := q.ClusterEventLatest(ctx, clusterID)
	if err == nil && last.Reason == reason && last.Message == message {
		if err := q.ClusterEventRepeat(ctx, last.ID); err != nil {
			return fmt.Errorf("cluster event: %w", err)
		}
		return nil
	}
	if err != nil && !errors.Is(err, pgx.ErrNoRows) {
		return fmt.Errorf("latest cluster event: %w", err)
	}
	if _, err := q.ClusterEventCreate(ctx, queries.ClusterEventCreateParams{ClusterID: clusterID, Level: level, Reason: reason, Message: message}); err != nil {
		return fmt.Errorf("cluster event: %w", err)
	}
	return nil
}

// Settled reports whether nothing is happening to a cluster until someone
// acts: it is ready, failed, suspended or gone. Pages stop watching it
// then.
func Settled(c queries.Cluster) bool {
	switch c.Status {
	case StatusReady, StatusFailed, StatusSuspended, StatusDeleted:
		return true
	}
	return false
}

// Find returns an organization's cluster like Get, deleted ones included: a page
// watching a cluster go away must still find it to show the end.
func (s *Service) Find(ctx context.Context, who orgs.Acting, id int64) (queries.Cluster, error) {
	c, err := queries.New(s.Pool).ClusterGetForMemberWithDeleted(ctx, queries.ClusterGetForMemberWithDeletedParams{ID: id, OrgID: who.OrgID, UserID: who.UserID, Roles: who.Roles(orgs.Read)})
	if errors.Is(err, pgx.ErrNoRows) {
		return c, ErrNotFound
	}
	if err != nil {
		return c, fmt.Errorf("load cluster: %w", err)
	}
	return c, nil
}

// Timeline returns an organization's cluster with its newest events, oldest first.
func (s *Service) Timeline(ctx context.Context, who orgs.Acting, id int64) (queries.Cluster, []queries.ClusterEvent, error) {
	c, err := s.Find(ctx, who, id)
	if err != nil {
		return c, nil, err
	}
	events, err := s.LatestEvents(ctx, who, id)
	return c, events, err
}

// LatestEvents is the newest TimelineLength events of the organization's
// cluster id, oldest first: none for another's.
func (s *Service) LatestEvents(ctx context.Context, who orgs.Acting, id int64) ([]queries.ClusterEvent, error) {
	events, err := queries.New(s.Pool).ClusterEventListLatest(ctx, queries.ClusterEventListLatestParams{ClusterID: id, OrgID: who.OrgID, UserID: who.UserID, Roles: who.Roles(orgs.Read), RowLimit: TimelineLength})
	if err != nil {
		return nil, fmt.Errorf("list cluster events: %w", err)
	}
	slices.Reverse(events)
	return events, nil
}

// AdminLatestEvents is the newest TimelineLength events of any cluster,
// oldest first, for the admin's cluster page.
func (s *Service) AdminLatestEvents(ctx context.Context, id int64) ([]queries.ClusterEvent, error) {
	events, err := queries.New(s.Pool).AdminClusterEventListLatest(ctx, queries.AdminClusterEventListLatestParams{ClusterID: id, RowLimit: TimelineLength})
	if err != nil {
		return nil, fmt.Errorf("list cluster events: %w", err)
	}
	slices.Reverse(events)
	return events, nil
}

// Updates is what happened to a cluster since the event a page saw last.
type Updates struct {
	Cluster queries.Cluster
	// Events are the newer events, oldest first.
	Events []queries.ClusterEvent
	// Done says the page can stop asking: the cluster is settled and
	// every event up to now was returned.
	Done bool
}

// UpdatesAfter returns an organization's cluster and its events after the event
// with id after. The cluster is read first: the events that led to a
// settled status committed before it, so the last answer has them all.
func (s *Service) UpdatesAfter(ctx context.Context, who orgs.Acting, id, after int64) (Updates, error) {
	c, err := s.Find(ctx, who, id)
	if err != nil {
		return Updates{}, err
	}
	events, err := queries.New(s.Pool).ClusterEventListAfterForMember(ctx, queries.ClusterEventListAfterForMemberParams{
		ClusterID: id, OrgID: who.OrgID, UserID: who.UserID, Roles: who.Roles(orgs.Read), AfterID: after, RowLimit: TimelineLength,
	})
	if err != nil {
		return Updates{}, fmt.Errorf("list cluster events: %w", err)
	}
	return Updates{Cluster: c, Events: events, Done: Settled(c) && len(events) < TimelineLength}, nil
}

// EventPage is up to n of the events of the organization's cluster id (as Get:
// none of another's, nor of a deleted one), newest first, below the
// event before (0: from the newest).
func (s *Service) EventPage(ctx context.Context, who orgs.Acting, id, before int64, n int32) ([]queries.ClusterEvent, error) {
	events, err := queries.New(s.Pool).ClusterEventPageForMember(ctx, queries.ClusterEventPageForMemberParams{
		ClusterID: id, OrgID: who.OrgID, UserID: who.UserID, Roles: who.Roles(orgs.Read), BeforeID: before, RowLimit: n,
	})
	if err != nil {
		return nil, fmt.Errorf("list cluster events: %w", err)
	}
	return events, nil
}

// EventReasons are the reasons the events of the organization's cluster id
// have given, once each (as Get: none of another's), for its provisioning
// steps.
func (s *Service) EventReasons(ctx context.Context, who orgs.Acting, id int64) ([]string, error) {
	reasons, err := queries.New(s.Pool).ClusterEventReasonsForMember(ctx, queries.ClusterEventReasonsForMemberParams{
		ClusterID: id, OrgID: who.OrgID, UserID: who.UserID, Roles: who.Roles(orgs.Read),
	})
	if err != nil {
		return nil, fmt.Errorf("list cluster event reasons: %w", err)
	}
	return reasons, nil
}
