package handlers

import (
	"context"
	"encoding/json"
	"errors"
	"math"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/labstack/echo/v4"
	admissionv1 "k8s.io/api/admission/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubebyon/kubebyon/internal/locale"
	"github.com/kubebyon/kubebyon/internal/nodequota"
	"github.com/kubebyon/kubebyon/internal/ratelimit"
	"github.com/kubebyon/kubebyon/queries"
	"github.com/kubebyon/kubebyon/views"
)

// isWebhook reports whether the request is a virtual apiserver's call to
// a webhook, which authenticates with the key in its URL, not a session.
func isWebhook(c echo.Context) bool {
	return strings.HasPrefix(c.Request().URL.Path, "/webhooks/")
}

// nodeQuotaView is the node quota panel of a cluster of the user's: the
// platform enforces their plan's nodes per cluster in every ready
// cluster, and they change it by changing plan.
func nodeQuotaView(ctx context.Context, plan queries.Plan, enabled bool) views.NodeQuota {
	name, _ := planText(plan, locale.Lang(ctx) == locale.SimplifiedChinese.String())
	return views.NodeQuota{Enabled: enabled, Plan: name, Max: plan.MaxNodesPerCluster}
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
	if limited, err := h.nodeQuotaLimited(c, id); limited || err != nil {
		return err
	}
	var review admissionv1.AdmissionReview
	if err := json.NewDecoder(c.Request().Body).Decode(&review); err != nil || review.Request == nil {
		return c.JSON(http.StatusBadRequest, apiError{Error: apiErrorBody{Code: "bad_request", Message: locale.T(c.Request().Context(), "ErrNodeQuotaBadReview")}})
	}
	ctx := c.Request().Context()
	d, err := h.NodeQuota.Review(ctx, id, c.Param("key"), review.Request)
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

// nodeQuotaLimited counts a call to the cluster's webhook and answers 429
// when it is over the limit. The limit counts before the key is checked,
// so that no flood reaches the cluster or the host; whoever floods a
// cluster's webhook can only make its quota let Nodes in for the rest of
// the minute, as the configuration's failure policy Ignore admits a Node
// when the webhook fails, which is the trade the quota makes anyway (it
// is a plan limit, not a security boundary).
func (h *Handlers) nodeQuotaLimited(c echo.Context, clusterID int64) (bool, error) {
	ctx := c.Request().Context()
	d, err := h.limits.Hit(ctx, ratelimit.NodeQuotaReviewsPerCluster, strconv.FormatInt(clusterID, 10), time.Now())
	if err != nil {
		return true, err
	}
	if d.Allowed {
		return false, nil
	}
	c.Response().Header().Set("Retry-After", strconv.Itoa(int(math.Ceil(d.RetryAfter.Seconds()))))
	return true, c.JSON(http.StatusTooManyRequests, apiError{Error: apiErrorBody{Code: "too_many_requests", Message: locale.T(ctx, "ErrNodeQuotaRateLimited")}})
}
