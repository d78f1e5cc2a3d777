package handlers

import (
	"errors"
	"fmt"
	"math"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/kubebyon/kubebyon/internal/clusters"
	"github.com/kubebyon/kubebyon/internal/metrics"
	"github.com/kubebyon/kubebyon/views"
)

// showAdminClusterMetricsJSON is any cluster's series over ?range=, for
// the admin page's charts and the admin API; 404 for a cluster that does
// not exist.
func (h *Handlers) showAdminClusterMetricsJSON(c echo.Context) error {
	c.Response().Header().Set("Cache-Control", "no-store")
	id, err := clusterIDParam(c)
	if err != nil {
		return err
	}
	r, err := metricsRangeParam(c)
	if err != nil {
		return metricsRangeJSON(c)
	}
	s, err := h.ClusterMetrics.AdminSeries(c.Request().Context(), id, r, time.Now())
	if errors.Is(err, clusters.ErrNotFound) {
		return errClusterNotFound
	}
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, withEmptyColumns(s))
}

var metricsSettingsFields = []string{
	metrics.FieldInterval, metrics.FieldRawRetention, metrics.FieldFiveMinRetention, metrics.FieldHourlyRetention,
	metrics.FieldAlertErrorRate, metrics.FieldAlertLatency,
}

// showAdminMetricsPage is GET /admin/metrics: the platform overview and
// the settings.
func (h *Handlers) showAdminMetricsPage(c echo.Context) error {
	st, err := h.ClusterMetrics.Settings(c.Request().Context())
	if err != nil {
		return err
	}
	f := views.NewForm()
	f.Values = map[string]string{
		metrics.FieldInterval: strconv.Itoa(st.IntervalSeconds), metrics.FieldRawRetention: strconv.Itoa(st.RawRetentionHours),
		metrics.FieldFiveMinRetention: strconv.Itoa(st.FiveMinuteRetentionDays), metrics.FieldHourlyRetention: strconv.Itoa(st.HourlyRetentionDays),
		metrics.FieldAlertErrorRate: strconv.FormatFloat(st.AlertErrorRate, 'f', -1, 64), metrics.FieldAlertLatency: strconv.Itoa(st.AlertLatencyP99Ms),
	}
	h.viewAsAPICall(c, "adminGetMetricsSettings", nil)
	return h.renderAdminMetrics(c, http.StatusOK, f)
}

// Spans and sizes of the overview.
const (
	overviewRecent   = 5 * time.Minute
	overviewJoinDays = 14
	overviewClusters = 10
)

// renderAdminMetrics shows the overview with f, the settings form.
func (h *Handlers) renderAdminMetrics(c echo.Context, status int, f views.Form) error {
	ctx := c.Request().Context()
	m := views.AdminMetrics{Settings: f, Store: h.ClusterMetrics.Store()}
	now := time.Now().UTC()
	o, err := h.ClusterMetrics.Overview(ctx, now.Truncate(24*time.Hour).AddDate(0, 0, -(overviewJoinDays-1)))
	if err != nil {
		return err
	}
	for _, r := range o.Clusters {
		m.Clusters = append(m.Clusters, views.AdminMetricsCount{Label: r.Status, Count: r.Clusters})
	}
	m.NodesReady, m.Nodes = o.Nodes.Ready, o.Nodes.Total
	for _, j := range o.Joins {
		m.Joins = append(m.Joins, views.AdminMetricsCount{Label: j.Day.Time.UTC().Format(time.DateOnly), Count: j.Joins})
	}
	since := now.Add(-overviewRecent)
	busiest, err := h.ClusterMetrics.Top(ctx, metrics.TopRequests, since, now, overviewClusters)
	if err != nil {
		return fmt.Errorf("busiest control planes: %w", err)
	}
	for _, b := range busiest {
		m.Busiest = append(m.Busiest, overviewCluster(b))
	}
	erroring, err := h.ClusterMetrics.Top(ctx, metrics.TopErrors, since, now, overviewClusters)
	if err != nil {
		return fmt.Errorf("control planes with errors: %w", err)
	}
	for _, e := range erroring {
		m.Erroring = append(m.Erroring, overviewCluster(e))
	}
	return render(c, status, views.AdminMetricsPage(m))
}

// overviewCluster is a control plane of the overview's lists.
func overviewCluster(r metrics.TopClusterInfo) views.AdminMetricsCluster {
	return views.AdminMetricsCluster{
		ID: r.ClusterID, Name: r.Name, OwnerID: r.OwnerID, OwnerEmail: r.OwnerEmail,
		Requests: rate(r.Requests), Errors: rate(r.Errors), P99Milli: rate(r.P99 * 1000), Alerted: r.Alerted,
	}
}

// rate is a figure as the overview shows it: two decimals at most.
func rate(f float64) string { return strconv.FormatFloat(math.Round(f*100)/100, 'f', -1, 64) }

// saveMetricsSettings is POST /admin/metrics/settings. A number that is
// not one reads as -1, which Validate refuses with that field's message.
func (h *Handlers) saveMetricsSettings(c echo.Context) error {
	f := formFrom(c, metricsSettingsFields...)
	number := func(name string) int {
		f.Values[name] = strings.TrimSpace(f.Values[name])
		n, err := strconv.Atoi(f.Values[name])
		if err != nil {
			return -1
		}
		return n
	}
	st := metrics.Settings{
		IntervalSeconds: number(metrics.FieldInterval), RawRetentionHours: number(metrics.FieldRawRetention),
		FiveMinuteRetentionDays: number(metrics.FieldFiveMinRetention), HourlyRetentionDays: number(metrics.FieldHourlyRetention),
		AlertLatencyP99Ms: number(metrics.FieldAlertLatency), AlertErrorRate: -1,
	}
	f.Values[metrics.FieldAlertErrorRate] = strings.TrimSpace(f.Values[metrics.FieldAlertErrorRate])
	if r, err := strconv.ParseFloat(f.Values[metrics.FieldAlertErrorRate], 64); err == nil && !math.IsNaN(r) {
		st.AlertErrorRate = r
	}
	if err := h.ClusterMetrics.SaveSettings(c.Request().Context(), st, actor(c)); err != nil {
		return adminSaveError(c, err, &f, "ErrAdminMetricsNotSaved", nil, func(status int) error {
			return h.renderAdminMetrics(c, status, f)
		})
	}
	h.flash(c, "FlashAdminMetricsSaved")
	return redirect(c, "/admin/metrics")
}
