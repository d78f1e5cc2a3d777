// Package handlers holds the HTTP routes and middleware. A handler parses
// the request, checks who is asking, calls a domain service or enqueues a
// job, then renders a view or redirects. Only the session store runs its
// own queries (it is scs's storage adapter).
package handlers

import (
	"context"
	"errors"
	"github.com/medama-io/go-useragent"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/alexedwards/scs/v2"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/labstack/echo/v4"
	"github.com/labstack/echo/v4/middleware"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/riverqueue/river"

	"github.com/kubebyon/kubebyon/internal/accounts"
	"github.com/kubebyon/kubebyon/internal/adminjobs"
	"github.com/kubebyon/kubebyon/internal/adminorgs"
	"github.com/kubebyon/kubebyon/internal/adminoverview"
	"github.com/kubebyon/kubebyon/internal/adminsettings"
	"github.com/kubebyon/kubebyon/internal/adminsignup"
	"github.com/kubebyon/kubebyon/internal/adminusers"
	"github.com/kubebyon/kubebyon/internal/apikeys"
	"github.com/kubebyon/kubebyon/internal/apispec"
	"github.com/kubebyon/kubebyon/internal/billing"
	"github.com/kubebyon/kubebyon/internal/branding"
	"github.com/kubebyon/kubebyon/internal/clusters"
	"github.com/kubebyon/kubebyon/internal/dnsrecords"
	"github.com/kubebyon/kubebyon/internal/edge"
	"github.com/kubebyon/kubebyon/internal/etag"
	"github.com/kubebyon/kubebyon/internal/idempotency"
	"github.com/kubebyon/kubebyon/internal/ingress"
	"github.com/kubebyon/kubebyon/internal/input"
	"github.com/kubebyon/kubebyon/internal/jointokens"
	"github.com/kubebyon/kubebyon/internal/livefeed"
	"github.com/kubebyon/kubebyon/internal/locale"
	"github.com/kubebyon/kubebyon/internal/mailsettings"
	"github.com/kubebyon/kubebyon/internal/metrics"
	"github.com/kubebyon/kubebyon/internal/nodequota"
	"github.com/kubebyon/kubebyon/internal/nodes"
	"github.com/kubebyon/kubebyon/internal/orgs"
	"github.com/kubebyon/kubebyon/internal/ratelimit"
	"github.com/kubebyon/kubebyon/internal/secrets"
	"github.com/kubebyon/kubebyon/internal/sessioncache"
	"github.com/kubebyon/kubebyon/internal/signinproviders"
	"github.com/kubebyon/kubebyon/internal/webhooks"
	"github.com/kubebyon/kubebyon/views"
)

