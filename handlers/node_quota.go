package handlers

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"

	"github.com/labstack/echo/v4"
	admissionv1 "k8s.io/api/admission/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubebyon/kubebyon/clusters"
	"github.com/kubebyon/kubebyon/jobs"
	"github.com/kubebyon/kubebyon/locale"
	"github.com/kubebyon/kubebyon/nodequota"
)

func (h *Handlers) nodeQuotaRoutes(e *echo.Echo) {
	e.POST("/clusters/:id/node-quota", h.setNodeQuota, h.requireUser)
	e.POST(jobs.NodeQuotaWebhookPath+":id/:key", h.reviewNodeQuota)
}

// isWebhook reports whether the request is a virtual apiserver's call to
// a webhook, which authenticates with the key in its URL, not a session.
func isWebhook(c echo.Context) bool {
	return strings.HasPrefix(c.Request().URL.Path, "/webhooks/")
}

func (h *Handlers) nodeQuota() *nodequota.Service {
	return &nodequota.Service{Pool: h.Pool, River: h.River, Box: h.Box, Virtual: h.Clusters.VirtualConfig}
}

// setNodeQuota switches the cluster's node quota; the webhook
// configuration follows in the background.
func (h *Handlers) setNodeQuota(c echo.Context) error {
	cl, err := h.ownCluster(c)
	if err != nil {
		return err
	}
	enabled := c.FormValue("enabled") == "on"
	_, err = h.nodeQuota().SetEnabled(c.Request().Context(), cl, enabled, actor(c))
	if errors.Is(err, clusters.ErrDeleting) {
		h.flashError(c, clusters.ErrDeleting.Error())
		return redirect(c, fmt.Sprintf("/clusters/%d", cl.ID))
	}
	if err != nil {
		return err
	}
	if enabled {
		h.flash(c, "FlashNodeQuotaEnabled")
	} else {
		h.flash(c, "FlashNodeQuotaDisabled")
	}
	return redirect(c, fmt.Sprintf("/clusters/%d/nodes", cl.ID))
}

// reviewNodeQuota answers a virtual apiserver's AdmissionReview for a
// Node. A wrong key or cluster is 403, which the apiserver counts as a
// webhook failure, not as an answer.
func (h *Handlers) reviewNodeQuota(c echo.Context) error {
	forbidden := func() error {
		return c.JSON(http.StatusForbidden, apiError{Error: apiErrorBody{Code: "forbidden", Message: locale.T(c.Request().Context(), "ErrNodeQuotaForbidden")}})
	}
	id, err := strconv.ParseInt(c.Param("id"), 10, 64)
	if err != nil {
		return forbidden()
	}
	var review admissionv1.AdmissionReview
	if err := json.NewDecoder(c.Request().Body).Decode(&review); err != nil || review.Request == nil {
		return c.JSON(http.StatusBadRequest, apiError{Error: apiErrorBody{Code: "bad_request", Message: locale.T(c.Request().Context(), "ErrNodeQuotaBadReview")}})
	}
	ctx := c.Request().Context()
	d, err := h.nodeQuota().Review(ctx, id, c.Param("key"), review.Request)
	if errors.Is(err, nodequota.ErrForbidden) {
		return forbidden()
	}
	if err != nil {
		return err
	}
	resp := &admissionv1.AdmissionResponse{UID: review.Request.UID, Allowed: d.Allowed}
	if !d.Allowed {
		resp.Result = &metav1.Status{
			Status: metav1.StatusFailure, Code: http.StatusForbidden, Reason: metav1.StatusReasonForbidden,
			Message: locale.T(ctx, "NodeQuotaExceeded", map[string]any{"Limit": d.Limit}),
		}
	}
	return c.JSON(http.StatusOK, admissionv1.AdmissionReview{
		TypeMeta: metav1.TypeMeta{APIVersion: admissionv1.SchemeGroupVersion.String(), Kind: "AdmissionReview"},
		Response: resp,
	})
}
