package handlers

import (
	"errors"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/labstack/echo/v4"
	corev1 "k8s.io/api/core/v1"

	"github.com/kubebyon/kubebyon/internal/clusters"
	"github.com/kubebyon/kubebyon/internal/nodes"
	"github.com/kubebyon/kubebyon/queries"
	"github.com/kubebyon/kubebyon/views"
)

// validNodeName answers 404 for a path whose node name no Node can have,
// before the cluster is asked (which would answer for ".." with an error
// that looks like an unreachable cluster).
func validNodeName(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		if !nodes.ValidName(c.Param("name")) {
			return echo.ErrNotFound
		}
		return next(c)
	}
}

// memberReadyCluster is the signed-in user's cluster named in the path, which
// must be ready for its nodes to be reached.
func (h *Handlers) memberReadyCluster(c echo.Context) (queries.Cluster, error) {
	cl, err := h.memberCluster(c)
	if err != nil {
		return cl, err
	}
	if cl.Status != clusters.StatusReady {
		return cl, echo.NewHTTPError(http.StatusConflict, "ErrNodesClusterNotReady")
	}
	return cl, nil
}

// nodeError answers what the node actions return: a node that is not
// there is not found, an unreachable cluster a bad gateway.
func nodeError(err error) error {
	switch {
	case errors.Is(err, nodes.ErrNotFound):
		return echo.ErrNotFound
	case errors.Is(err, clusters.ErrNotReady):
		return echo.NewHTTPError(http.StatusConflict, "ErrNodesClusterNotReady").SetInternal(err)
	case errors.Is(err, nodes.ErrUnreachable):
		return echo.NewHTTPError(http.StatusBadGateway, nodes.ErrUnreachable.Error()).SetInternal(err)
	case errors.Is(err, nodes.ErrOperationBusy):
		return echo.NewHTTPError(http.StatusConflict, nodes.ErrOperationBusy.Error())
	}
	return err
}

func (h *Handlers) showNodesPage(c echo.Context) error {
	who, err := h.acting(c)
	if err != nil {
		return err
	}
	id, err := clusterIDParam(c)
	if err != nil {
		return err
	}
	page, err := h.Nodes.Page(c.Request().Context(), who, id)
	cl := page.Cluster
	if errors.Is(err, clusters.ErrNotFound) {
		return h.clusterNotFound(c, who, id)
	}
	if err == nil && cl.Status == clusters.StatusDeleted {
		return errClusterNotFound
	}
	if err != nil {
		return err
	}
	l := h.nodeList(c, page)
	if l.Error != "" {
		// The open list says why its rows went and keeps asking: an
		// upgrade ends ready again. The page says it in the cluster's
		// tabs.
		c.Response().Header().Set("Cache-Control", "no-store")
		if !wantsFragment(c) {
			return render(c, http.StatusConflict, views.NodesPage(l))
		}
		return render(c, http.StatusOK, views.NodeRows(l))
	}
	if !wantsFragment(c) {
		l.NodeQuota = nodeQuotaView(c.Request().Context(), page.Plan, cl.NodeQuotaEnabled)
		l.NodeQuota.Unenforceable = !strings.HasPrefix(h.BaseURL, "https://")
		if len(page.Nodes) == 0 && l.Cluster.CanChange {
			if l.FirstNode, err = h.firstNode(c, cl.ID); err != nil {
				return err
			}
		}
	}
	c.Response().Header().Set("Cache-Control", "no-store")
	h.viewAsAPICall(c, "listNodes", nil, strconv.FormatInt(cl.ID, 10))
	return renderPageOrFragment(c, views.NodesPage(l), views.NodeRows(l))
}

// nodeList is the nodes table of page as the request sorts it (?sort=,
// ?dir=), for the nodes page, its poller and its stream; with Error set
// for a cluster that is not ready.
func (h *Handlers) nodeList(c echo.Context, page nodes.Page) views.NodeList {
	cl := page.Cluster
	key, desc, _ := listSort(c, nodeSortKeys)
	l := views.NodeList{Cluster: clusterView(cl), Sort: views.Sort{Path: views.ClusterPath(cl.ID, "nodes"), Key: key, Desc: desc}}
	if cl.Status != clusters.StatusReady {
		l.Error = "ErrNodesClusterNotReady"
		return l
	}
	l.Updated, l.Now = page.Fresh.Updated, time.Now()
	l.UnreachableSince, l.UnreachableError = page.Fresh.UnreachableSince, page.Fresh.LastError
	l.Nodes = make([]views.Node, 0, len(page.Nodes))
	for _, n := range page.Nodes {
		v := nodeView(n.Summary)
		v.JoinedWith = n.TokenDescription
		if v.JoinedWith == "" {
			v.JoinedWith = n.TokenID
		}
		l.Nodes = append(l.Nodes, v)
	}
	sortNodes(l.Nodes, key, desc)
	return l
}

