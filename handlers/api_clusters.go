package handlers

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/labstack/echo/v4"

	"github.com/kubebyon/kubebyon/internal/clusters"
	"github.com/kubebyon/kubebyon/internal/entitlements"
	"github.com/kubebyon/kubebyon/internal/etag"
	"github.com/kubebyon/kubebyon/internal/ingress"
	"github.com/kubebyon/kubebyon/internal/locale"
	"github.com/kubebyon/kubebyon/internal/nodes"
	"github.com/kubebyon/kubebyon/queries"
)

// apiCluster is a cluster as the API shows it.
type apiCluster struct {
	ID                int64  `json:"id"`
	Name              string `json:"name"`
	Slug              string `json:"slug"`
	Description       string `json:"description"`
	KubernetesVersion string `json:"kubernetes_version"`
	PublicAccessMode  string `json:"public_access_mode"`
	// Backend runs the control plane: vcluster or kamaji.
	Backend            string     `json:"backend"`
	Status             string     `json:"status"`
	StatusMessage      string     `json:"status_message"`
	Endpoint           string     `json:"endpoint"`
	Generation         int64      `json:"generation"`
	ObservedGeneration int64      `json:"observed_generation"`
	CreatedAt          time.Time  `json:"created_at"`
	ReadyAt            *time.Time `json:"ready_at"`
	NodeQuotaEnabled   bool       `json:"node_quota_enabled"`
	// The host NodePorts the public entry forwards the endpoint's https
	// and konnectivity to; null when none is allocated.
	HTTPSNodePort        *int32 `json:"https_node_port"`
	KonnectivityNodePort *int32 `json:"konnectivity_node_port"`
	// The address the host gave a LoadBalancer cluster's Service, which
	// the public entry forwards the endpoint to; null until it has one.
	LoadBalancerAddress *string `json:"load_balancer_address"`
	// ManagedIngress is where the cluster's managed ingress stands, in
	// the answers about one cluster (not in lists).
	ManagedIngress *apiIngress `json:"managed_ingress,omitempty"`
	// StaleNodeCleanupHours is how long a node may stay NotReady before
	// the platform deletes it, 0 when it never does; in the answers about
	// one cluster (not in lists).
	StaleNodeCleanupHours *int32 `json:"stale_node_cleanup_hours,omitempty"`
}

// apiIngress is a cluster's managed ingress as the API shows it.
type apiIngress struct {
	Enabled bool `json:"enabled"`
	// Status: off, installing, ready, removing or error; Message says
	// why, or how far.
	Status       string `json:"status"`
	Message      string `json:"message"`
	Controller   string `json:"controller"`
	ChartVersion string `json:"chart_version"`
	// CNAMETarget is the name host names point at; empty until the
	// admin sets an apps base domain.
	CNAMETarget string `json:"cname_target"`
	// DNSState is how the CNAME target's records stand: published,
	// unmanaged (the admin keeps them: DNSAddresses are what they should
	// hold), removed, error (DNSError says why), or "" before the first
	// check; DNSAddresses the addresses of the Ready ingress nodes.
	DNSState     string   `json:"dns_state"`
	DNSAddresses []string `json:"dns_addresses"`
	DNSError     string   `json:"dns_error,omitempty"`
	// Hostnames are the host names bound to the cluster, by name.
	Hostnames []apiHostname `json:"hostnames"`
	// Mode is how it is reached: direct (the ingress nodes) or edge (the
	// platform's Gateway). EdgeBlocker says why edge cannot be chosen
	// (absent when it can); Routes how the host nodes' route agents
	// stand with the cluster's routes (edge only).
	Mode        string     `json:"mode"`
	EdgeBlocker string     `json:"edge_unavailable,omitempty"`
	Routes      *apiRoutes `json:"routes,omitempty"`
	// Edge is where its routes through the platform's Gateway stand
	// (edge only): state routed, pending or error, with the message and
	// the controller pods they lead to.
	Edge *apiEdge `json:"edge,omitempty"`
}

type apiEdge struct {
	State   string   `json:"state"`
	Message string   `json:"message,omitempty"`
	Pods    []string `json:"pods"`
}

// apiRoutes is how the route agents stand with a cluster's routes.
type apiRoutes struct {
	Routes  int             `json:"routes"`
	InPlace int             `json:"in_place"`
	Agents  []apiRouteAgent `json:"agents"`
}