// Deps are what the handlers need; all of it is passed in, nothing global.
type Deps struct {
	Pool    *pgxpool.Pool
	River   *river.Client[pgx.Tx]
	Logger  *slog.Logger
	Catalog *locale.Catalog
	// BaseURL is the platform's public URL (KUBEBYON_BASE_URL).
	BaseURL string
	// Metrics receives the HTTP metrics; Gatherer serves /metrics (on the
	// probes server, NewProbes, not on the public one).
	Metrics  prometheus.Registerer
	Gatherer prometheus.Gatherer
	// Version is the build's version ('kubebyon version'), shown in the
	// admin area's footer.
	Version string
	// Alive reports whether what the process itself runs (the embedded
	// PostgreSQL) is up, for /healthz; nil when there is nothing to check.
	Alive func() error
	// RequestTimeout bounds a request's context (default 30s), but a live
	// page's stream's, which StreamLifetime bounds (default 10 min).
	RequestTimeout time.Duration
	StreamLifetime time.Duration
	// Live tells the live pages' streams that a cluster changed; nil, or
	// not listening, refuses the streams and the pages poll.
	Live *livefeed.Feed
	// TrustedProxies are the networks whose X-Forwarded-For is believed
	// when finding a client's address (rate limits, audit).
	TrustedProxies []*net.IPNet
	// OAuth are the providers the environment configures, in button
	// order; SignIn's admin settings win over them, provider by provider.
	OAuth  []OAuthProvider
	SignIn *signinproviders.Service
	// Box seals the secrets among the platform settings (platform key).
	Box *secrets.Box
	// SessionCache keeps the signed-in sessions the pages read for a few
	// seconds; nil keeps none (each page reads its session).
	SessionCache *sessioncache.Cache

	// The domain services, each built once (by cmd) and shared by every
	// request.
	//
	// Accounts: sign-up, sign-in and the other account actions.
	Accounts *accounts.Service
	// Clusters: what users do with their clusters.
	Clusters *clusters.Service
	// Nodes: listing, cordoning, draining and deleting nodes.
	Nodes *nodes.Service
	// JoinTokens: tokens, the join script and its reports.
	JoinTokens *jointokens.Service
	// NodeQuota: the node quota webhook, which keeps clients of the
	// virtual clusters between calls (the platform switches the quota on).
	NodeQuota *nodequota.Service
	// Ingress: the managed ingress switch.
	Ingress *ingress.Service
	// APIKeys: the users' API keys.
	APIKeys *apikeys.Service
	// Edge: the edge tokens and the edges' reports; EdgeState: the routes
	// every edge should serve, which the edge config API waits on.
	Edge      *edge.Service
	EdgeState *edge.Watcher
	// EdgeRoutes: the routes the route agents keep.
	EdgeRoutes *edge.RoutesWatcher
	// DNS: the DNS settings, their check, and each cluster's record.
	DNS *dnsrecords.Service
	// AdminUsers, AdminOrgs and AdminSettings: the admin area.
	AdminUsers    *adminusers.Service
	AdminOrgs     *adminorgs.Service
	AdminSettings *adminsettings.Service
	// AdminOverview: the platform's figures for the admin overview.
	AdminOverview *adminoverview.Service
	// Mail: the mail server settings; also the platform's mail sender.
	Mail *mailsettings.Service
	// AdminSignUp: the sign-up policy and the invitations.
	AdminSignUp *adminsignup.Service
	// Billing: plans.
	Billing *billing.Service
	// Webhooks: the users' and the admins' notification channels.
	Webhooks *webhooks.Service
	// ClusterMetrics: the history of the clusters' control planes, for
	// the charts. (Metrics above is the platform's own HTTP metrics.)
	ClusterMetrics *metrics.Service
	// AdminJobs: River's jobs, queues and leader, for the admin area.
	AdminJobs *adminjobs.Service
	// Branding: the branding and session settings, kept in memory (New
	// makes one on Pool when nil).
	Branding *branding.Service
	// Orgs: the organizations and their members.
	Orgs *orgs.Service
}

// Handlers carries the dependencies of every route.
type Handlers struct {
	Deps
	sessions *scs.SessionManager
	// builtProviders keeps the sign-in providers built from SignIn.
	builtProviders builtProviders
	// limits counts the hits against the platform's rate limits;
	// joinLimiter counts the join endpoints' hits before PostgreSQL.
	limits *ratelimit.Store
	// userAgents names the browsers of the sessions list.
	userAgents  *useragent.Parser
	joinLimiter *ratelimit.Limiter
	// apiSpec is the API description as /api/v1/openapi.json serves it;
	// apiOps its operations, for the pages' "view as API call".
	apiSpec []byte
	apiOps  map[string]apispec.Operation
	// idempotency keeps the answers to API POSTs with an Idempotency-Key.
	idempotency *idempotency.Store
}

// bodyLimit caps every request body but the avatar upload's (avatarBodyLimit).
const bodyLimit = "1M"

