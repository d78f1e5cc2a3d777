package handlers

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/jackc/pgx/v5/pgtype"
	"github.com/labstack/echo/v4"

	"github.com/kubebyon/kubebyon/internal/adminauth"
	"github.com/kubebyon/kubebyon/internal/clusters"
)

// apiAdminClusterRow is a cluster as the admin API's list shows it: the
// columns of the back office's list.
type apiAdminClusterRow struct {
	ID                int64     `json:"id"`
	Name              string    `json:"name"`
	Slug              string    `json:"slug"`
	OwnerID           int64     `json:"owner_id"`
	OwnerEmail        string    `json:"owner_email"`
	Status            string    `json:"status"`
	KubernetesVersion string    `json:"kubernetes_version"`
	PublicAccessMode  string    `json:"public_access_mode"`
	Nodes             int64     `json:"nodes"`
	CreatedAt         time.Time `json:"created_at"`
}

// apiAdminClusterList is one page of every user's clusters, newest first.
type apiAdminClusterList struct {
	Clusters []apiAdminClusterRow `json:"clusters"`
	Next     string               `json:"next,omitempty"`
}

// apiAdminCluster is any user's cluster as the admin API shows one: the
// cluster as its owner's API shows it (without its managed ingress), and
// what the back office's cluster page shows beside it.
type apiAdminCluster struct {
	apiCluster
	OwnerID           int64      `json:"owner_id"`
	OwnerEmail        string     `json:"owner_email"`
	SuspendedAt       *time.Time `json:"suspended_at"`
	DeleteRequestedAt *time.Time `json:"delete_requested_at"`
	// Alerts are the names of its open metric alerts.
	Alerts     []string               `json:"alerts"`
	Nodes      []apiAdminClusterNode  `json:"nodes"`
	JoinTokens []apiAdminJoinToken    `json:"join_tokens"`
	Events     []apiAdminClusterEvent `json:"events"`
}

// apiAdminClusterNode is a node as the platform last recorded it.
type apiAdminClusterNode struct {
	Name           string     `json:"name"`
	Status         string     `json:"status"`
	KubeletVersion string     `json:"kubelet_version"`
	LastSeenAt     *time.Time `json:"last_seen_at"`
}

// apiAdminJoinToken is a join token as admins see it: never its secret.
type apiAdminJoinToken struct {
	ID          int64      `json:"id"`
	TokenID     string     `json:"token_id"`
	Description string     `json:"description"`
	Uses        int32      `json:"uses"`
	MaxUses     *int32     `json:"max_uses"`
	CreatedAt   time.Time  `json:"created_at"`
	ExpiresAt   *time.Time `json:"expires_at"`
	LastUsedAt  *time.Time `json:"last_used_at"`
	RevokedAt   *time.Time `json:"revoked_at"`
	UsedUpAt    *time.Time `json:"used_up_at"`
}

// apiAdminClusterEvent is an event of the cluster's timeline; Reason is
// its stable code, Count how often it happened in a row, until
// LastSeenAt.
type apiAdminClusterEvent struct {
	ID         int64      `json:"id"`
	Level      string     `json:"level"`
	Reason     string     `json:"reason"`
	Message    string     `json:"message"`
	Count      int32      `json:"count"`
	CreatedAt  time.Time  `json:"created_at"`
	LastSeenAt *time.Time `json:"last_seen_at"`
}

// apiTimeOf is a nullable time as the API shows it: in UTC, nil for NULL.
func apiTimeOf(t pgtype.Timestamptz) *time.Time {
	if !t.Valid {
		return nil
	}
	u := t.Time.UTC()
	return &u
}

// listAPIAdminClusters is GET /api/v1/admin/clusters: every user's
// clusters under the back office's filters, newest first, a page at a
// time; a status or access mode no cluster can have is 422.
func (h *Handlers) listAPIAdminClusters(c echo.Context) error {
	p, before, err := apiIDPageOf(c)
	if err != nil {
		return err
	}
	f := adminClusterFilter(c)
	if err := f.Validate(); err != nil {
		return err
	}
	page, err := h.Clusters.AdminListOlder(c.Request().Context(), f, before, p.Limit)
	if err != nil {
		return err
	}
	out := apiAdminClusterList{Clusters: make([]apiAdminClusterRow, len(page.Clusters)), Next: idCursor(page.Older)}
	for i, r := range page.Clusters {
		out.Clusters[i] = apiAdminClusterRow{
			ID: r.ID, Name: r.Name, Slug: r.Slug, OwnerID: r.OwnerID, OwnerEmail: r.OwnerEmail, Status: r.Status,
			KubernetesVersion: r.KubernetesVersion, PublicAccessMode: r.PublicAccessMode, Nodes: r.Nodes,
			CreatedAt: r.CreatedAt.Time.UTC(),
		}
	}
	return c.JSON(http.StatusOK, out)
}