type apiRouteAgent struct {
	Node   string   `json:"node"`
	State  string   `json:"state"`
	Failed []string `json:"failed,omitempty"`
	Error  string   `json:"error,omitempty"`
}

// withIngress is the cluster with its managed ingress.
func (h *Handlers) withIngress(c echo.Context, cl queries.Cluster) (apiCluster, error) {
	out := apiClusterFrom(cl)
	out.StaleNodeCleanupHours = &cl.StaleNodeCleanupHours.Int32
	st, err := h.Ingress.Get(c.Request().Context(), cl)
	if err != nil {
		return out, err
	}
	out.ManagedIngress = &apiIngress{
		Enabled: st.Enabled, Status: st.Status, Message: st.Message,
		Controller: st.Controller, ChartVersion: st.ChartVersion, CNAMETarget: st.CNAMETarget,
		DNSState: st.DNSState, DNSAddresses: st.DNSAddresses, DNSError: st.DNSError,
		Mode: st.Mode,
	}
	if st.EdgeBlocker != nil {
		out.ManagedIngress.EdgeBlocker = locale.T(c.Request().Context(), st.EdgeBlocker.Error(), map[string]any{"CIDR": st.PodCIDR})
	}
	if st.Mode == ingress.ModeEdge {
		r, err := h.clusterRoutes(c.Request().Context(), cl.ID)
		if err != nil {
			return out, err
		}
		out.ManagedIngress.Routes = &apiRoutes{Routes: r.Routes, InPlace: r.InPlace, Agents: []apiRouteAgent{}}
		out.ManagedIngress.Edge = &apiEdge{State: st.EdgeState, Message: st.EdgeMessage, Pods: append([]string{}, st.EdgePods...)}
		for _, a := range r.Agents {
			out.ManagedIngress.Routes.Agents = append(out.ManagedIngress.Routes.Agents, apiRouteAgent{Node: a.Node, State: a.State, Failed: a.Failed, Error: a.Error})
		}
	}
	if out.ManagedIngress.DNSAddresses == nil {
		out.ManagedIngress.DNSAddresses = []string{}
	}
	names, err := h.Ingress.Hostnames(c.Request().Context(), cl.ID)
	if err != nil {
		return out, err
	}
	out.ManagedIngress.Hostnames = make([]apiHostname, len(names))
	for i, n := range names {
		out.ManagedIngress.Hostnames[i] = apiHostnameOf(n)
	}
	return out, nil
}

func apiClusterFrom(c queries.Cluster) apiCluster {
	return apiClusterOf(queries.ClusterListForMemberRow{
		ID: c.ID, Name: c.Name, Slug: c.Slug, Description: c.Description,
		KubernetesVersion: c.KubernetesVersion, PublicAccessMode: c.PublicAccessMode,
		Status: c.Status, StatusMessage: c.StatusMessage, Endpoint: c.Endpoint,
		Generation: c.Generation, ObservedGeneration: c.ObservedGeneration,
		CreatedAt: c.CreatedAt, ReadyAt: c.ReadyAt, NodeQuotaEnabled: c.NodeQuotaEnabled,
		NodePort: c.NodePort, KonnectivityNodePort: c.KonnectivityNodePort, LbAddress: c.LbAddress,
		Backend: c.Backend,
	})
}

// apiClusterOf is a cluster as the API shows it, from the columns the
// API's list reads.
func apiClusterOf(c queries.ClusterListForMemberRow) apiCluster {
	out := apiCluster{
		ID: c.ID, Name: c.Name, Slug: c.Slug, Description: c.Description,
		KubernetesVersion: c.KubernetesVersion, PublicAccessMode: c.PublicAccessMode,
		Status: c.Status, StatusMessage: c.StatusMessage, Endpoint: c.Endpoint,
		Generation: c.Generation, ObservedGeneration: c.ObservedGeneration,
		CreatedAt: c.CreatedAt.Time.UTC(), NodeQuotaEnabled: c.NodeQuotaEnabled, Backend: c.Backend,
	}
	if c.ReadyAt.Valid {
		t := c.ReadyAt.Time.UTC()
		out.ReadyAt = &t
	}
	if c.NodePort.Valid {
		out.HTTPSNodePort = &c.NodePort.Int32
	}
	if c.KonnectivityNodePort.Valid {
		out.KonnectivityNodePort = &c.KonnectivityNodePort.Int32
	}
	if c.LbAddress != "" {
		out.LoadBalancerAddress = &c.LbAddress
	}
	return out
}

