package handlers

import (
	"strconv"
	"time"

	"github.com/labstack/echo/v4"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// httpMetrics records request counts and latency by route template (never
// the raw path, which would make a series per id).
type httpMetrics struct {
	duration *prometheus.HistogramVec
}

func newHTTPMetrics(reg prometheus.Registerer) *httpMetrics {
	m := &httpMetrics{
		duration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "kubebyon_http_request_duration_seconds",
			Help:    "HTTP requests served, by method, route and status code.",
			Buckets: prometheus.DefBuckets,
		}, []string{"method", "route", "code"}),
	}
	reg.MustRegister(m.duration)
	return m
}

func (m *httpMetrics) middleware(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		start := time.Now()
		err := next(c)
		status := c.Response().Status
		if err != nil {
			// The error handler runs after us and sets the real status.
			c.Error(err)
			err = nil
			status = c.Response().Status
		}
		route := c.Path()
		if route == "" {
			route = "unmatched"
		}
		m.duration.WithLabelValues(c.Request().Method, route, strconv.Itoa(status)).Observe(time.Since(start).Seconds())
		return err
	}
}

func (h *Handlers) showMetrics(c echo.Context) error {
	promhttp.HandlerFor(h.Gatherer, promhttp.HandlerOpts{}).ServeHTTP(c.Response(), c.Request())
	return nil
}
