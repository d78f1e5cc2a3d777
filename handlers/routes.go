package handlers

import (
	"net/http"

	"github.com/labstack/echo/v4"
	"github.com/labstack/echo/v4/middleware"

	"github.com/kubebyon/kubebyon/internal/adminusers"
	"github.com/kubebyon/kubebyon/internal/nodequota"
	"github.com/kubebyon/kubebyon/static"
)

// routes is every route of the public server, by area. Each line names the
// handler and the route's own middleware; what every request goes through
// (sessions, CSRF, limits, logs) is set up in New.
//
// Who may ask:
//   - requireUser: a signed-in user, else a redirect to sign in. Handlers
//     of a cluster's pages then load it for that user only (404 for
//     another's).
//   - requireAdmin: a signed-in admin, else the same 404 as an unknown
//     path, so that visitors do not learn the area exists.
//   - requireAPIKey: a bearer API key. It sits on each API route, not on
//     a group: as group middleware it would answer unknown paths with 401,
//     where they must stay 404. Session cookies count for nothing there.
//   - the join and webhook routes authenticate with the token or key in
//     their path (no session, no CSRF: isJoin, isWebhook).
func (h *Handlers) routes(e *echo.Echo) {
	// Probes, for load balancers and orchestrators, static files (by
	// hashed or plain name, static.go) and the icon.
	e.GET("/healthz", h.showHealth)
	e.GET("/readyz", h.showReadiness)
	files := static.All()
	e.Match([]string{http.MethodGet, http.MethodHead}, "/static/*", serveStatic(files))
	e.Match([]string{http.MethodGet, http.MethodHead}, "/favicon.ico", serveFavicon(files))

	// Home and the platform's status.
	e.GET("/", h.showHomePage)
	e.GET("/status", h.showStatus)

	// Sign-up, sign-in, password reset (auth.go).
	e.GET("/signup", h.showSignUpPage)
	e.POST("/signup", h.signUp)
	e.GET("/signup/verify", h.showVerifyPage)
	e.POST("/signup/verify", h.verifySignup)
	e.POST("/signup/resend", h.resendSignupCode)
	e.GET("/login", h.showLoginPage)
	e.POST("/login", h.signIn)
	e.POST("/logout", h.signOut)
	e.GET("/password/reset", h.showResetRequestPage)
	e.POST("/password/reset", h.requestPasswordReset)
	e.GET("/password/reset/confirm", h.showResetConfirmPage)
	e.POST("/password/reset/confirm", h.resetPassword)

	// Sign-in with GitHub or Google, and linking it to an account (oauth.go).
	e.GET("/auth/link", h.showLinkPage)
	e.POST("/auth/link", h.linkIdentity)
	e.GET("/auth/:provider", h.startOAuth)
	e.GET("/auth/:provider/callback", h.finishOAuth)

	// The user's settings: profile, email, password, avatar (profile.go,
	// avatars.go), sign-in methods (sign_in_methods.go), notification
	// settings (notification_settings.go).
	settings := e.Group("/settings", h.requireUser)
	settings.GET("/profile", h.showProfilePage)
	settings.POST("/profile", h.updateProfile)
	settings.POST("/email", h.requestEmailChange)
	settings.POST("/email/confirm", h.confirmEmailChange)
	settings.POST("/email/resend", h.resendEmailChangeCode)
	settings.POST("/email/cancel", h.cancelEmailChange)
	settings.POST("/password", h.changePassword)
	settings.POST(avatarUploadRoute, h.uploadAvatar)
	settings.POST("/avatar/remove", h.removeAvatar)
	settings.GET("/sign-in", h.showSignInMethods)
	settings.POST("/sign-in/:identity/unlink", h.unlinkIdentity)
	settings.GET("/notifications", h.showNotificationsPage)
	settings.POST("/notifications", h.updateNotifications)
	h.webhookRoutes(settings)
	// Not behind requireUser: an image request that is not allowed gets a
	// 404, not a redirect to the sign-in page.
	e.GET("/avatars/:id", h.showAvatar)
	// The admins' logo, for everyone (admin_branding.go).
	e.GET(brandingLogoPath, h.showBrandingLogo)

	// API keys (api_keys.go).
	e.GET("/settings/api-keys", h.showAPIKeysPage, h.requireUser)
	e.POST("/settings/api-keys", h.createAPIKey, h.requireUser)
	e.GET("/settings/api-keys/:id/revoke", h.showRevokeAPIKeyPage, h.requireUser)
	e.POST("/settings/api-keys/:id/revoke", h.revokeAPIKey, h.requireUser)

	// The notification inbox (notifications_inbox.go).
	e.GET("/notifications", h.showNotificationsInbox, h.requireUser)
	e.POST("/notifications/read", h.markNotificationsRead, h.requireUser)

	// The plan page, orders and receipts (billing.go, billing_stripe.go).
	e.GET("/billing", h.showBillingPage, h.requireUser)
	e.POST("/billing/orders", h.chooseBillingPlan, h.requireUser)
	e.GET("/billing/orders/:id", h.showBillingOrder, h.requireUser)
	e.GET("/billing/orders/:id/receipt", h.showBillingReceipt, h.requireUser)
	e.POST("/billing/orders/:id/cancel", h.cancelBillingOrder, h.requireUser)
	e.POST("/billing/orders/:id/checkout", h.checkoutBillingOrder, h.requireUser)
	e.POST("/billing/cancel", h.setBillingCancel(true), h.requireUser)
	e.POST("/billing/resume", h.setBillingCancel(false), h.requireUser)

	// Clusters (clusters.go, cluster_*.go).
	e.GET("/clusters", h.showClustersPage, h.requireUser)
	e.GET("/clusters/new", h.showNewClusterPage, h.requireUser)
	e.POST("/clusters", h.createCluster, h.requireUser)
	e.GET("/clusters/:id", h.showClusterPage, h.requireUser)
	e.GET("/clusters/:id/endpoint", h.showClusterEndpoint, h.requireUser)
	e.GET("/clusters/:id/events", h.showClusterUpdates, h.requireUser)
	e.GET("/clusters/:id/edit", h.showEditClusterPage, h.requireUser)
	e.POST("/clusters/:id/edit", h.updateCluster, h.requireUser)
	e.GET("/clusters/:id/delete", h.showDeleteClusterPage, h.requireUser)
	e.POST("/clusters/:id/delete", h.deleteCluster, h.requireUser)
	e.POST("/clusters/:id/retry", h.retryCluster, h.requireUser)
	e.GET("/clusters/:id/kubeconfig", h.downloadKubeconfig, h.requireUser)
	e.GET("/clusters/:id/ingress", h.showClusterIngress, h.requireUser)
	e.POST("/clusters/:id/ingress", h.setClusterIngress, h.requireUser)
	e.GET("/clusters/:id/ingress/disable", h.showDisableIngressPage, h.requireUser)
	e.POST("/clusters/:id/ingress/retry", h.retryClusterIngress, h.requireUser)
	e.POST("/clusters/:id/ingress/mode", h.setClusterIngressMode, h.requireUser)
	e.POST("/clusters/:id/ingress/edge/retry", h.retryClusterEdge, h.requireUser)
	e.POST("/clusters/:id/ingress/hostnames", h.addClusterHostname, h.requireUser)
	e.POST("/clusters/:id/ingress/hostnames/remove", h.removeClusterHostname, h.requireUser)
	e.POST("/clusters/:id/ingress/hostnames/check", h.checkClusterHostnames, h.requireUser)
	e.POST("/clusters/:id/stale-node-cleanup", h.setStaleNodeCleanup, h.requireUser)

	// A cluster's metrics: the page, and the figures its charts draw
	// (cluster_metrics.go).
	e.GET("/clusters/:id/metrics", h.showClusterMetricsPage, h.requireUser)
	e.GET("/clusters/:id/metrics.json", h.showClusterMetricsJSON, h.requireUser)

	// A cluster's join tokens (join_tokens.go). :joinToken is the token's
	// row id; a :token is a token's value.
	e.GET("/clusters/:id/tokens", h.showJoinTokensPage, h.requireUser)
	e.POST("/clusters/:id/tokens", h.createJoinToken, h.requireUser)
	e.GET("/clusters/:id/tokens/:joinToken/live", h.showJoinTokenLive, h.requireUser)
	e.GET("/clusters/:id/tokens/:joinToken/revoke", h.showRevokeJoinTokenPage, h.requireUser)
	e.POST("/clusters/:id/tokens/:joinToken/revoke", h.revokeJoinToken, h.requireUser)

	// A cluster's nodes (nodes.go, node_*.go). validNodeName answers 404
	// for a name no Node can have.
	e.GET("/clusters/:id/nodes", h.showNodesPage, h.requireUser)
	e.GET("/clusters/:id/nodes/:name", h.showNodePage, h.requireUser, validNodeName)
	e.GET("/clusters/:id/nodes/:name/live", h.showNodeLive, h.requireUser, validNodeName)
	e.POST("/clusters/:id/nodes/:name/cordon", h.cordonNode, h.requireUser, validNodeName)
	e.POST("/clusters/:id/nodes/:name/uncordon", h.uncordonNode, h.requireUser, validNodeName)
	e.POST("/clusters/:id/nodes/:name/ingress", h.setNodeIngress, h.requireUser, validNodeName)
	e.GET("/clusters/:id/nodes/:name/drain", h.showDrainNodePage, h.requireUser, validNodeName)
	e.POST("/clusters/:id/nodes/:name/drain", h.drainNode, h.requireUser, validNodeName)
	e.GET("/clusters/:id/nodes/:name/delete", h.showDeleteNodePage, h.requireUser, validNodeName)
	e.POST("/clusters/:id/nodes/:name/delete", h.deleteNode, h.requireUser, validNodeName)
	e.GET("/clusters/:id/nodes/:name/operations/:op", h.showNodeOperation, h.requireUser, validNodeName)

	// What a machine joining a cluster calls, with the token in the path
	// (join.go).
	e.GET("/join/:token", h.serveJoinScript)
	e.POST("/join/:token/events", h.recordJoinEvent, middleware.BodyLimit(joinEventBodyLimit))

	// Webhooks a virtual cluster's apiserver calls, with the key in the
	// path (node_quota.go).
	e.POST(nodequota.WebhookPath+":id/:key", h.reviewNodeQuota)
	// Stripe's event deliveries, verified by their signature
	// (billing_stripe.go).
	e.POST("/webhooks/stripe", h.stripeWebhook)

	// The JSON API (api*.go).
	e.GET("/api/v1/me", h.showAPIMe, h.requireAPIKey)
	e.GET("/api/v1/billing", h.showAPIBilling, h.requireAPIKey)
	e.GET("/api/v1/orders", h.listAPIOrders, h.requireAPIKey)
	e.GET("/api/v1/clusters", h.listAPIClusters, h.requireAPIKey)
	e.POST("/api/v1/clusters", h.createAPICluster, h.requireAPIKey)
	e.GET("/api/v1/clusters/:id", h.showAPICluster, h.requireAPIKey)
	e.PATCH("/api/v1/clusters/:id", h.updateAPICluster, h.requireAPIKey)
	e.POST("/api/v1/clusters/:id/hostnames", h.addAPIHostname, h.requireAPIKey)
	e.DELETE("/api/v1/clusters/:id/hostnames/:name", h.removeAPIHostname, h.requireAPIKey)
	e.DELETE("/api/v1/clusters/:id", h.deleteAPICluster, h.requireAPIKey)
	e.GET("/api/v1/clusters/:id/kubeconfig", h.downloadAPIKubeconfig, h.requireAPIKey)
	e.GET("/api/v1/clusters/:id/metrics", h.showClusterMetricsJSON, h.requireAPIKey)
	e.GET("/api/v1/clusters/:id/nodes", h.listAPINodes, h.requireAPIKey)
	e.POST("/api/v1/clusters/:id/nodes/:name/cordon", h.cordonAPINode, h.requireAPIKey, validNodeName)
	e.POST("/api/v1/clusters/:id/nodes/:name/uncordon", h.uncordonAPINode, h.requireAPIKey, validNodeName)
	e.POST("/api/v1/clusters/:id/nodes/:name/drain", h.drainAPINode, h.requireAPIKey, validNodeName)
	e.DELETE("/api/v1/clusters/:id/nodes/:name", h.deleteAPINode, h.requireAPIKey, validNodeName)

	// What `kubebyon edge` calls, with an edge token (edge_api.go).
	e.GET("/api/v1/edge/config", h.showEdgeConfig, h.requireEdgeToken)
	e.POST("/api/v1/edge/status", h.recordEdgeStatus, h.requireEdgeToken)
	// What `kubebyon route-agent` calls, with an edge token.
	e.GET("/api/v1/edge/routes", h.showEdgeRoutes, h.requireEdgeToken)
	e.POST("/api/v1/edge/routes/status", h.recordRouteStatus, h.requireEdgeToken)

	// The admin area (admin_*.go). requireAdmin alone guards it: it needs
	// a signed-in user as well.
	admin := e.Group("/admin", h.requireAdmin, h.adminNotices)
	admin.GET("", func(c echo.Context) error { return redirect(c, "/admin/users") })
	admin.GET("/users", h.showAdminUsersPage)
	admin.GET("/users/:id", h.showAdminUserPage)
	for _, a := range adminusers.Actions {
		admin.POST("/users/:id/"+string(a), h.changeAdminUser(a))
	}
	h.adminUserDetailRoutes(admin)
	admin.GET("/activity", h.showAdminActivityPage)
	admin.GET("/settings", h.showAdminSettingsPage)
	admin.POST("/settings", h.saveAdminSettings)
	admin.POST("/settings/test", h.testAdminSettings)
	admin.GET("/edge", h.showAdminEdgePage)
	admin.POST("/edge/tokens", h.createEdgeToken)
	admin.GET("/edge/tokens/:id/revoke", h.showRevokeEdgeTokenPage)
	admin.POST("/edge/tokens/:id/revoke", h.revokeEdgeToken)
	admin.POST("/edge/dns", h.saveAdminDNS)
	admin.POST("/edge/dns/check", h.checkAdminDNS)
	admin.POST("/edge/ingress", h.saveAdminIngress)
	h.adminBillingRoutes(admin)
	h.adminMetricsRoutes(admin)
	h.adminJobsRoutes(admin)
	h.adminMailRoutes(admin)
	h.adminWebhookRoutes(admin)
	h.adminSignUpRoutes(admin)
	h.adminSignInRoutes(admin)
	h.adminBrandingRoutes(admin)
	h.adminClusterRoutes(admin)
	admin.GET("/plans", h.showAdminPlansPage)
	admin.POST("/plans", h.createPlan)
	admin.GET("/plans/:id", h.showAdminPlanPage)
	admin.POST("/plans/:id", h.updatePlan)
	admin.POST("/plans/:id/archive", h.setPlanArchived(true))
	admin.POST("/plans/:id/unarchive", h.setPlanArchived(false))
	admin.POST("/plans/:id/default", h.makePlanDefault)
}

// probeRoutes are the metrics listener's (NewProbes): not for the public.
func (h *Handlers) probeRoutes(e *echo.Echo) {
	e.GET("/healthz", h.showHealth)
	e.GET("/readyz", h.showReadiness)
	e.GET("/metrics", h.showMetrics)
}