// apiClusterList is one page of clusters, newest first (api_page.go).
type apiClusterList struct {
	Clusters []apiCluster `json:"clusters"`
	Next     string       `json:"next,omitempty"`
}

// apiClusterBody is the body of POST and PATCH; PATCH changes only the
// fields present.
type apiClusterBody struct {
	Name              *string `json:"name"`
	KubernetesVersion *string `json:"kubernetes_version"`
	PublicAccessMode  *string `json:"public_access_mode"`
	Description       *string `json:"description"`
	// Backend is the control-plane backend (POST only): one the owner's
	// plan allows; absent, the first of them.
	Backend *string `json:"backend"`
	// NodeQuotaEnabled is the platform's: the owner's plan limits the
	// nodes of every cluster. true changes nothing; false is refused.
	NodeQuotaEnabled *bool `json:"node_quota_enabled"`
	// ManagedIngress switches managed ingress (PATCH only).
	ManagedIngress *bool `json:"managed_ingress"`
	// ManagedIngressMode chooses how it is reached: direct or edge (PATCH
	// only).
	ManagedIngressMode *string `json:"managed_ingress_mode"`
	// StaleNodeCleanupHours turns the stale-node clean-up on (1 to
	// nodes.MaxStaleCleanupHours) or off (0) (PATCH only).
	StaleNodeCleanupHours *int `json:"stale_node_cleanup_hours"`
}

// apiInvalid is the 422 answer: what is wrong with the request, and with
// which fields.
type apiInvalid struct {
	Error apiInvalidBody `json:"error"`
}

type apiInvalidBody struct {
	Code    string            `json:"code"`
	Message string            `json:"message"`
	Fields  map[string]string `json:"fields,omitempty"`
}

func (h *Handlers) listAPIClusters(c echo.Context) error {
	who, err := h.acting(c)
	if err != nil {
		return err
	}
	p, before, err := apiIDPageOf(c)
	if err != nil {
		return err
	}
	page, err := h.Clusters.List(c.Request().Context(), who, before, p.Limit)
	if err != nil {
		return err
	}
	out := apiClusterList{Clusters: make([]apiCluster, len(page.Clusters)), Next: idCursor(page.NextBefore)}
	for i, cl := range page.Clusters {
		out.Clusters[i] = apiClusterOf(cl)
	}
	return c.JSON(http.StatusOK, out)
}

func (h *Handlers) createAPICluster(c echo.Context) error {
	who, err := h.acting(c)
	if err != nil {
		return err
	}
	var body apiClusterBody
	if err := decodeJSON(c, &body); err != nil {
		return err
	}
	// Absent fields are empty: the version and access mode then default.
	in := clusters.Input{
		Name: valueOr(body.Name, ""), Description: valueOr(body.Description, ""),
		KubernetesVersion: valueOr(body.KubernetesVersion, ""), PublicAccessMode: valueOr(body.PublicAccessMode, ""),
		Backend: valueOr(body.Backend, ""),
	}
	cl, err := h.Clusters.Create(c.Request().Context(), who, in, actor(c))
	if err != nil {
		return h.apiClusterError(c, err)
	}
	c.Response().Header().Set(echo.HeaderLocation, fmt.Sprintf("/api/v1/clusters/%d", cl.ID))
	return c.JSON(http.StatusCreated, apiClusterFrom(cl))
}

// showAPICluster is GET /api/v1/clusters/{id}, with the ETag of what a
// PATCH changes (clusters.Edit), for If-Match.
func (h *Handlers) showAPICluster(c echo.Context) error {
	who, err := h.acting(c)
	if err != nil {
		return err
	}
	id, err := clusterIDParam(c)
	if err != nil {
		return err
	}
	cl, tag, err := h.Clusters.Tagged(c.Request().Context(), who, id)
	if err != nil {
		return h.apiClusterError(c, err)
	}
	return h.answerCluster(c, http.StatusOK, cl, tag)
}

// answerCluster answers with the cluster and its managed ingress, and its
// entity tag.
func (h *Handlers) answerCluster(c echo.Context, status int, cl queries.Cluster, tag string) error {
	out, err := h.withIngress(c, cl)
	if err != nil {
		return err
	}
	c.Response().Header().Set("ETag", tag)
	return c.JSON(status, out)
}

