package handlers

import (
	"errors"
	"fmt"
	"net/http"
	"sort"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/kubebyon/kubebyon/internal/locale"
	"github.com/kubebyon/kubebyon/internal/nodes"
	"github.com/kubebyon/kubebyon/queries"
)

// apiNode is a node as the API shows it.
type apiNode struct {
	Name           string    `json:"name"`
	Status         string    `json:"status"`
	Unschedulable  bool      `json:"unschedulable"`
	Roles          []string  `json:"roles"`
	KubeletVersion string    `json:"kubelet_version"`
	OS             string    `json:"os"`
	Arch           string    `json:"arch"`
	InternalIP     string    `json:"internal_ip"`
	ExternalIP     string    `json:"external_ip"`
	CreatedAt      time.Time `json:"created_at"`
}

// apiNodeList is one page of a cluster's nodes, by name.
type apiNodeList struct {
	Nodes []apiNode `json:"nodes"`
	Next  string    `json:"next,omitempty"`
}

// apiDrainBody is the body of drain, and optionally of DELETE (with
// "drain": true to drain first). Absent options take the console's
// defaults.
type apiDrainBody struct {
	Drain              *bool `json:"drain"`
	IgnoreDaemonSets   *bool `json:"ignore_daemonsets"`
	DeleteEmptyDirData *bool `json:"delete_emptydir_data"`
	Force              *bool `json:"force"`
	GracePeriodSeconds *int  `json:"grace_period_seconds"`
	TimeoutSeconds     *int  `json:"timeout_seconds"`
}

func (b apiDrainBody) options() nodes.DrainOptions {
	o := nodes.DrainOptions{IgnoreDaemonSets: true, GracePeriodSeconds: -1, TimeoutSeconds: nodes.DefaultTimeoutSeconds}
	if b.IgnoreDaemonSets != nil {
		o.IgnoreDaemonSets = *b.IgnoreDaemonSets
	}
	if b.DeleteEmptyDirData != nil {
		o.DeleteEmptyDirData = *b.DeleteEmptyDirData
	}
	if b.Force != nil {
		o.Force = *b.Force
	}
	if b.GracePeriodSeconds != nil {
		o.GracePeriodSeconds = *b.GracePeriodSeconds
	}
	if b.TimeoutSeconds != nil {
		o.TimeoutSeconds = *b.TimeoutSeconds
	}
	return o
}

// apiNodeOperation is a started drain or deletion.
type apiNodeOperation struct {
	ID       int64    `json:"id"`
	Node     string   `json:"node"`
	Kind     string   `json:"kind"`
	Status   string   `json:"status"`
	Message  string   `json:"message"`
	Progress []string `json:"progress"`
}

func apiNodeOperationFrom(op queries.NodeOperation) apiNodeOperation {
	return apiNodeOperation{ID: op.ID, Node: op.NodeName, Kind: op.Kind, Status: op.Status, Message: op.Message, Progress: op.Progress}
}

// listAPINodes is GET /api/v1/clusters/{id}/nodes: the cluster's nodes,
// live, by name, a page at a time. The cursor is the last name of the
// page before, not the apiserver's continue token: a cluster has as many
// nodes as its plan allows, which one list reads whole (as the console's
// does), and a name stays a valid cursor where a continue token expires
// with the store's compaction (410) and is not kept by every backend's
// datastore alike.
func (h *Handlers) listAPINodes(c echo.Context) error {
	cl, err := h.memberReadyCluster(c)
	if err != nil {
		return err
	}
	p, after, err := namePageOf(c, nodes.ValidName)
	if err != nil {
		return err
	}
	// Live from the control plane, within checks.CallTimeout: API clients
	// ask for the nodes now, and are told (502) when they cannot be had.
	list, err := h.Nodes.ListLive(c.Request().Context(), cl)
	if err != nil {
		return nodeError(err)
	}
	// By name: the page starts after the cursor's.
	list = list[sort.Search(len(list), func(i int) bool { return list[i].Name > after }):]
	list, next := pageOf(list, p.Limit, func(n nodes.Summary) string { return n.Name })
	out := apiNodeList{Nodes: make([]apiNode, len(list)), Next: next}
	for i, n := range list {
		out.Nodes[i] = apiNodeOf(n)
	}
	return c.JSON(http.StatusOK, out)
}