// New builds the Echo server with every route and middleware.
func New(d Deps) *echo.Echo {
	if d.RequestTimeout == 0 {
		d.RequestTimeout = 30 * time.Second
	}
	if d.StreamLifetime == 0 {
		d.StreamLifetime = defaultStreamLifetime
	}
	if d.Branding == nil {
		d.Branding = &branding.Service{Pool: d.Pool, Logger: d.Logger}
	}
	limits := ratelimit.NewStore(d.Pool)
	spec, err := apispec.JSON()
	if err != nil {
		// Embedded and checked by the tests: a build that cannot read it
		// is broken.
		panic(err)
	}
	ops, err := apispec.Operations()
	if err != nil {
		panic(err)
	}
	h := &Handlers{
		Deps: d, limits: limits, userAgents: useragent.NewParser(), joinLimiter: limits.Limiter(joinSubjectsKept), apiSpec: spec, apiOps: ops,
		idempotency: &idempotency.Store{Pool: d.Pool},
	}
	h.sessions = h.newSessionManager()

	e := echo.New()
	e.HideBanner, e.HidePort = true, true
	e.HTTPErrorHandler = h.handleError
	e.IPExtractor = ipExtractor(d.TrustedProxies)

	e.Pre(middleware.RequestID())
	e.Use(h.logRequests())
	// Compression is outside the metrics, which render errors: error
	// pages are compressed too.
	e.Use(compress())
	// Metrics run the error handler themselves to see the final status, so
	// everything inside them, panics included, is counted.
	metrics := newHTTPMetrics(d.Metrics)
	e.Use(metrics.middleware)
	e.Use(h.recoverPanics())
	e.Use(securityHeaders(h.https()))
	// The language comes before anything that can refuse a request (the
	// body limits), so that every error is shown translated.
	e.Use(h.localize)
	// Both limits apply here, before the CSRF check reads the form: a
	// route-level limit would come after it.
	e.Use(middleware.BodyLimitWithConfig(middleware.BodyLimitConfig{Limit: bodyLimit, Skipper: isAvatarUpload}))
	e.Use(middleware.BodyLimitWithConfig(middleware.BodyLimitConfig{Limit: avatarBodyLimit, Skipper: func(c echo.Context) bool { return !isAvatarUpload(c) }}))
	e.Use(middleware.ContextTimeoutWithConfig(middleware.ContextTimeoutConfig{Timeout: d.RequestTimeout, Skipper: isLiveStream}))
	// Browser sessions, CSRF and the signed-in user are for pages only: the
	// JSON API authenticates each request with a bearer key, the join
	// endpoints with the join token in their path, the webhooks with the
	// key in their URL; probes and static files need no session.
	browser := func(m echo.MiddlewareFunc) echo.MiddlewareFunc {
		return func(next echo.HandlerFunc) echo.HandlerFunc {
			withM := m(next)
			return func(c echo.Context) error {
				if isAPI(c) || isJoin(c) || isWebhook(c) || isProbeOrStatic(c) {
					return next(c)
				}
				return withM(c)
			}
		}
	}
	e.Use(browser(h.withSignedIn))
	e.Use(browser(echo.WrapMiddleware(h.sessions.LoadAndSave)))
	e.Use(browser(h.keepSessionAlive))
	e.Use(browser(h.csrf))
	e.Use(browser(h.loadUser))
	e.Use(rejectUnstorableInput)

	h.routes(e)
	metrics.knowRoutes(e.Routes())
	return e
}

// NewProbes serves only /healthz, /readyz and /metrics: the metrics
// listener of serve and worker, which is not for the public.
func NewProbes(d Deps) *echo.Echo {
	h := &Handlers{Deps: d}
	e := echo.New()
	e.HideBanner, e.HidePort = true, true
	h.probeRoutes(e)
	return e
}

func (h *Handlers) newSessionManager() *scs.SessionManager {
	sm := scs.New()
	// Expired rows are deleted by the SessionCleanup River job. The store
	// keeps a session only the idle timeout (an admin setting, read from
	// memory) past its last save, and keepSessionAlive saves it at least
	// once every touchEvery while it is used. (scs's own IdleTimeout would
	// save it on every request: one write per page, and a browser's
	// requests queued on its row.)
	sm.Store = sessionStore{pool: h.Pool, box: h.Box, idle: func() time.Duration { return h.Branding.Cached().IdleTimeout }, cache: h.SessionCache}
	sm.Codec = sessionCodec{}
	// A visitor's session; signing in gives it the lifetime the settings
	// say (renewSession).
	sm.Lifetime = branding.DefaultSessionLifetime
	sm.Cookie.Name = h.cookieName("kubebyon_session")
	sm.Cookie.HttpOnly = true
	sm.Cookie.SameSite = http.SameSiteLaxMode
	sm.Cookie.Secure = h.https()
	sm.ErrorFunc = h.sessionFailed
	return sm
}

// https reports whether the platform is served over https (its base URL).
func (h *Handlers) https() bool {
	u, err := url.Parse(h.BaseURL)
	return err == nil && u.Scheme == "https"
}