// updateAPICluster is PATCH /api/v1/clusters/{id}: the fields present
// change, all of them or none, in one clusters.Edit; with If-Match, only
// if the cluster still has that ETag (else 412, nothing changed).
func (h *Handlers) updateAPICluster(c echo.Context) error {
	cl, err := h.ownChangeableCluster(c)
	if err != nil {
		return err
	}
	var body apiClusterBody
	if err := decodeJSON(c, &body); err != nil {
		return err
	}
	if body.Name != nil && *body.Name != cl.Name {
		return h.apiClusterError(c, clusters.FieldErrors{"name": "ErrClusterNameFixed"})
	}
	if body.NodeQuotaEnabled != nil && !*body.NodeQuotaEnabled {
		return h.apiClusterError(c, clusters.FieldErrors{"node_quota_enabled": "ErrNodeQuotaByPlan"})
	}
	a := actor(c)
	var steps []clusters.Step
	if body.ManagedIngressMode != nil {
		steps = append(steps, func(ctx context.Context, tx pgx.Tx, cur queries.Cluster) error {
			return h.Ingress.SetModeTx(ctx, tx, cur, *body.ManagedIngressMode, a)
		})
	}
	if body.ManagedIngress != nil {
		steps = append(steps, func(ctx context.Context, tx pgx.Tx, cur queries.Cluster) error {
			return h.Ingress.SwitchTx(ctx, tx, cur, *body.ManagedIngress, a)
		})
	}
	if body.StaleNodeCleanupHours != nil {
		steps = append(steps, func(ctx context.Context, tx pgx.Tx, cur queries.Cluster) error {
			return h.Nodes.SetStaleCleanupTx(ctx, tx, cur, *body.StaleNodeCleanupHours, a)
		})
	}
	// Last, as Edit asks: it locks the cluster's row for an update.
	if body.Description != nil || body.KubernetesVersion != nil || body.PublicAccessMode != nil {
		p := clusters.Patch{Description: body.Description, KubernetesVersion: body.KubernetesVersion, PublicAccessMode: body.PublicAccessMode}
		steps = append(steps, func(ctx context.Context, tx pgx.Tx, cur queries.Cluster) error {
			_, err := h.Clusters.Apply(ctx, tx, cur, p, a)
			return err
		})
	}
	who, err := h.acting(c)
	if err != nil {
		return err
	}
	edited, tag, err := h.Clusters.Edit(c.Request().Context(), who, cl.ID, ifMatch(c), steps...)
	if errors.Is(err, ingress.ErrPodCIDRShared) {
		return c.JSON(http.StatusUnprocessableEntity, apiInvalid{Error: apiInvalidBody{
			Code: "pod_network_shared", Message: locale.T(c.Request().Context(), err.Error(), map[string]any{"CIDR": cl.PodCidr.String()}),
		}})
	}
	if err != nil {
		return h.apiClusterError(c, err)
	}
	return h.answerCluster(c, http.StatusOK, edited, tag)
}

// ifMatch is the request's If-Match as a test of an entity tag: nil (any
// tag) without one; "*" matches any, and a tag only itself, compared
// strongly (RFC 9110): a weak tag matches none.
func ifMatch(c echo.Context) func(string) bool {
	values := c.Request().Header.Values("If-Match")
	if len(values) == 0 {
		return nil
	}
	var tags []string
	for _, v := range values {
		for t := range strings.SplitSeq(v, ",") {
			tags = append(tags, strings.TrimSpace(t))
		}
	}
	return func(etag string) bool {
		return slices.Contains(tags, "*") || slices.Contains(tags, etag)
	}
}

// conditional is the middleware of the PATCH routes other than the
// cluster's (which passes ifMatch to clusters.Edit): it carries the
// request's If-Match to the service that makes the change
// (etag.WithMatch), which checks it under the change's lock; a change
// over a state that changed since is 412 and changes nothing.
func conditional(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		c.SetRequest(c.Request().WithContext(etag.WithMatch(c.Request().Context(), etag.Match(ifMatch(c)))))
		return next(c)
	}
}

