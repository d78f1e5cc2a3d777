package handlers

import (
	"context"
	"crypto/rand"
	"crypto/subtle"
	"fmt"
	"net"
	"net/http"
	"time"

	"github.com/labstack/echo/v4"
)

// contentSecurityPolicy allows only our own scripts and styles: no inline
// script anywhere (htmx's inline indicator styles are turned off in the
// layout), and no framing.
const contentSecurityPolicy = "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; " +
	"font-src 'self'; connect-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'self'; object-src 'none'"

// securityHeaders sets the headers every response carries; HSTS only when
// the platform is served over https.
func securityHeaders(https bool) echo.MiddlewareFunc {
	return func(next echo.HandlerFunc) echo.HandlerFunc {
		return func(c echo.Context) error {
			h := c.Response().Header()
			h.Set("Content-Security-Policy", contentSecurityPolicy)
			h.Set("X-Content-Type-Options", "nosniff")
			h.Set("X-Frame-Options", "DENY")
			h.Set("Referrer-Policy", "strict-origin-when-cross-origin")
			h.Set("Cross-Origin-Opener-Policy", "same-origin")
			h.Set("Permissions-Policy", "camera=(), microphone=(), geolocation=()")
			if https {
				h.Set("Strict-Transport-Security", "max-age=31536000; includeSubDomains")
			}
			return next(c)
		}
	}
}

// sessionCSRF is the session key of the browser's CSRF token.
const sessionCSRF = "csrf"

// csrf checks the token of every state-changing browser request: a form's
// _csrf field, or the X-CSRF-Token header htmx sends. The token lives in the
// server-side session (a cookie could be set by an attacker who controls a
// sibling domain or a plain-http page), is made on the first page a browser
// loads, and is replaced at sign-in (renewSession). (The JSON API does not
// pass through it: it authenticates with bearer keys, never with cookies.)
func (h *Handlers) csrf(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		ctx := c.Request().Context()
		want := h.sessions.GetString(ctx, sessionCSRF)
		switch c.Request().Method {
		case http.MethodGet, http.MethodHead, http.MethodOptions, http.MethodTrace:
			if want == "" {
				h.sessions.Put(ctx, sessionCSRF, rand.Text())
			}
			return next(c)
		}
		got := c.Request().Header.Get("X-CSRF-Token")
		if got == "" {
			got = c.FormValue("_csrf")
		}
		if want == "" || subtle.ConstantTimeCompare([]byte(got), []byte(want)) != 1 {
			return echo.NewHTTPError(http.StatusForbidden, "ErrCSRF")
		}
		return next(c)
	}
}

// renewSession gives the browser a new session token and a new CSRF token,
// when who it is changes (sign-in, a new password): neither a token planted
// before nor one seen before works after. The session then lasts the
// lifetime the admin settings say, from now.
func (h *Handlers) renewSession(ctx context.Context) error {
	if err := h.sessions.RenewToken(ctx); err != nil {
		return fmt.Errorf("renew session token: %w", err)
	}
	h.sessions.SetDeadline(ctx, time.Now().Add(h.Branding.Cached().SessionLifetime))
	h.sessions.Put(ctx, sessionCSRF, rand.Text())
	return nil
}

// ipExtractor finds the client's address: the connection's, unless it
// comes from a trusted proxy, whose X-Forwarded-For is then read.
func ipExtractor(trusted []*net.IPNet) echo.IPExtractor {
	if len(trusted) == 0 {
		return echo.ExtractIPDirect()
	}
	opts := []echo.TrustOption{echo.TrustLoopback(false), echo.TrustLinkLocal(false), echo.TrustPrivateNet(false)}
	for _, n := range trusted {
		opts = append(opts, echo.TrustIPRange(n))
	}
	return echo.ExtractIPFromXFFHeader(opts...)
}