// showAPIAdminCluster is GET /api/v1/admin/clusters/{id}: any user's
// cluster, deleted ones included.
func (h *Handlers) showAPIAdminCluster(c echo.Context) error {
	d, err := h.apiAdminClusterDetail(c)
	if err != nil {
		return err
	}
	out, err := h.apiAdminClusterOf(c.Request().Context(), d)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, out)
}

// changeAPIAdminCluster is POST /api/v1/admin/clusters/{id}/<a.path>: the
// back office's action a, the admin key standing in for the slug it asks
// to type. The platform then does the work (a reconcile): 202 with the
// cluster as it is now, to poll at its Location. A cluster a does not
// apply to in its state is 409.
func (h *Handlers) changeAPIAdminCluster(a adminClusterAction) echo.HandlerFunc {
	return func(c echo.Context) error {
		ctx := c.Request().Context()
		d, err := h.apiAdminClusterDetail(c)
		if err != nil {
			return err
		}
		d.Cluster, err = a.run(h.Clusters, ctx, d.Cluster.ID, d.Cluster.Slug, actor(c))
		switch {
		case errors.Is(err, clusters.ErrNotFound), errors.Is(err, adminauth.ErrNotAdmin):
			return errClusterNotFound
		case errors.Is(err, a.refused):
			return echo.NewHTTPError(http.StatusConflict, err.Error())
		case err != nil:
			return err
		}
		out, err := h.apiAdminClusterOf(ctx, d)
		if err != nil {
			return err
		}
		c.Response().Header().Set(echo.HeaderLocation, fmt.Sprintf("/api/v1/admin/clusters/%d", d.Cluster.ID))
		return c.JSON(http.StatusAccepted, out)
	}
}

// apiAdminClusterDetail is the cluster of the path with what its page
// shows beside it, for an admin; 404 for none.
func (h *Handlers) apiAdminClusterDetail(c echo.Context) (clusters.AdminDetail, error) {
	id, err := clusterIDParam(c)
	if err != nil {
		return clusters.AdminDetail{}, err
	}
	d, err := h.Clusters.AdminGet(c.Request().Context(), id)
	if errors.Is(err, clusters.ErrNotFound) {
		return d, errClusterNotFound
	}
	return d, err
}

// apiAdminClusterOf is d as the admin API shows it, with the cluster's
// latest events.
func (h *Handlers) apiAdminClusterOf(ctx context.Context, d clusters.AdminDetail) (apiAdminCluster, error) {
	cl := d.Cluster
	out := apiAdminCluster{
		apiCluster: apiClusterFrom(cl), OwnerID: cl.OwnerID, OwnerEmail: d.Owner.Email,
		SuspendedAt: apiTimeOf(cl.SuspendedAt), DeleteRequestedAt: apiTimeOf(cl.DeleteRequestedAt),
		Alerts: append([]string{}, d.Alerts...), Nodes: make([]apiAdminClusterNode, len(d.Nodes)),
		JoinTokens: make([]apiAdminJoinToken, len(d.Tokens)),
	}
	for i, n := range d.Nodes {
		out.Nodes[i] = apiAdminClusterNode{Name: n.Name, Status: n.Status, KubeletVersion: n.KubeletVersion, LastSeenAt: apiTimeOf(n.LastSeen)}
	}
	for i, t := range d.Tokens {
		out.JoinTokens[i] = apiAdminJoinToken{
			ID: t.ID, TokenID: t.TokenID, Description: t.Description, Uses: t.Uses, CreatedAt: t.CreatedAt.Time.UTC(),
			ExpiresAt: apiTimeOf(t.ExpiresAt), LastUsedAt: apiTimeOf(t.LastUsed), RevokedAt: apiTimeOf(t.RevokedAt), UsedUpAt: apiTimeOf(t.UsedUpAt),
		}
		if t.MaxUses.Valid {
			out.JoinTokens[i].MaxUses = &t.MaxUses.Int32
		}
	}
	events, err := h.Clusters.AdminLatestEvents(ctx, cl.ID)
	if err != nil {
		return out, err
	}
	out.Events = make([]apiAdminClusterEvent, len(events))
	for i, e := range events {
		out.Events[i] = apiAdminClusterEvent{
			ID: e.ID, Level: e.Level, Reason: e.Reason, Message: e.Message, Count: e.Count,
			CreatedAt: e.CreatedAt.Time.UTC(), LastSeenAt: apiTimeOf(e.LastSeenAt),
		}
	}
	return out, nil
}