// streamNodeRows is GET /clusters/:id/node-rows/stream: the nodes table's
// rows (NodeRows, sorted as the page is) each time the database says the
// cluster's recorded nodes or its reachability changed; the poller rests
// meanwhile. It lasts as long as the page, until its lifetime ends.
func (h *Handlers) streamNodeRows(c echo.Context) error {
	who, err := h.acting(c)
	if err != nil {
		return err
	}
	id, err := clusterIDParam(c)
	if err != nil {
		return err
	}
	// The first message is read before anything is written: another's
	// cluster is not found.
	return h.streamLive(c, id, func() (liveMessage, error) {
		page, err := h.Nodes.Page(c.Request().Context(), who, id)
		if errors.Is(err, clusters.ErrNotFound) {
			return liveMessage{}, echo.ErrNotFound
		}
		if err != nil {
			return liveMessage{}, err
		}
		html, err := renderHTML(c.Request().Context(), views.NodeRows(h.nodeList(c, page)))
		return liveMessage{html: html, done: page.Cluster.Status == clusters.StatusDeleted}, err
	})
}

// nodeSortKeys are the columns the nodes table sorts by: a cluster's
// nodes are few and read whole, so they are sorted here (sortNodes).
var nodeSortKeys = []string{"name", "status", "version", "created"}

// sortNodes puts ns in the order of the column key (of nodeSortKeys,
// descending when desc), by name among equals; "" keeps the record's
// order.
func sortNodes(ns []views.Node, key string, desc bool) {
	if key == "" {
		return
	}
	slices.SortStableFunc(ns, func(a, b views.Node) int {
		var n int
		switch key {
		case "status":
			n = strings.Compare(a.Status, b.Status)
		case "version":
			n = strings.Compare(a.KubeletVersion, b.KubeletVersion)
		case "created":
			n = a.Created.Compare(b.Created)
		}
		if n == 0 {
			n = strings.Compare(a.Name, b.Name)
		}
		if desc {
			return -n
		}
		return n
	})
}

func (h *Handlers) showNodePage(c echo.Context) error {
	cl, d, op, err := h.ownNode(c)
	if errors.Is(err, nodes.ErrUnreachable) {
		// Never recorded and its control plane does not answer: the page
		// shows, saying so, rather than an error.
		h.Logger.WarnContext(c.Request().Context(), "read node", "cluster_id", cl.ID, "node", c.Param("name"), "err", err)
		name := c.Param("name")
		live := views.NodeLive{ClusterID: cl.ID, Node: views.Node{Name: name}, Error: "NodeLiveUnreachable"}
		return render(c, http.StatusOK, views.NodePage(views.NodeDetail{Cluster: clusterView(cl), Live: live, Ingress: views.NewForm()}))
	}
	if err != nil {
		return err
	}
	m := views.NodeDetail{Cluster: clusterView(cl), Live: h.nodeLiveView(cl, d, time.Now()), Ingress: nodeIngressForm(d)}
	if op != nil {
		v := h.nodeOperationView(*op)
		m.Operation = &v
	}
	h.viewAsAPICall(c, "getNode", nil, strconv.FormatInt(cl.ID, 10), d.Name)
	return render(c, http.StatusOK, views.NodePage(m))
}

// ownNode is the node the path names of the user's ready cluster, as
// Show reads it, with its latest operation (nil when it had none): for
// its page and the API.
func (h *Handlers) ownNode(c echo.Context) (queries.Cluster, nodes.Detail, *queries.NodeOperation, error) {
	cl, err := h.memberReadyCluster(c)
	if err != nil {
		return cl, nodes.Detail{}, nil, err
	}
	ctx := c.Request().Context()
	d, err := h.Nodes.Show(ctx, cl, c.Param("name"))
	if err != nil {
		return cl, d, nil, nodeError(err)
	}
	op, ok, err := h.Nodes.LatestOperation(ctx, cl, d.Name)
	if err != nil || !ok {
		return cl, d, nil, err
	}
	return cl, d, &op, nil
}

// showNodeOperation is an operation's page, or for htmx its panel; 286
// once it has finished, which stops the polling.
// nodeOperationParam is the cluster's operation the path names (:op) on
// the node it names (:name); any other is not found.
func (h *Handlers) nodeOperationParam(c echo.Context, cl queries.Cluster) (queries.NodeOperation, error) {
	id, err := strconv.ParseInt(c.Param("op"), 10, 64)
	if err != nil {
		return queries.NodeOperation{}, echo.ErrNotFound
	}
	op, err := h.Nodes.Operation(c.Request().Context(), cl, id)
	if err != nil {
		return op, nodeError(err)
	}
	if op.NodeName != c.Param("name") {
		return op, echo.ErrNotFound
	}
	return op, nil
}