// setETag sets the answer's ETag to the tag of what a PATCH of the same
// path changes. Read before the representation the answer carries: when
// a change slips between the two reads, the tag is the older one, and a
// change sent with it is refused rather than made over the newer state.
func setETag(c echo.Context, tag func(context.Context) (string, error)) error {
	t, err := tag(c.Request().Context())
	if err != nil {
		return err
	}
	c.Response().Header().Set("ETag", t)
	return nil
}

// deleteAPICluster asks for the cluster's deletion; the API key stands in
// for the name the console asks to type.
func (h *Handlers) deleteAPICluster(c echo.Context) error {
	cl, err := h.memberCluster(c)
	if err != nil {
		return err
	}
	who, err := h.acting(c)
	if err != nil {
		return err
	}
	deleted, err := h.Clusters.Delete(c.Request().Context(), who, cl.ID, cl.Name, actor(c))
	if err != nil {
		return h.apiClusterError(c, err)
	}
	return c.JSON(http.StatusAccepted, apiClusterFrom(deleted))
}

func (h *Handlers) downloadAPIKubeconfig(c echo.Context) error {
	id, err := clusterIDParam(c)
	if err != nil {
		return err
	}
	return h.sendKubeconfig(c, id)
}

// valueOr is *p, or def when the field was absent.
func valueOr[T any](p *T, def T) T {
	if p == nil {
		return def
	}
	return *p
}

// apiClusterError answers a cluster action's error: field errors and what
// stops a cluster from being made are 422, a cluster being deleted 409,
// anything else a server error.
func (h *Handlers) apiClusterError(c echo.Context, err error) error {
	ctx := c.Request().Context()
	var (
		fe    clusters.FieldErrors
		limit *entitlements.LimitError
	)
	switch {
	case errors.As(err, &limit):
		return c.JSON(http.StatusUnprocessableEntity, apiInvalid{Error: apiInvalidBody{Code: "plan_limit", Message: locale.T(ctx, limit.Error(), limit.Data())}})
	case errors.As(err, &fe):
		body := apiInvalidBody{Code: "invalid", Message: locale.T(ctx, "ErrAPIInvalidFields"), Fields: map[string]string{}}
		for k, v := range fe {
			body.Fields[k] = locale.T(ctx, v)
		}
		return c.JSON(http.StatusUnprocessableEntity, apiInvalid{Error: body})
	case errors.Is(err, clusters.ErrNotFound):
		return errClusterNotFound
	case errors.Is(err, clusters.ErrDeleting):
		return echo.NewHTTPError(http.StatusConflict, clusters.ErrDeleting.Error())
	case errors.Is(err, clusters.ErrSuspended):
		return errClusterSuspended
	case errors.Is(err, clusters.ErrPreconditionFailed):
		return echo.NewHTTPError(http.StatusPreconditionFailed, err.Error())
	case errors.Is(err, nodes.ErrStaleCleanupHours):
		return h.apiClusterError(c, clusters.FieldErrors{"stale_node_cleanup_hours": "ErrAPIStaleCleanupHours"})
	case errors.Is(err, ingress.ErrNoAppsDomain), errors.Is(err, ingress.ErrEdgeNotConfigured):
		return c.JSON(http.StatusUnprocessableEntity, apiInvalid{Error: apiInvalidBody{Code: "not_configured", Message: locale.T(ctx, err.Error())}})
	case errors.Is(err, ingress.ErrMode):
		return c.JSON(http.StatusUnprocessableEntity, apiInvalid{Error: apiInvalidBody{
			Code: "invalid", Message: locale.T(ctx, "ErrAPIInvalidFields"), Fields: map[string]string{"managed_ingress_mode": locale.T(ctx, err.Error())},
		}})
	}
	known := h.clusterBlocker(c, err)
	if known == nil {
		return err
	}
	return c.JSON(http.StatusUnprocessableEntity, apiInvalid{Error: apiInvalidBody{Code: apiBlockerCodes[known], Message: locale.T(ctx, known.Error())}})
}

// apiBlockerCodes are the error codes of what stops a cluster from being
// made or changed, for programs to tell them apart.
var apiBlockerCodes = map[error]string{
	clusters.ErrNoHostCluster:  "not_configured",
	clusters.ErrNoBaseDomain:   "not_configured",
	clusters.ErrNoFreeNodePort: "no_node_port",
	clusters.ErrPodPoolFull:    "no_pod_network",
}
