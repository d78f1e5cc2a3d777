package handlers

import (
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/kubebyon/kubebyon/internal/input"
	"github.com/kubebyon/kubebyon/internal/nodes"
	"github.com/kubebyon/kubebyon/views"
)

func (h *Handlers) cordonNode(c echo.Context) error   { return h.setCordon(c, true) }
func (h *Handlers) uncordonNode(c echo.Context) error { return h.setCordon(c, false) }

func (h *Handlers) setCordon(c echo.Context, desired bool) error {
	cl, err := h.memberReadyCluster(c)
	if err != nil {
		return err
	}
	name := c.Param("name")
	if err := h.Nodes.Cordon(c.Request().Context(), cl, name, desired, actor(c)); err != nil {
		return h.nodeActionError(c, cl.ID, name, err)
	}
	if desired {
		h.flash(c, "FlashNodeCordoned")
	} else {
		h.flash(c, "FlashNodeUncordoned")
	}
	return redirect(c, nodePath(cl.ID, name))
}

// nodeIngressForm is the node's managed ingress form as the node is.
func nodeIngressForm(d nodes.Detail) views.Form {
	f := views.NewForm()
	if d.IngressNode {
		f.Values["ingress"] = "on"
	}
	f.Values["public_address"] = d.PublicAddress
	return f
}

// setNodeIngress is POST /clusters/:id/nodes/:name/ingress: the node is
// an ingress node of the cluster's managed ingress (ingress=on) or not,
// with the public address its host names' records get.
func (h *Handlers) setNodeIngress(c echo.Context) error {
	cl, err := h.memberReadyCluster(c)
	if err != nil {
		return err
	}
	name := c.Param("name")
	f := formFrom(c, "ingress", "public_address")
	err = h.Nodes.SetIngress(c.Request().Context(), cl, name, f.Value("ingress") == "on", f.Value("public_address"), actor(c))
	var fe input.Errors
	if errors.As(err, &fe) {
		ctx := c.Request().Context()
		d, derr := h.Nodes.Show(ctx, cl, name)
		if derr != nil {
			return h.nodeActionError(c, cl.ID, name, derr)
		}
		for k, v := range fe {
			f.Errors[k] = v
		}
		f.Error = "ErrNodeIngressNotSaved"
		return render(c, http.StatusUnprocessableEntity, views.NodePage(views.NodeDetail{Cluster: clusterView(cl), Live: h.nodeLiveView(cl, d, time.Now()), Ingress: f}))
	}
	if err != nil {
		return h.nodeActionError(c, cl.ID, name, err)
	}
	h.flash(c, "FlashNodeIngressSaved")
	return redirect(c, nodePath(cl.ID, name))
}

func nodePath(clusterID int64, name string) string {
	return fmt.Sprintf("/clusters/%d/nodes/%s", clusterID, url.PathEscape(name))
}

// drainFormDefaults are kubectl drain's usual choices for a node that is
// being taken out: DaemonSet pods stay, each pod keeps its grace period.
func drainFormDefaults(withDelete bool) views.Form {
	f := views.NewForm()
	f.Values["ignore_daemonsets"] = "on"
	f.Values["grace_period"] = "-1"
	f.Values["timeout"] = strconv.Itoa(nodes.DefaultTimeoutSeconds)
	if withDelete {
		f.Values["drain_first"] = "on"
	}
	return f
}

func (h *Handlers) showDrainNodePage(c echo.Context) error  { return h.showNodeAction(c, false) }
func (h *Handlers) showDeleteNodePage(c echo.Context) error { return h.showNodeAction(c, true) }

func (h *Handlers) showNodeAction(c echo.Context, withDelete bool) error {
	cl, err := h.memberReadyCluster(c)
	if err != nil {
		return err
	}
	name := c.Param("name")
	// The node must be there; while its control plane does not answer,
	// the page shows all the same and says so (the action then waits).
	d, err := h.Nodes.Show(c.Request().Context(), cl, name)
	unavailable := d.Recorded || errors.Is(err, nodes.ErrUnreachable)
	if err != nil && !unavailable {
		return nodeError(err)
	}
	return render(c, http.StatusOK, views.NodeActionPage(views.NodeActionForm{
		Cluster: clusterView(cl), Node: name, Delete: withDelete, Form: drainFormDefaults(withDelete),
		Unavailable: unavailable,
	}))
}

