package handlers

import (
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strconv"

	"github.com/labstack/echo/v4"

	"github.com/kubebyon/kubebyon/internal/clusters"
	"github.com/kubebyon/kubebyon/internal/entitlements"
	"github.com/kubebyon/kubebyon/internal/settings"
	"github.com/kubebyon/kubebyon/queries"
	"github.com/kubebyon/kubebyon/views"
)

// clusterFormFields are the fields of the create and edit forms.
var clusterFormFields = []string{"name", "kubernetes_version", "public_access_mode", "description", "backend"}

// showNewClusterPage is the create form, for those who may create (403
// for a viewer, as the creation is).
func (h *Handlers) showNewClusterPage(c echo.Context) error {
	who, err := h.acting(c)
	if err != nil {
		return err
	}
	if err := h.Clusters.MayCreate(c.Request().Context(), who); errors.Is(err, clusters.ErrNotFound) {
		return echo.ErrNotFound
	} else if err != nil {
		return err
	}
	rt, err := h.Clusters.Runtime(c.Request().Context())
	if err != nil {
		return err
	}
	f := views.NewForm()
	if len(rt.AllowedVersions) > 0 {
		f.Values["kubernetes_version"] = rt.AllowedVersions[0]
	}
	f.Values["public_access_mode"] = rt.DefaultAccessMode
	return h.renderClusterForm(c, http.StatusOK, f, nil)
}

func (h *Handlers) createCluster(c echo.Context) error {
	ctx := c.Request().Context()
	who, err := h.acting(c)
	if err != nil {
		return err
	}
	f := formFrom(c, clusterFormFields...)
	cl, err := h.Clusters.Create(ctx, who, clusterInput(f), actor(c))
	if err != nil {
		return h.renderClusterFormError(c, f, nil, err)
	}
	h.flash(c, "FlashClusterCreated")
	return redirect(c, fmt.Sprintf("/clusters/%d", cl.ID))
}

func (h *Handlers) showEditClusterPage(c echo.Context) error {
	cl, err := h.memberCluster(c)
	if err != nil {
		return err
	}
	if cl.DeleteRequestedAt.Valid {
		h.flashError(c, clusters.ErrDeleting.Error())
		return redirect(c, fmt.Sprintf("/clusters/%d", cl.ID))
	}
	// A suspended cluster's Settings say why it cannot be changed, and
	// keep its Delete.
	f := views.NewForm()
	f.Values["kubernetes_version"] = cl.KubernetesVersion
	f.Values["public_access_mode"] = cl.PublicAccessMode
	f.Values["description"] = cl.Description
	return h.renderClusterForm(c, http.StatusOK, f, &cl)
}

func (h *Handlers) updateCluster(c echo.Context) error {
	cl, err := h.memberCluster(c)
	if err != nil {
		return err
	}
	who, err := h.acting(c)
	if err != nil {
		return err
	}
	f := formFrom(c, clusterFormFields...)
	updated, err := h.Clusters.Update(c.Request().Context(), who, cl.ID, clusterInput(f), actor(c))
	if errors.Is(err, clusters.ErrNotFound) {
		return echo.ErrNotFound
	}
	if err != nil {
		return h.renderClusterFormError(c, f, &cl, err)
	}
	h.flash(c, "FlashClusterUpdated")
	return redirect(c, fmt.Sprintf("/clusters/%d", updated.ID))
}

func clusterInput(f views.Form) clusters.Input {
	return clusters.Input{
		Name: f.Value("name"), Description: f.Value("description"),
		KubernetesVersion: f.Value("kubernetes_version"), PublicAccessMode: f.Value("public_access_mode"),
		Backend: f.Value("backend"),
	}
}

// renderClusterFormError shows the form again with what is wrong: 422 for
// the user's input and for what stops any cluster from being made, such as
// the plan's cap or a missing host cluster. Other errors are server errors.
func (h *Handlers) renderClusterFormError(c echo.Context, f views.Form, cl *queries.Cluster, err error) error {
	var (
		fe    clusters.FieldErrors
		limit *entitlements.LimitError
	)
	switch {
	case errors.As(err, &fe):
		for k, v := range fe {
			f.Errors[k] = v
		}
	case errors.Is(err, clusters.ErrDeleting), errors.Is(err, clusters.ErrSuspended):
		f.Error = err.Error()
	case errors.As(err, &limit):
		f.Error, f.ErrorData = limit.Error(), limit.Data()
	default:
		known := h.clusterBlocker(c, err)
		if known == nil {
			return err
		}
		f.Error = known.Error()
	}
	return h.renderClusterForm(c, http.StatusUnprocessableEntity, f, cl)
}

// clusterBlocker is what stops a cluster from being made or changed, if
// err is one of those: the platform's missing settings, no
// free NodePort, no free Pod network. Else nil.
func (h *Handlers) clusterBlocker(c echo.Context, err error) error {
	for _, known := range []error{
		clusters.ErrNoHostCluster, clusters.ErrNoBaseDomain, clusters.ErrNoFreeNodePort, clusters.ErrPodPoolFull,
	} {
		if !errors.Is(err, known) {
			continue
		}
		if known == clusters.ErrNoHostCluster && err != known {
			// A host cluster is configured but unusable: the log says why.
			h.Logger.WarnContext(c.Request().Context(), "host cluster unusable", "error", err)
		}
		return known
	}
	return nil
}

// renderClusterForm shows the create form, or the edit form of cl.
func (h *Handlers) renderClusterForm(c echo.Context, status int, f views.Form, cl *queries.Cluster) error {
	rt, err := h.Clusters.Runtime(c.Request().Context())
	if err != nil {
		return err
	}
	m := views.ClusterForm{Form: f, Versions: rt.AllowedVersions}
	backends := []string{}
	if cl == nil {
		who, err := h.acting(c)
		if err != nil {
			return err
		}
		if backends, err = h.Clusters.Backends(c.Request().Context(), who); err != nil {
			return err
		}
		if len(backends) > 1 {
			m.Backends = backends
			if f.Values["backend"] == "" {
				f.Values["backend"] = backends[0]
			}
		}
	} else {
		backends = []string{cl.Backend}
	}
	// A backend refused with no choice shown is said above the form.
	if len(m.Backends) == 0 && f.Errors["backend"] != "" {
		m.Form.Error = f.Errors["backend"]
	}
	// Private nodes need the licence: said where a vcluster is made.
	m.NoLicense = !rt.Licensed() && slices.Contains(backends, settings.BackendVCluster)
	if cl != nil {
		v := clusterView(*cl)
		m.Cluster = &v
		if cl.StaleNodeCleanupHours.Valid {
			m.StaleCleanupHours = strconv.Itoa(int(cl.StaleNodeCleanupHours.Int32))
		}
		// A version the admin has since withdrawn can still be kept.
		if !slices.Contains(m.Versions, cl.KubernetesVersion) {
			m.Versions = append(slices.Clone(m.Versions), cl.KubernetesVersion)
		}
	}
	return render(c, status, views.ClusterFormPage(m))
}