// cookieName prefixes the platform's cookies with __Host- under https: the
// browser then takes them only from this host, over https, for every path,
// so that a sibling domain or a plain-http page cannot set them. (Browsers
// refuse the prefix without Secure, hence plain names over http.)
func (h *Handlers) cookieName(name string) string {
	if h.https() {
		return "__Host-" + name
	}
	return name
}

// sessionFailed answers a request whose session could not be loaded or
// saved (scs calls it outside Echo's error handling): 503 when the
// database did not answer within the request's deadline, 500 otherwise.
func (h *Handlers) sessionFailed(w http.ResponseWriter, r *http.Request, err error) {
	ctx := context.WithoutCancel(r.Context())
	code := http.StatusInternalServerError
	if errors.Is(err, context.DeadlineExceeded) {
		code = http.StatusServiceUnavailable
	}
	reqID := w.Header().Get(echo.HeaderXRequestID)
	h.Logger.ErrorContext(ctx, "session failed", "error", err, "request_id", reqID, "method", r.Method, "path", r.URL.Path)
	if err := renderTo(ctx, w, code, views.ErrorPage(code, locale.T(ctx, "ErrorServer"), reqID)); err != nil {
		h.Logger.ErrorContext(ctx, "write error response", "error", err)
	}
}

// localize picks the request's language from Accept-Language, else the
// admins' default; a signed-in user's own choice replaces it later
// (setLanguage). It also gives the request the branding, from memory
// (branding.Service.Current), which the session store reads after it.
func (h *Handlers) localize(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		h.brand(c)
		c.Response().Header().Add("Vary", "Accept-Language")
		return next(c)
	}
}

// setLanguage picks the language: preferred first when set, else the
// browser's Accept-Language, else the admins' default for visitors.
func (h *Handlers) setLanguage(c echo.Context, preferred string) {
	l := h.Catalog.ForDefault(h.Branding.Cached().DefaultLanguage, preferred, c.Request().Header.Get("Accept-Language"))
	c.SetRequest(c.Request().WithContext(locale.With(c.Request().Context(), l)))
}

// isProbeOrStatic reports whether the request is for a probe, a static
// file, the icon or the logo.
func isProbeOrStatic(c echo.Context) bool {
	switch p := c.Request().URL.Path; {
	case p == "/healthz", p == "/readyz", p == "/metrics", p == brandingLogoPath, isStatic(c):
		return true
	}
	return false
}

// isAPI reports whether the request is for the JSON API, whose errors are JSON.
func isAPI(c echo.Context) bool {
	return strings.HasPrefix(c.Request().URL.Path, "/api/")
}

// apiError is the JSON error body of the API.
type apiError struct {
	Error apiErrorBody `json:"error"`
}

type apiErrorBody struct {
	Code    string `json:"code"`
	Message string `json:"message"`
}

// errClusterNotFound answers for a cluster that does not exist or is not
// the user's: the API says which thing was not found.
var errClusterNotFound = echo.NewHTTPError(http.StatusNotFound, "ErrorClusterNotFound")

// notFoundMessage is the message of a 404: the API's names what was not
// found when the handler said (an HTTPError other than Echo's own, whose
// message is a catalog message), else "Not found"; pages say "Page not
// found".
func notFoundMessage(c echo.Context, he *echo.HTTPError) string {
	if !isAPI(c) {
		return "ErrorNotFound"
	}
	if he != nil && he != echo.ErrNotFound && he != echo.ErrMethodNotAllowed {
		if s, ok := he.Message.(string); ok {
			return s
		}
	}
	return "ErrorAPINotFound"
}

// handleError renders errors: JSON for the API, a styled page otherwise.
// Server errors are logged with the request ID and shown without details.
// StatusClientClosedRequest is the status a request whose client went
// away before the answer is logged and counted with.
const StatusClientClosedRequest = 499