func apiNodeOf(n nodes.Summary) apiNode {
	roles := n.Roles
	if roles == nil {
		roles = []string{}
	}
	return apiNode{
		Name: n.Name, Status: n.Status, Unschedulable: n.Unschedulable, Roles: roles,
		KubeletVersion: n.KubeletVersion, OS: n.OS, Arch: n.Arch,
		InternalIP: n.InternalIP, ExternalIP: n.ExternalIP, CreatedAt: n.Created.UTC(),
	}
}

func (h *Handlers) cordonAPINode(c echo.Context) error   { return h.setAPICordon(c, true) }
func (h *Handlers) uncordonAPINode(c echo.Context) error { return h.setAPICordon(c, false) }

func (h *Handlers) setAPICordon(c echo.Context, desired bool) error {
	cl, err := h.memberReadyCluster(c)
	if err != nil {
		return err
	}
	if err := h.Nodes.Cordon(c.Request().Context(), cl, c.Param("name"), desired, actor(c)); err != nil {
		return nodeError(err)
	}
	return c.NoContent(http.StatusNoContent)
}

// readDrainBody reads an optional JSON body: an empty one is the defaults.
func readDrainBody(c echo.Context) (apiDrainBody, error) {
	var body apiDrainBody
	if c.Request().ContentLength == 0 {
		return body, nil
	}
	return body, decodeJSON(c, &body)
}

func (h *Handlers) drainAPINode(c echo.Context) error {
	cl, err := h.memberReadyCluster(c)
	if err != nil {
		return err
	}
	body, err := readDrainBody(c)
	if err != nil {
		return err
	}
	op, err := h.Nodes.Drain(c.Request().Context(), cl, c.Param("name"), body.options(), actor(c))
	if err != nil {
		return h.apiNodeError(c, err)
	}
	return acceptedOperation(c, cl.ID, op)
}

func (h *Handlers) deleteAPINode(c echo.Context) error {
	cl, err := h.memberReadyCluster(c)
	if err != nil {
		return err
	}
	body, err := readDrainBody(c)
	if err != nil {
		return err
	}
	var drainFirst *nodes.DrainOptions
	if body.Drain != nil && *body.Drain {
		o := body.options()
		drainFirst = &o
	}
	op, err := h.Nodes.Delete(c.Request().Context(), cl, c.Param("name"), drainFirst, actor(c))
	if err != nil {
		return h.apiNodeError(c, err)
	}
	return acceptedOperation(c, cl.ID, op)
}

// acceptedOperation answers a started node operation: 202 with it, and
// its Location to poll until its status is no longer running.
func acceptedOperation(c echo.Context, clusterID int64, op queries.NodeOperation) error {
	c.Response().Header().Set(echo.HeaderLocation, fmt.Sprintf("/api/v1/clusters/%d/nodes/%s/operations/%d", clusterID, op.NodeName, op.ID))
	return c.JSON(http.StatusAccepted, apiNodeOperationFrom(op))
}

// showAPINodeOperation is GET .../nodes/{name}/operations/{op}: a drain
// or deletion as it stands, read from the platform (the cluster may be
// unreachable meanwhile).
func (h *Handlers) showAPINodeOperation(c echo.Context) error {
	cl, err := h.memberCluster(c)
	if err != nil {
		return err
	}
	op, err := h.nodeOperationParam(c, cl)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, apiNodeOperationFrom(op))
}

// apiNodeError answers options out of bounds with 422.
func (h *Handlers) apiNodeError(c echo.Context, err error) error {
	if errors.Is(err, nodes.ErrInvalidOptions) {
		ctx := c.Request().Context()
		return c.JSON(http.StatusUnprocessableEntity, apiInvalid{Error: apiInvalidBody{
			Code: "invalid", Message: locale.T(ctx, nodes.ErrInvalidOptions.Error(), map[string]any{
				"MaxGrace": nodes.MaxGracePeriodSeconds, "MaxTimeout": nodes.MaxTimeoutSeconds,
			}),
		}})
	}
	return nodeError(err)
}
