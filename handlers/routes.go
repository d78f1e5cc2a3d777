package handlers

import (
	"net/http"

	"github.com/labstack/echo/v4"
	"github.com/labstack/echo/v4/middleware"

	"github.com/kubebyon/kubebyon/internal/adminjobs"
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
//   - asksChange: the page of a change of a cluster (its form, its
//     confirmation) asks what the change asks: Operate, 403 for a viewer.
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
	// The second factor of a sign-in (two_factor_sign_in.go).
	e.GET(twoFactorSignInPath, h.showTwoFactorSignInPage)
	e.POST(twoFactorSignInPath, h.signInTwoFactor)

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
	// The user menu's language switch (language.go).
	settings.POST("/language", h.switchLanguage)
	settings.POST(avatarUploadRoute, h.uploadAvatar)
	settings.POST("/avatar/remove", h.removeAvatar)
	settings.GET("/sign-in", h.showSignInMethods)
	settings.POST("/sign-in/:identity/unlink", h.unlinkIdentity)
	// The user's signed-in browsers, on the sign-in page (sign_in_methods.go).
	settings.POST("/sessions/:session/end", h.endUserSession)
	settings.POST("/sessions/end-others", h.endOtherSessions)
	// Two-factor authentication (two_factor.go).
	settings.GET("/security", h.showSecurityPage)
	settings.GET("/security/two-factor", h.showTwoFactorSetupPage)
	settings.POST("/security/two-factor", h.enableTwoFactor)
	settings.POST("/security/two-factor/disable", h.disableTwoFactor)
	settings.POST("/security/recovery-codes", h.regenerateRecoveryCodes)
	settings.GET("/notifications", h.showNotificationsPage)
	settings.POST("/notifications", h.updateNotifications)
	// The user's webhook channels (webhooks.go).
	settings.POST("/notifications/webhooks", h.createWebhook)
	settings.POST("/notifications/webhooks/:id/test", h.testWebhook)
	settings.POST("/notifications/webhooks/:id/delete", h.deleteWebhook)
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

	// The user's organizations, their members, and the organization the
	// console works in (orgs.go). Each handler reads the organization for
	// its member only (404 for anyone else); the orgs service decides what
	// their role allows.
	e.GET("/orgs", h.showOrgsPage, h.requireUser)
	e.POST("/orgs", h.createOrg, h.requireUser)
	e.GET("/orgs/:id", h.showOrgPage, h.requireUser)
	e.POST("/orgs/:id/switch", h.switchOrg, h.requireUser)
	e.GET("/orgs/:id/leave", h.showLeaveOrgPage, h.requireUser)
	e.POST("/orgs/:id/leave", h.leaveOrg, h.requireUser)
	e.POST("/orgs/:id/settings", h.setOrgSettings, h.requireUser)
	e.GET("/orgs/:id/delete", h.showDeleteOrgPage, h.requireUser)
	e.POST("/orgs/:id/delete", h.deleteOrg, h.requireUser)
	e.POST("/orgs/:id/members/:user/role", h.setOrgMemberRole, h.requireUser)
	e.GET("/orgs/:id/members/:user/remove", h.showRemoveOrgMemberPage, h.requireUser)
	e.POST("/orgs/:id/members/:user/remove", h.removeOrgMember, h.requireUser)
	e.POST("/orgs/:id/invitations", h.inviteToOrg, h.requireUser)
	e.POST("/orgs/:id/invitations/:inv/revoke", h.revokeOrgInvitation, h.requireUser)
	// An invitation's emailed link: requireUser sends a visitor to sign in
	// (or sign up) and back.
	e.GET("/orgs/invitations/:token", h.showOrgInvitationPage, h.requireUser)
	e.POST("/orgs/invitations/:token/accept", h.acceptOrgInvitation, h.requireUser)

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
	e.GET("/clusters/:id/stream", h.streamClusterUpdates, h.requireUser)
	e.GET("/clusters/:id/activity", h.showClusterActivityPage, h.requireUser)
	e.GET("/clusters/:id/edit", h.showEditClusterPage, h.requireUser, asksChange)
	e.POST("/clusters/:id/edit", h.updateCluster, h.requireUser)
	e.GET("/clusters/:id/delete", h.showDeleteClusterPage, h.requireUser, asksChange)
	e.POST("/clusters/:id/delete", h.deleteCluster, h.requireUser)
	e.POST("/clusters/:id/retry", h.retryCluster, h.requireUser)
	e.GET("/clusters/:id/kubeconfig", h.downloadKubeconfig, h.requireUser)
	e.GET("/clusters/:id/ingress", h.showClusterIngress, h.requireUser)
	e.POST("/clusters/:id/ingress", h.setClusterIngress, h.requireUser)
	e.GET("/clusters/:id/ingress/disable", h.showDisableIngressPage, h.requireUser, asksChange)
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
	e.POST("/clusters/:id/tokens/first", h.createFirstNodeToken, h.requireUser)
	e.GET("/clusters/:id/tokens/stream", h.streamJoinTokens, h.requireUser)
	e.GET("/clusters/:id/tokens/:joinToken/live", h.showJoinTokenLive, h.requireUser)
	e.GET("/clusters/:id/tokens/:joinToken/revoke", h.showRevokeJoinTokenPage, h.requireUser, asksChange)
	e.POST("/clusters/:id/tokens/:joinToken/revoke", h.revokeJoinToken, h.requireUser)

	// A cluster's nodes (nodes.go, node_*.go). validNodeName answers 404
	// for a name no Node can have.
	e.GET("/clusters/:id/nodes", h.showNodesPage, h.requireUser)
	// Not under /nodes/, where a node may be called "stream".
	e.GET("/clusters/:id/node-rows/stream", h.streamNodeRows, h.requireUser)
	e.GET("/clusters/:id/nodes/:name", h.showNodePage, h.requireUser, validNodeName)
	e.GET("/clusters/:id/nodes/:name/live", h.showNodeLive, h.requireUser, validNodeName)
	e.POST("/clusters/:id/nodes/:name/cordon", h.cordonNode, h.requireUser, validNodeName)
	e.POST("/clusters/:id/nodes/:name/uncordon", h.uncordonNode, h.requireUser, validNodeName)
	e.POST("/clusters/:id/nodes/:name/ingress", h.setNodeIngress, h.requireUser, validNodeName)
	e.GET("/clusters/:id/nodes/:name/drain", h.showDrainNodePage, h.requireUser, validNodeName, asksChange)
	e.POST("/clusters/:id/nodes/:name/drain", h.drainNode, h.requireUser, validNodeName)
	e.GET("/clusters/:id/nodes/:name/delete", h.showDeleteNodePage, h.requireUser, validNodeName, asksChange)
	e.POST("/clusters/:id/nodes/:name/delete", h.deleteNode, h.requireUser, validNodeName)
	e.GET("/clusters/:id/nodes/:name/operations/:op", h.showNodeOperation, h.requireUser, validNodeName)
	e.GET("/clusters/:id/nodes/:name/operations/:op/stream", h.streamNodeOperation, h.requireUser, validNodeName)

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
	e.GET("/api/v1/openapi.json", h.showAPISpec)
	e.GET("/api/reference", h.showAPIReference)
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
	e.GET("/api/v1/clusters/:id/join-tokens", h.listAPIJoinTokens, h.requireAPIKey)
	e.POST("/api/v1/clusters/:id/join-tokens", h.createAPIJoinToken, h.requireAPIKey)
	e.GET("/api/v1/clusters/:id/join-tokens/:joinToken", h.showAPIJoinToken, h.requireAPIKey)
	e.DELETE("/api/v1/clusters/:id/join-tokens/:joinToken", h.revokeAPIJoinToken, h.requireAPIKey)
	e.GET("/api/v1/clusters/:id/nodes", h.listAPINodes, h.requireAPIKey)
	e.POST("/api/v1/clusters/:id/nodes/:name/cordon", h.cordonAPINode, h.requireAPIKey, validNodeName)
	e.POST("/api/v1/clusters/:id/nodes/:name/uncordon", h.uncordonAPINode, h.requireAPIKey, validNodeName)
	e.POST("/api/v1/clusters/:id/nodes/:name/drain", h.drainAPINode, h.requireAPIKey, validNodeName)
	e.DELETE("/api/v1/clusters/:id/nodes/:name", h.deleteAPINode, h.requireAPIKey, validNodeName)
	e.GET("/api/v1/clusters/:id/nodes/:name/operations/:op", h.showAPINodeOperation, h.requireAPIKey, validNodeName)
	// API: the caller's account (notifications, API keys, profile).
	// The inbox, what goes where, and the webhook channels
	// (api_account_notifications.go).
	e.GET("/api/v1/notifications", h.listAPINotifications, h.requireAPIKey)
	e.POST("/api/v1/notifications/read", h.markAPINotificationsRead, h.requireAPIKey)
	e.GET("/api/v1/notification-settings", h.showAPINotificationSettings, h.requireAPIKey)
	e.PATCH("/api/v1/notification-settings", h.updateAPINotificationSettings, h.requireAPIKey, conditional)
	e.GET("/api/v1/webhooks", h.listAPIWebhooks, h.requireAPIKey)
	e.POST("/api/v1/webhooks", h.createAPIWebhook, h.requireAPIKey)
	e.GET("/api/v1/webhooks/:id", h.showAPIWebhook, h.requireAPIKey)
	e.POST("/api/v1/webhooks/:id/test", h.testAPIWebhook, h.requireAPIKey)
	e.DELETE("/api/v1/webhooks/:id", h.deleteAPIWebhook, h.requireAPIKey)
	// The caller's API keys (api_account_keys.go).
	e.GET("/api/v1/api-keys", h.listAPIKeys, h.requireAPIKey)
	e.POST("/api/v1/api-keys", h.createAPIKeyByAPI, h.requireAPIKey)
	e.GET("/api/v1/api-keys/:apiKey", h.showAPIKey, h.requireAPIKey)
	e.DELETE("/api/v1/api-keys/:apiKey", h.revokeAPIKeyByAPI, h.requireAPIKey)
	// Profile, password, email address, avatar and sign-in methods
	// (api_account.go).
	e.PATCH("/api/v1/me", h.updateAPIMe, h.requireAPIKey, conditional)
	e.PUT("/api/v1/me/password", h.changeAPIPassword, h.requireAPIKey)
	e.GET(apiEmailChangePath, h.showAPIEmailChange, h.requireAPIKey)
	e.POST(apiEmailChangePath, h.requestAPIEmailChange, h.requireAPIKey)
	e.DELETE(apiEmailChangePath, h.cancelAPIEmailChange, h.requireAPIKey)
	e.POST(apiEmailChangePath+"/confirm", h.confirmAPIEmailChange, h.requireAPIKey)
	e.POST(apiEmailChangePath+"/resend", h.resendAPIEmailChangeCode, h.requireAPIKey)
	e.PUT(apiAvatarPath, h.uploadAPIAvatar, h.requireAPIKey)
	e.DELETE(apiAvatarPath, h.removeAPIAvatar, h.requireAPIKey)
	e.GET("/api/v1/me/identities", h.listAPIIdentities, h.requireAPIKey)
	e.DELETE("/api/v1/me/identities/:id", h.unlinkAPIIdentity, h.requireAPIKey)

	// API: the caller's organizations, their members and invitations
	// (api_orgs.go).
	e.GET("/api/v1/organizations", h.listAPIOrgs, h.requireAPIKey)
	e.POST("/api/v1/organizations", h.createAPIOrg, h.requireAPIKey)
	e.GET("/api/v1/organizations/:id", h.showAPIOrg, h.requireAPIKey)
	e.PATCH("/api/v1/organizations/:id", h.updateAPIOrg, h.requireAPIKey, conditional)
	e.DELETE("/api/v1/organizations/:id", h.deleteAPIOrg, h.requireAPIKey)
	e.GET("/api/v1/organizations/:id/members", h.listAPIOrgMembers, h.requireAPIKey)
	e.GET("/api/v1/organizations/:id/members/:user_id", h.showAPIOrgMember, h.requireAPIKey)
	e.PATCH("/api/v1/organizations/:id/members/:user_id", h.updateAPIOrgMember, h.requireAPIKey, conditional)
	e.DELETE("/api/v1/organizations/:id/members/:user_id", h.removeAPIOrgMember, h.requireAPIKey)
	e.GET("/api/v1/organizations/:id/invitations", h.listAPIOrgInvitations, h.requireAPIKey)
	e.POST("/api/v1/organizations/:id/invitations", h.createAPIOrgInvitation, h.requireAPIKey)
	e.GET("/api/v1/organizations/:id/invitations/:invitation_id", h.showAPIOrgInvitation, h.requireAPIKey)
	e.DELETE("/api/v1/organizations/:id/invitations/:invitation_id", h.revokeAPIOrgInvitation, h.requireAPIKey)

	// API: clusters and billing, beyond the above.
	e.POST("/api/v1/clusters/:id/retry", h.retryAPICluster, h.requireAPIKey)
	e.GET("/api/v1/clusters/:id/events", h.listAPIClusterEvents, h.requireAPIKey)
	e.POST("/api/v1/clusters/:id/ingress/retry", h.retryAPIIngress, h.requireAPIKey)
	e.POST("/api/v1/clusters/:id/ingress/edge/retry", h.retryAPIEdge, h.requireAPIKey)
	e.GET("/api/v1/clusters/:id/hostnames", h.listAPIHostnames, h.requireAPIKey)
	e.POST("/api/v1/clusters/:id/hostnames/check", h.checkAPIHostnames, h.requireAPIKey)
	e.GET("/api/v1/clusters/:id/nodes/:name", h.showAPINode, h.requireAPIKey, validNodeName)
	e.PUT("/api/v1/clusters/:id/nodes/:name/ingress", h.setAPINodeIngress, h.requireAPIKey, validNodeName)
	e.GET("/api/v1/plans", h.listAPIPlans, h.requireAPIKey)
	e.POST("/api/v1/orders", h.createAPIOrder, h.requireAPIKey)
	e.GET("/api/v1/orders/:id", h.showAPIOrder, h.requireAPIKey)
	e.POST("/api/v1/orders/:id/cancel", h.cancelAPIOrder, h.requireAPIKey)
	e.POST("/api/v1/orders/:id/checkout", h.checkoutAPIOrder, h.requireAPIKey)
	e.POST("/api/v1/billing/cancel", h.setAPIBillingCancel(true), h.requireAPIKey)
	e.POST("/api/v1/billing/resume", h.setAPIBillingCancel(false), h.requireAPIKey)

	// The admin API: admin keys only (requireAdminKey).
	adminAPI := e.Group("/api/v1/admin", h.requireAPIKey, requireAdminKey)
	// Admin API: users, subscriptions, plans, orders, activity.
	// The accounts and the actions on one (api_admin_users.go).
	adminAPI.GET("/users", h.listAPIAdminUsers)
	adminAPI.GET("/users/:id", h.showAPIAdminUser)
	adminAPI.DELETE("/users/:id", h.deleteAPIAdminUser)
	adminAPI.POST("/users/:id/disable", h.changeAPIAdminUser(adminusers.Disable))
	adminAPI.POST("/users/:id/enable", h.changeAPIAdminUser(adminusers.Enable))
	adminAPI.POST("/users/:id/promote", h.changeAPIAdminUser(adminusers.Promote))
	adminAPI.POST("/users/:id/demote", h.changeAPIAdminUser(adminusers.Demote))
	adminAPI.POST("/users/:id/revoke-sessions", h.changeAPIAdminUser(adminusers.RevokeSessions))
	adminAPI.POST("/users/:id/password-reset", h.resetAPIAdminUserPassword)
	adminAPI.POST("/users/:id/two-factor-reset", h.resetAPIAdminUserTwoFactor)
	adminAPI.DELETE("/users/:id/api-keys/:keyid", h.revokeAPIAdminUserKey)
	// The organizations and their subscriptions (api_admin_orgs.go).
	adminAPI.GET("/organizations", h.listAPIAdminOrgs)
	adminAPI.GET("/organizations/:id", h.showAPIAdminOrg)
	adminAPI.GET("/organizations/:id/subscription", h.showAPIAdminOrgSubscription)
	adminAPI.POST("/organizations/:id/subscription/plan", h.changeAPIAdminOrgSubscription(h.apiAdminSetPlan))
	adminAPI.POST("/organizations/:id/subscription/extend", h.changeAPIAdminOrgSubscription(h.apiAdminExtend))
	adminAPI.POST("/organizations/:id/subscription/cancel", h.changeAPIAdminOrgSubscription(h.apiAdminCancel))
	// A user's subscription, orders (api_admin_billing.go) and plans
	// (api_admin_plans.go).
	adminAPI.GET("/users/:id/subscription", h.showAPIAdminSubscription)
	adminAPI.POST("/users/:id/subscription/plan", h.changeAPIAdminSubscription(h.apiAdminSetPlan))
	adminAPI.POST("/users/:id/subscription/extend", h.changeAPIAdminSubscription(h.apiAdminExtend))
	adminAPI.POST("/users/:id/subscription/cancel", h.changeAPIAdminSubscription(h.apiAdminCancel))
	adminAPI.GET("/orders", h.listAPIAdminOrders)
	adminAPI.GET("/orders/:id", h.showAPIAdminOrder)
	adminAPI.POST("/orders/:id/paid", h.markAPIAdminOrderPaid)
	adminAPI.POST("/orders/:id/cancel", h.cancelAPIAdminOrder)
	adminAPI.POST("/orders/:id/refund", h.refundAPIAdminOrder)
	adminAPI.GET("/plans", h.listAPIAdminPlans)
	adminAPI.POST("/plans", h.createAPIAdminPlan)
	adminAPI.GET("/plans/:id", h.showAPIAdminPlan)
	adminAPI.PATCH("/plans/:id", h.updateAPIAdminPlan, conditional)
	adminAPI.POST("/plans/:id/archive", h.changeAPIAdminPlan(h.archiveAPIAdminPlan(true)))
	adminAPI.POST("/plans/:id/unarchive", h.changeAPIAdminPlan(h.archiveAPIAdminPlan(false)))
	adminAPI.POST("/plans/:id/default", h.changeAPIAdminPlan(h.defaultAPIAdminPlan))
	// The audit stream (api_admin_users.go).
	adminAPI.GET("/activity", h.listAPIAdminActivity)

	// Admin API: clusters, jobs, edge, DNS, ingress.
	// Every user's clusters and the back office's actions on one
	// (api_admin_clusters.go), River's jobs (api_admin_jobs.go), the
	// edges, their tokens, DNS and managed ingress settings
	// (api_admin_edge.go).
	adminAPI.GET("/clusters", h.listAPIAdminClusters)
	adminAPI.GET("/clusters/:id", h.showAPIAdminCluster)
	adminAPI.GET("/clusters/:id/metrics", h.showAdminClusterMetricsJSON)
	for _, a := range adminClusterActions {
		adminAPI.POST("/clusters/:id/"+a.path, h.changeAPIAdminCluster(a))
	}
	adminAPI.GET("/jobs", h.listAPIAdminJobs)
	adminAPI.POST("/jobs/:id/retry", h.changeAPIAdminJob((*adminjobs.Service).Retry))
	adminAPI.POST("/jobs/:id/cancel", h.changeAPIAdminJob((*adminjobs.Service).Cancel))
	adminAPI.GET("/edge", h.showAPIAdminEdge)
	adminAPI.GET("/edge/tokens", h.listAPIEdgeTokens)
	adminAPI.POST("/edge/tokens", h.createAPIEdgeToken)
	adminAPI.GET("/edge/tokens/:id", h.showAPIEdgeToken)
	adminAPI.DELETE("/edge/tokens/:id", h.revokeAPIEdgeToken)
	adminAPI.GET("/edge/dns", h.showAPIDNS)
	adminAPI.PUT("/edge/dns", h.saveAPIDNS)
	adminAPI.POST("/edge/dns/check", h.checkAPIDNS)
	adminAPI.GET("/edge/ingress", h.showAPIIngressSettings)
	adminAPI.PUT("/edge/ingress", h.saveAPIIngressSettings)

	// Admin API: settings, sign-up and invitations, sign-in, branding, mail, notification channels, billing and metrics settings.
	// Each settings group is read with GET and changed with PATCH
	// (api_admin_settings.go and the api_admin_*.go beside it).
	adminAPI.GET("/settings", h.showAPIAdminSettings)
	adminAPI.PATCH("/settings", h.updateAPIAdminSettings, conditional)
	adminAPI.POST("/settings/test", h.testAPIAdminSettings)
	adminAPI.GET("/settings/sign-up", h.showAPISignUp)
	adminAPI.PATCH("/settings/sign-up", h.updateAPISignUp, conditional)
	adminAPI.GET("/settings/two-factor", h.showAPITwoFactor)
	adminAPI.PATCH("/settings/two-factor", h.updateAPITwoFactor, conditional)
	adminAPI.GET("/invitations", h.listAPIInvitations)
	adminAPI.POST("/invitations", h.createAPIInvitation)
	adminAPI.GET("/invitations/:id", h.showAPIInvitation)
	adminAPI.POST("/invitations/:id/resend", h.resendAPIInvitation)
	adminAPI.DELETE("/invitations/:id", h.revokeAPIInvitation)
	adminAPI.GET("/settings/sign-in", h.showAPISignIn)
	adminAPI.PATCH("/settings/sign-in", h.updateAPISignIn, conditional)
	adminAPI.POST("/settings/sign-in/test", h.testAPISignIn)
	adminAPI.GET("/settings/branding", h.showAPIBranding)
	adminAPI.PATCH("/settings/branding", h.updateAPIBranding, conditional)
	adminAPI.PUT("/settings/branding/logo", h.putAPIBrandingLogo)
	adminAPI.DELETE("/settings/branding/logo", h.deleteAPIBrandingLogo)
	adminAPI.GET("/settings/mail", h.showAPIMail)
	adminAPI.PATCH("/settings/mail", h.updateAPIMail, conditional)
	adminAPI.POST("/settings/mail/test", h.testAPIMail)
	adminAPI.GET("/notification-channels", h.listAPIChannels)
	adminAPI.POST("/notification-channels", h.createAPIChannel)
	adminAPI.GET("/notification-channels/:id", h.showAPIChannel)
	adminAPI.DELETE("/notification-channels/:id", h.deleteAPIChannel)
	adminAPI.POST("/notification-channels/:id/test", h.testAPIChannel)
	adminAPI.GET("/settings/webhook-network", h.showAPIWebhookNetwork)
	adminAPI.PATCH("/settings/webhook-network", h.updateAPIWebhookNetwork, conditional)
	adminAPI.GET("/settings/billing", h.showAPIBillingSettings)
	adminAPI.PATCH("/settings/billing", h.updateAPIBillingSettings, conditional)
	adminAPI.GET("/settings/metrics", h.showAPIMetricsSettings)
	adminAPI.PATCH("/settings/metrics", h.updateAPIMetricsSettings, conditional)

	// What `kubebyon edge` calls, with an edge token (edge_api.go).
	e.GET("/api/v1/edge/config", h.showEdgeConfig, h.requireEdgeToken)
	e.POST("/api/v1/edge/status", h.recordEdgeStatus, h.requireEdgeToken)
	// What `kubebyon route-agent` calls, with an edge token.
	e.GET("/api/v1/edge/routes", h.showEdgeRoutes, h.requireEdgeToken)
	e.POST("/api/v1/edge/routes/status", h.recordRouteStatus, h.requireEdgeToken)

	// The admin area (admin_*.go). requireAdmin alone guards it: it needs
	// a signed-in user as well.
	admin := e.Group("/admin", h.requireAdmin, h.adminNotices)
	// The platform at a glance (admin_overview.go).
	admin.GET("", h.showAdminOverviewPage)
	// The accounts, and the actions on one (admin_users.go).
	admin.GET("/users", h.showAdminUsersPage)
	admin.GET("/users/:id", h.showAdminUserPage)
	for _, a := range adminusers.Actions {
		admin.POST("/users/:id/"+string(a), h.changeAdminUser(a))
	}
	// The actions on an account's keys, password and existence
	// (admin_user_detail.go; the others are changeAdminUser's).
	admin.POST("/users/:id/api-keys/:keyid/revoke", h.revokeAdminUserAPIKey)
	admin.POST("/users/:id/password-reset", h.resetAdminUserPassword)
	admin.POST("/users/:id/two-factor-reset", h.resetAdminUserTwoFactor)
	admin.POST("/users/:id/delete", h.deleteAdminUser)
	// The organizations and their subscriptions (admin_orgs.go).
	admin.GET("/organizations", h.showAdminOrgsPage)
	admin.GET("/organizations/:id", h.showAdminOrgPage)
	admin.POST("/organizations/:id/subscription/plan", h.setAdminOrgPlan)
	admin.POST("/organizations/:id/subscription/extend", h.extendAdminOrgSubscription)
	admin.POST("/organizations/:id/subscription/cancel", h.cancelAdminOrgSubscription)
	// The audit log (admin_activity.go) and the platform's settings
	// (admin_settings.go).
	admin.GET("/activity", h.showAdminActivityPage)
	admin.GET("/settings", h.showAdminSettingsPage)
	admin.POST("/settings", h.saveAdminSettings)
	admin.POST("/settings/test", h.testAdminSettings)
	// The edges, their DNS and the ingress settings (admin_edge.go,
	// admin_dns.go, admin_ingress.go).
	admin.GET("/edge", h.showAdminEdgePage)
	admin.POST("/edge/tokens", h.createEdgeToken)
	admin.GET("/edge/tokens/:id/revoke", h.showRevokeEdgeTokenPage)
	admin.POST("/edge/tokens/:id/revoke", h.revokeEdgeToken)
	admin.POST("/edge/dns", h.saveAdminDNS)
	admin.POST("/edge/dns/check", h.checkAdminDNS)
	admin.POST("/edge/ingress", h.saveAdminIngress)
	// Orders, the billing overview and settings, and a user's
	// subscription (admin_billing.go).
	admin.GET("/orders", h.showAdminOrdersPage)
	admin.GET("/orders.csv", h.exportAdminOrders)
	admin.GET("/orders/:id", h.showAdminOrderPage)
	admin.POST("/orders/:id/paid", h.markOrderPaid)
	admin.POST("/orders/:id/cancel", h.cancelAdminOrder)
	admin.POST("/orders/:id/refund", h.refundAdminOrder)
	admin.GET("/billing", h.showAdminBillingPage)
	admin.POST("/billing/settings", h.saveBillingSettings)
	admin.POST("/users/:id/subscription/plan", h.setSubscriptionPlan)
	admin.POST("/users/:id/subscription/extend", h.extendSubscription)
	admin.POST("/users/:id/subscription/cancel", h.cancelSubscription)
	// The platform's metrics (admin_metrics.go).
	admin.GET("/metrics", h.showAdminMetricsPage)
	admin.POST("/metrics/settings", h.saveMetricsSettings)
	// River's jobs (admin_jobs.go).
	admin.GET("/jobs", h.showAdminJobsPage)
	admin.POST("/jobs/:id/retry", h.changeAdminJob((*adminjobs.Service).Retry, "FlashAdminJobRetried"))
	admin.POST("/jobs/:id/cancel", h.changeAdminJob((*adminjobs.Service).Cancel, "FlashAdminJobCancelled"))
	// The mail server settings and their test email (admin_mail.go).
	admin.GET("/mail", h.showAdminMailPage)
	admin.POST("/mail", h.saveAdminMail)
	admin.POST("/mail/test", h.testAdminMail)
	// The operator alerts' channels, the networks webhooks may reach and
	// every channel's log (admin_webhooks.go).
	admin.GET("/notifications", h.showAdminWebhooksPage)
	admin.POST("/notifications/channels", h.createPlatformWebhook)
	admin.POST("/notifications/channels/:id/test", h.testPlatformWebhook)
	admin.POST("/notifications/channels/:id/delete", h.deletePlatformWebhook)
	admin.POST("/notifications/network", h.saveWebhookNetwork)
	// The sign-up policy and the invitations (admin_signup.go).
	admin.GET("/settings/sign-up", h.showAdminSignUpPage)
	admin.POST("/settings/sign-up", h.saveAdminSignUp)
	admin.POST("/settings/sign-up/invitations", h.createInvitation)
	admin.POST("/settings/sign-up/invitations/:id/resend", h.resendInvitation)
	admin.POST("/settings/sign-up/invitations/:id/revoke", h.revokeInvitation)
	// The sign-in providers (admin_sign_in.go).
	admin.GET("/settings/sign-in", h.showAdminSignInPage)
	admin.POST("/settings/sign-in", h.saveAdminSignIn)
	admin.POST("/settings/sign-in/test", h.testAdminSignIn)
	admin.POST("/settings/two-factor", h.saveAdminTwoFactor)
	// Branding and session settings (admin_branding.go).
	admin.GET("/settings/branding", h.showAdminBrandingPage)
	admin.POST("/settings/branding", h.saveAdminBranding)
	// Every user's clusters, one cluster with its metrics, and the
	// admin's actions on it (admin_clusters.go).
	admin.GET("/clusters", h.showAdminClustersPage)
	admin.GET("/clusters/:id", h.showAdminClusterPage)
	admin.GET("/clusters/:id/metrics", h.showAdminClusterPage)
	admin.GET("/clusters/:id/metrics.json", h.showAdminClusterMetricsJSON)
	for _, a := range adminClusterActions {
		admin.POST("/clusters/:id/"+a.path, h.changeAdminCluster(a))
	}
	// Plans (admin_plans.go).
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
