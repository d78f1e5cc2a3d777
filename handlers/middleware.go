package handlers

import (
	"fmt"
	"log/slog"
	"net/http"
	"runtime/debug"
	"strings"

	"github.com/labstack/echo/v4"
	"github.com/labstack/echo/v4/middleware"

	"github.com/kubebyon/kubebyon/internal/nodequota"
)

// logRequests writes one structured line per request.
func (h *Handlers) logRequests() echo.MiddlewareFunc {
	return middleware.RequestLoggerWithConfig(middleware.RequestLoggerConfig{
		LogStatus:    true,
		LogMethod:    true,
		LogURIPath:   true,
		LogRoutePath: true,
		LogLatency:   true,
		LogRequestID: true,
		LogRemoteIP:  true,
		LogError:     true,
		HandleError:  true,
		LogValuesFunc: func(c echo.Context, v middleware.RequestLoggerValues) error {
			level := slog.LevelInfo
			if v.Status >= 500 {
				level = slog.LevelError
			}
			h.Logger.LogAttrs(c.Request().Context(), level, "http request",
				slog.String("method", v.Method),
				slog.String("path", redactPath(v.URIPath)),
				slog.String("route", v.RoutePath),
				slog.Int("status", v.Status),
				slog.Duration("latency", v.Latency),
				slog.String("request_id", v.RequestID),
				slog.String("remote_ip", v.RemoteIP),
			)
			return nil
		},
	})
}

// recoverPanics turns a panic into a 500 and logs its stack; the user sees
// the styled error page with the request ID.
func (h *Handlers) recoverPanics() echo.MiddlewareFunc {
	return func(next echo.HandlerFunc) echo.HandlerFunc {
		return func(c echo.Context) (err error) {
			defer func() {
				if r := recover(); r != nil {
					if r == http.ErrAbortHandler {
						panic(r)
					}
					h.Logger.ErrorContext(c.Request().Context(), "panic in handler",
						"panic", fmt.Sprint(r), "stack", string(debug.Stack()),
						"request_id", c.Response().Header().Get(echo.HeaderXRequestID))
					err = echo.NewHTTPError(http.StatusInternalServerError)
				}
			}()
			return next(c)
		}
	}
}

// secretPrefixes are the paths whose next segment is a secret: a join
// token is a credential for the virtual cluster, an organization
// invitation's token makes its holder a member.
var secretPrefixes = []string{"/join/", "/orgs/invitations/"}

// redactPath hides the secret in paths that carry one (secretPrefixes,
// and the key of a node quota webhook, its last segment), so that it does
// not reach the logs.
func redactPath(p string) string {
	if rest, ok := strings.CutPrefix(p, nodequota.WebhookPath); ok {
		id, _, _ := strings.Cut(rest, "/")
		return nodequota.WebhookPath + id + "/[redacted]"
	}
	for _, prefix := range secretPrefixes {
		rest, ok := strings.CutPrefix(p, prefix)
		if !ok {
			continue
		}
		_, tail, _ := strings.Cut(rest, "/")
		if tail == "" {
			return prefix + "[redacted]"
		}
		return prefix + "[redacted]/" + tail
	}
	return p
}
