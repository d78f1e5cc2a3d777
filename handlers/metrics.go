package handlers

import (
	"net/http"
	"runtime"
	"strconv"
	"time"

	"github.com/labstack/echo/v4"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// httpMetrics records request counts and latency by route template (never
// the raw path, which would make a series per id). Every label is bounded:
// anyone can send any method and path, and each new value would be a new
// series kept for the life of the process.
type httpMetrics struct {
	duration *prometheus.HistogramVec
	// routes are the registered route templates; set once the routes are.
	routes map[string]bool
}

// Label values for what the server does not know.
const (
	otherMethod    = "OTHER"
	unmatchedRoute = "unmatched"
)

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

// knowRoutes records the route templates the server has.
func (m *httpMetrics) knowRoutes(routes []*echo.Route) {
	m.routes = make(map[string]bool, len(routes))
	for _, r := range routes {
		m.routes[r.Path] = true
	}
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
		m.duration.WithLabelValues(methodLabel(c.Request().Method), m.routeLabel(c.Path()), strconv.Itoa(status)).Observe(time.Since(start).Seconds())
		return err
	}
}

// routeLabel is the route template, or one value for paths no route
// matched (Echo names those after the nearest node of its routing tree).
func (m *httpMetrics) routeLabel(path string) string {
	if m.routes[path] {
		return path
	}
	return unmatchedRoute
}

// methodLabel is the method when it is a standard one, else one value.
func methodLabel(method string) string {
	switch method {
	case http.MethodGet, http.MethodHead, http.MethodPost, http.MethodPut, http.MethodPatch,
		http.MethodDelete, http.MethodOptions, http.MethodConnect, http.MethodTrace:
		return method
	}
	return otherMethod
}

// BuildInfo is the kubebyon_build_info gauge, always 1: its labels say
// which build a process runs (the version it was built with, and Go's), so
// dashboards can tell the versions apart during a rolling upgrade.
func BuildInfo(version string) prometheus.Collector {
	g := prometheus.NewGauge(prometheus.GaugeOpts{
		Name:        "kubebyon_build_info",
		Help:        "The build this process runs, in its labels; always 1.",
		ConstLabels: prometheus.Labels{"version": version, "goversion": runtime.Version()},
	})
	g.Set(1)
	return g
}

func (h *Handlers) showMetrics(c echo.Context) error {
	promhttp.HandlerFor(h.Gatherer, promhttp.HandlerOpts{}).ServeHTTP(c.Response(), c.Request())
	return nil
}
