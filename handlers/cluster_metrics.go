package handlers

import (
	"errors"
	"net/http"
	"net/url"
	"strconv"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/kubebyon/kubebyon/internal/clusters"
	"github.com/kubebyon/kubebyon/internal/locale"
	"github.com/kubebyon/kubebyon/internal/metrics"
	"github.com/kubebyon/kubebyon/queries"
	"github.com/kubebyon/kubebyon/views"
)

// metricsTableRows is how many of a range's latest points the page's
// table shows: an hour of raw samples; the charts show them all.
const metricsTableRows = 60

// errMetricsRange answers a range the charts do not offer.
var errMetricsRange = echo.NewHTTPError(http.StatusUnprocessableEntity, "ErrMetricsRange")

// showClusterMetricsPage is a cluster's metrics over ?range= (an hour
// when absent): the page, or for htmx (a range switch) its body.
func (h *Handlers) showClusterMetricsPage(c echo.Context) error {
	cl, err := h.memberCluster(c)
	if err != nil {
		return err
	}
	s, err := h.ownSeries(c)
	if err != nil {
		return err
	}
	m := clusterMetricsView(cl, s, "")
	c.Response().Header().Set("Cache-Control", "no-store")
	h.viewAsAPICall(c, "getClusterMetrics", url.Values{"range": {string(s.Range)}}, strconv.FormatInt(cl.ID, 10))
	return renderPageOrFragment(c, views.ClusterMetricsPage(m), views.ClusterMetricsBody(m))
}

// showClusterMetricsJSON is a cluster's series over ?range= as JSON: for
// the page's charts (with the session) and for the API (with a key).
func (h *Handlers) showClusterMetricsJSON(c echo.Context) error {
	c.Response().Header().Set("Cache-Control", "no-store")
	s, err := h.ownSeries(c)
	if errors.Is(err, errMetricsRange) {
		// JSON on both routes: the page's script reads it too.
		return metricsRangeJSON(c)
	}
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, withEmptyColumns(s))
}

// ownSeries is the signed-in user's cluster's history over the range the
// query names (metrics.Range1h when it names none).
func (h *Handlers) ownSeries(c echo.Context) (metrics.Series, error) {
	who, err := h.acting(c)
	if err != nil {
		return metrics.Series{}, err
	}
	id, err := clusterIDParam(c)
	if err != nil {
		return metrics.Series{}, err
	}
	r, err := metricsRangeParam(c)
	if err != nil {
		return metrics.Series{}, err
	}
	s, err := h.ClusterMetrics.OwnSeries(c.Request().Context(), who, id, r, time.Now())
	if errors.Is(err, clusters.ErrNotFound) {
		return s, h.clusterNotFound(c, who, id)
	}
	return s, err
}

// withEmptyColumns gives a series without points empty arrays, not
// nulls: clients index every column alike.
func withEmptyColumns(s metrics.Series) metrics.Series {
	if len(s.Time) > 0 {
		return s
	}
	s.Time = []int64{}
	s.ReadRate, s.WriteRate, s.WatchRate, s.ErrorRate = []*float64{}, []*float64{}, []*float64{}, []*float64{}
	s.LatencyP50, s.LatencyP99, s.Inflight = []*float64{}, []*float64{}, []*float64{}
	s.Objects, s.Watches = []*int64{}, []*int64{}
	s.NodesReady, s.NodesTotal, s.PodsRunning, s.PodsTotal = []*int32{}, []*int32{}, []*int32{}, []*int32{}
	return s
}

// metricsRows are the series' latest n points, newest first.
func metricsRows(s metrics.Series, n int) []views.MetricsRow {
	n = min(n, len(s.Time))
	rows := make([]views.MetricsRow, n)
	for i := range rows {
		j := len(s.Time) - 1 - i
		rows[i] = views.MetricsRow{
			Time: time.Unix(s.Time[j], 0),
			Read: s.ReadRate[j], Write: s.WriteRate[j], Watch: s.WatchRate[j], Errors: s.ErrorRate[j],
			P50: s.LatencyP50[j], P99: s.LatencyP99[j], Objects: s.Objects[j],
			NodesReady: s.NodesReady[j], NodesTotal: s.NodesTotal[j],
		}
	}
	return rows
}

// metricsRangeParam is the range ?range= names (metrics.Range1h when it
// names none), or errMetricsRange.
func metricsRangeParam(c echo.Context) (metrics.Range, error) {
	q := c.QueryParam("range")
	if q == "" {
		return metrics.Range1h, nil
	}
	r, ok := metrics.ParseRange(q)
	if !ok {
		return "", errMetricsRange
	}
	return r, nil
}

// metricsRangeJSON answers a bad range with the API's 422 body.
func metricsRangeJSON(c echo.Context) error {
	msg := locale.T(c.Request().Context(), "ErrMetricsRange")
	return c.JSON(http.StatusUnprocessableEntity, apiInvalid{Error: apiInvalidBody{
		Code: "invalid", Message: msg, Fields: map[string]string{"range": msg},
	}})
}

// clusterMetricsView is the metrics of a cluster over s's range, under
// base (the cluster's own pages when empty).
func clusterMetricsView(cl queries.Cluster, s metrics.Series, base string) views.ClusterMetrics {
	m := views.ClusterMetrics{
		Cluster: clusterView(cl), Range: string(s.Range), Ranges: make([]string, len(metrics.Ranges)),
		Points: len(s.Time), Rows: metricsRows(s, metricsTableRows), Base: base,
	}
	for i, r := range metrics.Ranges {
		m.Ranges[i] = string(r)
	}
	return m
}