// drainForm reads the drain options of the form; ok is false when a
// number is not one.
func drainForm(c echo.Context) (views.Form, nodes.DrainOptions, bool) {
	f := views.NewForm()
	for _, k := range []string{"ignore_daemonsets", "delete_emptydir_data", "force", "drain_first", "grace_period", "timeout"} {
		f.Values[k] = strings.TrimSpace(c.FormValue(k))
	}
	opts := nodes.DrainOptions{
		IgnoreDaemonSets: f.Values["ignore_daemonsets"] == "on", DeleteEmptyDirData: f.Values["delete_emptydir_data"] == "on",
		Force: f.Values["force"] == "on",
	}
	grace, err := strconv.Atoi(f.Values["grace_period"])
	if err != nil || grace < -1 || grace > nodes.MaxGracePeriodSeconds {
		f.Errors["grace_period"] = "ErrNodeGracePeriod"
	}
	timeout, err := strconv.Atoi(f.Values["timeout"])
	if err != nil || timeout < 1 || timeout > nodes.MaxTimeoutSeconds {
		f.Errors["timeout"] = "ErrNodeTimeout"
	}
	opts.GracePeriodSeconds, opts.TimeoutSeconds = grace, timeout
	return f, opts, len(f.Errors) == 0
}

func (h *Handlers) drainNode(c echo.Context) error  { return h.startNodeOperation(c, false) }
func (h *Handlers) deleteNode(c echo.Context) error { return h.startNodeOperation(c, true) }

// startNodeOperation starts a drain, or a deletion (drained first when the
// box is checked), and shows its progress: on the node page for a drain,
// on the operation's own page for a deletion, as the node will be gone.
func (h *Handlers) startNodeOperation(c echo.Context, withDelete bool) error {
	cl, err := h.memberReadyCluster(c)
	if err != nil {
		return err
	}
	name := c.Param("name")
	f, opts, ok := drainForm(c)
	if !ok {
		return render(c, http.StatusUnprocessableEntity, views.NodeActionPage(views.NodeActionForm{
			Cluster: clusterView(cl), Node: name, Delete: withDelete, Form: f,
		}))
	}
	ctx := c.Request().Context()
	if !withDelete {
		_, err := h.Nodes.Drain(ctx, cl, name, opts, actor(c))
		if err != nil {
			return h.nodeActionError(c, cl.ID, name, err)
		}
		h.flash(c, "FlashNodeDrainStarted")
		return redirect(c, nodePath(cl.ID, name))
	}
	var drainFirst *nodes.DrainOptions
	if f.Values["drain_first"] == "on" {
		drainFirst = &opts
	}
	op, err := h.Nodes.Delete(ctx, cl, name, drainFirst, actor(c))
	if err != nil {
		return h.nodeActionError(c, cl.ID, name, err)
	}
	h.flash(c, "FlashNodeDeleteStarted")
	return redirect(c, nodePath(cl.ID, name)+"/operations/"+strconv.FormatInt(op.ID, 10))
}

// nodeActionError shows an action on a node that could not be taken: one
// already running, or a control plane that did not answer in time, is a
// flash on the node page (which shows what the platform recorded).
func (h *Handlers) nodeActionError(c echo.Context, clusterID int64, name string, err error) error {
	switch {
	case errors.Is(err, nodes.ErrOperationBusy):
		h.flashError(c, nodes.ErrOperationBusy.Error())
		return redirect(c, nodePath(clusterID, name))
	case errors.Is(err, nodes.ErrUnreachable):
		h.Logger.WarnContext(c.Request().Context(), "node action", "cluster_id", clusterID, "node", name, "err", err)
		h.flashError(c, "LiveUnavailable")
		return redirect(c, nodePath(clusterID, name))
	}
	return nodeError(err)
}
