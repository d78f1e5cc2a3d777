package handlers

import (
	"net/http"
	"time"

	"github.com/jackc/pgx/v5/pgtype"
	"github.com/labstack/echo/v4"

	"github.com/kubebyon/kubebyon/internal/input"
)

// apiNodeDetail is one node with what its console page shows: its
// conditions, resources, taints, labels and pods, its managed ingress
// setting, and its latest drain or deletion.
type apiNodeDetail struct {
	apiNode
	Conditions []apiNodeCondition `json:"conditions"`
	Resources  []apiNodeResource  `json:"resources"`
	Taints     []string           `json:"taints"`
	Labels     map[string]string  `json:"labels"`
	Pods       []apiNodePod       `json:"pods"`
	Ingress    apiNodeIngress     `json:"ingress"`
	// Recorded: the control plane did not answer, and this is the node
	// as the platform last recorded it, at last_seen: its conditions
	// without its resources, labels or pods.
	Recorded        bool              `json:"recorded"`
	LastSeen        *time.Time        `json:"last_seen"`
	LatestOperation *apiNodeOperation `json:"latest_operation"`
}

type apiNodeCondition struct {
	Type               string    `json:"type"`
	Status             string    `json:"status"`
	Reason             string    `json:"reason"`
	Message            string    `json:"message"`
	LastTransitionTime time.Time `json:"last_transition_time"`
}

type apiNodeResource struct {
	Name        string `json:"name"`
	Capacity    string `json:"capacity"`
	Allocatable string `json:"allocatable"`
}

// apiNodePod is a pod on the node as kubectl get pods shows it.
type apiNodePod struct {
	Namespace  string    `json:"namespace"`
	Name       string    `json:"name"`
	Phase      string    `json:"phase"`
	Ready      int       `json:"ready"`
	Containers int       `json:"containers"`
	Restarts   int32     `json:"restarts"`
	CreatedAt  time.Time `json:"created_at"`
}

// apiNodeIngress is the node's managed ingress setting: an ingress node
// or not, and the public address its host names' records get ("" for
// its external IP).
type apiNodeIngress struct {
	Enabled       bool   `json:"enabled"`
	PublicAddress string `json:"public_address"`
}

// showAPINode is GET /api/v1/clusters/{id}/nodes/{name}: the node read
// live or, while its control plane does not answer, as last recorded.
func (h *Handlers) showAPINode(c echo.Context) error {
	cl, d, op, err := h.ownNode(c)
	if err != nil {
		return err
	}
	live := h.nodeLiveView(cl, d, time.Now())
	out := apiNodeDetail{
		apiNode: apiNodeOf(d.Summary), Conditions: make([]apiNodeCondition, len(live.Conditions)),
		Resources: make([]apiNodeResource, len(live.Resources)), Taints: append([]string{}, live.Taints...),
		Labels: d.Labels, Pods: make([]apiNodePod, len(live.Pods)),
		Ingress:  apiNodeIngress{Enabled: d.IngressNode, PublicAddress: d.PublicAddress},
		Recorded: d.Recorded, LastSeen: optionalTime(pgtype.Timestamptz{Time: d.LastSeen, Valid: d.Recorded && !d.LastSeen.IsZero()}),
	}
	if out.Labels == nil {
		out.Labels = map[string]string{}
	}
	for i, cond := range live.Conditions {
		out.Conditions[i] = apiNodeCondition{Type: cond.Type, Status: cond.Status, Reason: cond.Reason, Message: cond.Message, LastTransitionTime: cond.Time.UTC()}
	}
	for i, r := range live.Resources {
		out.Resources[i] = apiNodeResource{Name: r.Name, Capacity: r.Capacity, Allocatable: r.Allocatable}
	}
	for i, p := range live.Pods {
		out.Pods[i] = apiNodePod{Namespace: p.Namespace, Name: p.Name, Phase: p.Phase, Ready: p.Ready, Containers: p.Containers, Restarts: p.Restarts, CreatedAt: p.Created.UTC()}
	}
	if op != nil {
		o := apiNodeOperationFrom(*op)
		out.LatestOperation = &o
	}
	return c.JSON(http.StatusOK, out)
}

// apiNodeIngressBody is the body of PUT .../nodes/{name}/ingress.
type apiNodeIngressBody struct {
	Enabled       *bool  `json:"enabled"`
	PublicAddress string `json:"public_address"`
}

// setAPINodeIngress is PUT /api/v1/clusters/{id}/nodes/{name}/ingress:
// the node is an ingress node of the cluster's managed ingress or not,
// with the public address its host names' records get; 200 with the
// setting as the node now has it, 422 for an address that is not one.
func (h *Handlers) setAPINodeIngress(c echo.Context) error {
	cl, err := h.memberReadyCluster(c)
	if err != nil {
		return err
	}
	var body apiNodeIngressBody
	if err := decodeJSON(c, &body); err != nil {
		return err
	}
	if body.Enabled == nil {
		return input.Errors{"enabled": "ErrAPIFieldRequired"}
	}
	ctx := c.Request().Context()
	name := c.Param("name")
	if err := h.Nodes.SetIngress(ctx, cl, name, *body.Enabled, body.PublicAddress, actor(c)); err != nil {
		return nodeError(err)
	}
	// As SetIngress recorded it, its address in normal form.
	d, err := h.Nodes.Recorded(ctx, cl, name)
	if err != nil {
		return nodeError(err)
	}
	return c.JSON(http.StatusOK, apiNodeIngress{Enabled: d.IngressNode, PublicAddress: d.PublicAddress})
}