func (h *Handlers) handleError(err error, c echo.Context) {
	if c.Response().Committed {
		return
	}
	// The client went away mid-request (closed the page, gave up waiting):
	// nobody to answer, and no server error. Logged and counted as 499,
	// nginx's "client closed request", not as a 5xx.
	if errors.Is(err, context.Canceled) && c.Request().Context().Err() != nil {
		c.Response().WriteHeader(StatusClientClosedRequest)
		return
	}
	// The request's context may have ended (the timeout middleware cancels
	// it on return); the error page must still be written.
	c.SetRequest(c.Request().WithContext(context.WithoutCancel(c.Request().Context())))
	code := http.StatusInternalServerError
	var he *echo.HTTPError
	var fe input.Errors
	var elsewhere *clusterElsewhere
	if errors.As(err, &fe) {
		// Field errors no form shows again (rejectUnstorableInput, an API
		// body): 422 naming the fields.
		code = http.StatusUnprocessableEntity
	} else if errors.As(err, &he) {
		code = he.Code
	} else if errors.As(err, &elsewhere) {
		code = http.StatusNotFound
	} else if errors.Is(err, orgs.ErrForbidden) {
		// A member whose role in the organization does not allow it.
		he = echo.NewHTTPError(http.StatusForbidden, orgs.ErrForbidden.Error())
		code = he.Code
	} else if errors.Is(err, etag.ErrPreconditionFailed) {
		// A change over a state that changed since (If-Match).
		he = echo.NewHTTPError(http.StatusPreconditionFailed, err.Error())
		code = he.Code
	} else if errors.Is(err, context.DeadlineExceeded) {
		code = http.StatusServiceUnavailable
	}
	reqID := c.Response().Header().Get(echo.HeaderXRequestID)
	if code >= 500 {
		h.Logger.ErrorContext(c.Request().Context(), "request failed",
			"error", err, "request_id", reqID, "method", c.Request().Method, "path", c.Request().URL.Path)
	}

	msgID := "ErrorServer"
	switch code {
	case http.StatusNotFound, http.StatusMethodNotAllowed:
		code, msgID = http.StatusNotFound, notFoundMessage(c, he)
	case http.StatusRequestEntityTooLarge:
		msgID = "ErrorRequestTooLarge"
	}
	if code < 500 && he != nil && msgID == "ErrorServer" {
		// A 4xx raised by a handler carries its own user-facing message.
		if s, ok := he.Message.(string); ok {
			msgID = s
		}
	}
	msg := locale.T(c.Request().Context(), msgID)
	if fe != nil {
		ctx := c.Request().Context()
		msg = locale.T(ctx, "ErrFormFieldsInvalid", map[string]any{"Fields": fieldsSummary(fe, func(id string) string { return locale.T(ctx, id) })})
	}

	var werr error
	switch {
	case c.Request().Method == http.MethodHead:
		werr = c.NoContent(code)
	case fe != nil && (isAPI(c) || isWebhook(c)):
		ctx := c.Request().Context()
		body := apiInvalidBody{Code: "invalid", Message: locale.T(ctx, "ErrAPIInvalidFields"), Fields: map[string]string{}}
		for k, v := range fe {
			body.Fields[k] = locale.T(ctx, v)
		}
		werr = c.JSON(code, apiInvalid{Error: body})
	case isAPI(c), isWebhook(c):
		werr = c.JSON(code, apiError{Error: apiErrorBody{Code: strings.ToLower(strings.ReplaceAll(http.StatusText(code), " ", "_")), Message: msg}})
	case isJoin(c):
		// What a machine pipes into sh: a script that says what went wrong,
		// never an HTML page.
		c.Response().Header().Set(echo.HeaderContentType, mimeShellScript)
		c.Response().WriteHeader(code)
		reason := msgID
		if fe != nil {
			// Already translated; the catalog gives it back unchanged.
			reason = msg
		}
		werr = jointokens.WriteRefusal(c.Request().Context(), c.Response(), errors.New(reason))
	case elsewhere != nil:
		views.PageOf(c.Request().Context()).APICall = nil
		werr = render(c, code, views.ClusterElsewherePage(elsewhere.orgID, elsewhere.orgName, c.Request().URL.RequestURI()))
	default:
		if code < 500 {
			reqID = ""
		}
		// An error page has no data of its own, so no API call either.
		views.PageOf(c.Request().Context()).APICall = nil
		werr = render(c, code, views.ErrorPage(code, msg, reqID))
	}
	if werr != nil {
		h.Logger.ErrorContext(c.Request().Context(), "write error response", "error", werr)
	}
}