func (h *Handlers) showNodeOperation(c echo.Context) error {
	cl, err := h.memberReadyCluster(c)
	if err != nil {
		return err
	}
	op, err := h.nodeOperationParam(c, cl)
	if err != nil {
		return err
	}
	v := h.nodeOperationView(op)
	c.Response().Header().Set("Cache-Control", "no-store")
	c.Response().Header().Add("Vary", "HX-Request")
	if !wantsFragment(c) {
		return render(c, http.StatusOK, views.NodeOperationPage(clusterView(cl), v))
	}
	status := http.StatusOK
	if v.Done {
		status = statusStopPolling
	}
	return render(c, status, views.NodeOperationUpdate(v))
}

// streamNodeOperation is GET .../operations/:op/stream: the operation's
// panel (NodeOperationUpdate) each time it changes, until it is over.
func (h *Handlers) streamNodeOperation(c echo.Context) error {
	cl, err := h.memberReadyCluster(c)
	if err != nil {
		return err
	}
	if _, err := h.nodeOperationParam(c, cl); err != nil {
		return err
	}
	return h.streamLive(c, cl.ID, func() (liveMessage, error) {
		op, err := h.nodeOperationParam(c, cl)
		if err != nil {
			return liveMessage{}, err
		}
		v := h.nodeOperationView(op)
		html, err := renderHTML(c.Request().Context(), views.NodeOperationUpdate(v))
		return liveMessage{html: html, done: v.Done}, err
	})
}

func nodeView(n nodes.Summary) views.Node {
	return views.Node{
		Name: n.Name, Status: n.Status, Unschedulable: n.Unschedulable, Roles: n.Roles,
		KubeletVersion: n.KubeletVersion, OS: n.OS, Arch: n.Arch,
		InternalIP: n.InternalIP, ExternalIP: n.ExternalIP, Created: n.Created,
	}
}

// nodeLiveView is what the node page shows of the node's state, as of now;
// a node as last recorded comes with the reason it is not live.
func (h *Handlers) nodeLiveView(cl queries.Cluster, d nodes.Detail, now time.Time) views.NodeLive {
	m := views.NodeLive{ClusterID: cl.ID, Node: nodeView(d.Summary)}
	if d.Recorded {
		h.Logger.Warn("read node", "cluster_id", cl.ID, "node", d.Name, "err", d.Cause)
		m.Error, m.Recorded, m.Seen = "NodeLiveUnreachable", true, d.LastSeen
	}
	for _, c := range d.Conditions {
		m.Conditions = append(m.Conditions, views.NodeCondition{
			Type: string(c.Type), Status: string(c.Status), Reason: c.Reason, Message: c.Message, Time: c.LastTransitionTime.Time,
		})
	}
	var names []corev1.ResourceName
	for name := range d.Capacity {
		names = append(names, name)
	}
	slices.Sort(names)
	for _, name := range names {
		capacity, alloc := d.Capacity[name], d.Allocatable[name]
		m.Resources = append(m.Resources, views.NodeResource{Name: string(name), Capacity: capacity.String(), Allocatable: alloc.String()})
	}
	for _, t := range d.Taints {
		m.Taints = append(m.Taints, t.ToString())
	}
	for k, v := range d.Labels {
		m.Labels = append(m.Labels, k+"="+v)
	}
	slices.Sort(m.Labels)
	for _, p := range d.Pods {
		m.Pods = append(m.Pods, nodePodView(p, now))
	}
	return m
}

// nodePodView is a pod as kubectl get pods shows it: its ready containers
// of all, and their restarts.
func nodePodView(p corev1.Pod, now time.Time) views.NodePod {
	v := views.NodePod{
		Namespace: p.Namespace, Name: p.Name, Phase: string(p.Status.Phase), Containers: len(p.Spec.Containers),
		Created: p.CreationTimestamp.Time, Age: now.Sub(p.CreationTimestamp.Time),
	}
	for _, cs := range p.Status.ContainerStatuses {
		if cs.Ready {
			v.Ready++
		}
		v.Restarts += cs.RestartCount
	}
	return v
}

// resetTokenPlaceholder stands in the reset command for a join token of
// the cluster's, which its owner pastes in: the page shows no secret that
// would let whoever sees it join a machine.
const resetTokenPlaceholder = "<JOIN-TOKEN>"

func (h *Handlers) nodeOperationView(op queries.NodeOperation) views.NodeOperation {
	v := views.NodeOperation{
		ID: op.ID, ClusterID: op.ClusterID, NodeName: op.NodeName, Kind: op.Kind, Status: op.Status,
		Message: op.Message, Progress: op.Progress, Updated: op.UpdatedAt.Time,
		Done:        op.Status != nodes.OperationRunning,
		Interrupted: op.Message == nodes.OperationInterrupted,
	}
	if op.Kind == nodes.OpDelete && op.Status == nodes.OperationSucceeded {
		v.ResetCommand = resetCommand(h.BaseURL)
	}
	return v
}

// resetCommand is what cleans the host of a deleted node: the platform's
// join script with --reset-only, which runs the control plane's own reset
// after verifying the endpoint with the cluster's CA that it carries.
func resetCommand(baseURL string) string {
	return joinCommand(baseURL, resetTokenPlaceholder) + " -s -- --reset-only"
}
