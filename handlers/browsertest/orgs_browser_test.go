package browsertest_test

import (
	"context"
	"fmt"
	"regexp"
	"strconv"
	"testing"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/require"

	"github.com/kubebyon/kubebyon/handlers/handlerstest"
	"github.com/kubebyon/kubebyon/internal/testenv"
	"github.com/kubebyon/kubebyon/queries"
)

// orgInvitationPath is the path of the link an organization invitation
// mails.
var orgInvitationPath = regexp.MustCompile(`/orgs/invitations/[A-Za-z0-9]+`)

// orgPagePath is an organization's page, whose id it gives.
var orgPagePath = regexp.MustCompile(`/orgs/(\d+)$`)

// clusterWriteActions are the data-testids of what changes a cluster, on
// its page (with its managed ingress panel), its join tokens page and its
// nodes page: a viewer is offered none of them, a member all of those the
// cluster's state allows.
var clusterWriteActions = []string{
	"cluster-create-link", "dashboard-create-cluster",
	"cluster-settings", "cluster-add-node", "first-node-create", "cluster-delete", "cluster-retry", "cluster-kubeconfig",
	"cluster-ingress-mode", "cluster-ingress-mode-save", "cluster-ingress-enable", "cluster-ingress-disable",
	"cluster-ingress-retry", "cluster-ingress-edge-retry", "cluster-hostname-form", "cluster-hostname-remove", "cluster-hostnames-check",
	"join-token-form", "join-token-create", "join-token-revoke",
	"node-actions", "node-cordon", "node-uncordon", "node-drain", "node-delete", "node-ingress-form",
	"stale-cleanup-form", "stale-cleanup-save",
}

// orgWriteActions are those of an organization's page that manage it.
var orgWriteActions = []string{
	"org-invite-form", "org-invite-submit", "org-role-form", "org-member-role-select", "org-member-role-change",
	"org-member-remove", "org-invitation-revoke",
}

// testIDs are the data-testids on the tab's page.
func testIDs(t *testing.T, ctx context.Context) []string {
	t.Helper()
	var ids []string
	require.NoError(t, chromedp.Run(ctx,
		chromedp.Evaluate(`[...document.querySelectorAll('[data-testid]')].map(e => e.dataset.testid)`, &ids)))
	return ids
}

// TestOrganizationsInBrowser: the owner makes an organization from the
// menu, a cluster in it, and invites a viewer and a member by email. Each
// opens the mailed link in a browser of their own, signs in, accepts, and
// works in the organization: the menu names it, the cluster list shows
// the team's cluster; the viewer is offered no action that changes the
// cluster or the organization, the member the cluster's. Switching to the
// personal organization hides the team's cluster, switching back shows it.
func TestOrganizationsInBrowser(t *testing.T) {
	t.Parallel()
	b := handlerstest.Setup(t)
	b.ConnectHost(t)
	_, ownerEmail := b.SignedUpUser(t, "orgowner")
	_, viewerEmail := b.SignedUpUser(t, "orgviewer")
	_, memberEmail := b.SignedUpUser(t, "orgmember")
	base := b.Server.URL

	// The owner makes the organization from the menu: it is the one the
	// console works in from then on.
	owner := testenv.Browser(t)
	browserSignIn(t, owner, base, ownerEmail, "password of orgowner")
	var location, menu string
	require.NoError(t, chromedp.Run(owner,
		chromedp.WaitVisible(`[data-testid="nav-orgs"]`, chromedp.ByQuery),
		chromedp.Click(`[data-testid="nav-orgs"]`, chromedp.ByQuery),
		chromedp.WaitVisible(`[data-testid="org-form"]`, chromedp.ByQuery),
		chromedp.SendKeys(`[data-testid="org-form"] #name`, "Blue team", chromedp.ByQuery),
		chromedp.Click(`[data-testid="org-create"]`, chromedp.ByQuery),
		chromedp.WaitVisible(`[data-testid="org-title"]`, chromedp.ByQuery),
		chromedp.Location(&location),
		chromedp.Text(`[data-testid="nav-orgs"]`, &menu, chromedp.ByQuery),
	))
	require.Equal(t, "Blue team", menu)
	m := orgPagePath.FindStringSubmatch(location)
	require.NotNil(t, m, location)
	orgID, err := strconv.ParseInt(m[1], 10, 64)
	require.NoError(t, err)
	orgPage := fmt.Sprintf("%s/orgs/%d", base, orgID)

	// Its cluster, made in the form while the owner works in it.
	require.NoError(t, chromedp.Run(owner,
		chromedp.Click(`[data-testid="nav-clusters"]`, chromedp.ByQuery),
		chromedp.WaitVisible(`[data-testid="clusters-empty"]`, chromedp.ByQuery),
		chromedp.Click(`[data-testid="cluster-create-link"]`, chromedp.ByQuery),
		chromedp.WaitVisible(`[data-testid="cluster-form"]`, chromedp.ByQuery),
		chromedp.SendKeys(`#name`, "teamwork", chromedp.ByQuery),
		chromedp.Submit(`[data-testid="cluster-form"]`, chromedp.ByQuery),
		chromedp.WaitVisible(`[data-testid="page-title"]`, chromedp.ByQuery),
		chromedp.Location(&location),
	))
	m = clusterPageURL.FindStringSubmatch(location)
	require.NotNil(t, m, location)
	clusterID, err := strconv.ParseInt(m[1], 10, 64)
	require.NoError(t, err)
	cl := b.Cluster(t, clusterID)
	require.Equal(t, orgID, cl.OrgID, "the cluster is the organization's")
	// The reconcile worker's part: the cluster is ready, with a join
	// token, so that its pages offer all they can.
	b.MarkReady(t, cl)
	_, err = queries.New(b.Pool).JoinTokenCreate(context.Background(), queries.JoinTokenCreateParams{
		ClusterID: clusterID, TokenID: "tmwork", TokenHash: b.Box.MAC("join-token", []byte("teamwork")),
		SealedToken: b.Box.Seal([]byte("tmwork.0123456789abcdef")),
	})
	require.NoError(t, err)

	// The invitations, from the organization's page.
	for _, inv := range []struct{ email, role string }{{viewerEmail, "viewer"}, {memberEmail, "member"}} {
		require.NoError(t, chromedp.Run(owner,
			chromedp.Navigate(orgPage),
			chromedp.WaitVisible(`[data-testid="org-invite-form"]`, chromedp.ByQuery),
			chromedp.SendKeys(`[data-testid="org-invite-email"]`, inv.email, chromedp.ByQuery),
			chromedp.SetValue(`[data-testid="org-invite-role"]`, inv.role, chromedp.ByQuery),
			chromedp.Click(`[data-testid="org-invite-submit"]`, chromedp.ByQuery),
			chromedp.WaitVisible(`[data-testid="flash"]`, chromedp.ByQuery),
			chromedp.WaitVisible(fmt.Sprintf(`//td[@data-testid="org-invitation-email"][text()=%q]`, inv.email), chromedp.BySearch),
		), inv.role)
	}

	// Each opens the link in a browser of their own, signed out: the
	// sign-in leads back to it, and they accept.
	join := func(email, password string) context.Context {
		t.Helper()
		msg := b.WaitMail(t, email, "You are invited to Blue team on KubeBYON")
		link := orgInvitationPath.FindString(msg.Text)
		require.NotEmpty(t, link, msg.Text)
		ctx := testenv.Browser(t)
		var text, flash, menu string
		require.NoError(t, chromedp.Run(ctx,
			chromedp.Navigate(base+link),
			chromedp.WaitVisible(`[data-testid="login-form"]`, chromedp.ByQuery),
			chromedp.SendKeys(`#email`, email, chromedp.ByQuery),
			chromedp.SendKeys(`#password`, password, chromedp.ByQuery),
			chromedp.Submit(`[data-testid="login-form"]`, chromedp.ByQuery),
			chromedp.WaitVisible(`[data-testid="org-invitation-accept"]`, chromedp.ByQuery),
			chromedp.Text(`[data-testid="org-invitation-text"]`, &text, chromedp.ByQuery),
			chromedp.Click(`[data-testid="org-invitation-accept"]`, chromedp.ByQuery),
			chromedp.WaitVisible(`[data-testid="org-my-role"]`, chromedp.ByQuery),
			chromedp.Location(&location),
			chromedp.Text(`[data-testid="flash"]`, &flash, chromedp.ByQuery),
			chromedp.Text(`[data-testid="nav-orgs"]`, &menu, chromedp.ByQuery),
		), email)
		require.Contains(t, text, "Blue team")
		require.Equal(t, orgPage, location)
		require.Contains(t, flash, "You joined the organization.")
		require.Equal(t, "Blue team", menu, "accepting works in the organization")
		return ctx
	}
	viewer := join(viewerEmail, "password of orgviewer")

	// The viewer switches to their personal organization from the menu:
	// the team's cluster is not in the list there; and back. (Each step
	// waits for what only the next page shows.)
	switchTo := func(ctx context.Context, org string) {
		t.Helper()
		row := fmt.Sprintf(`//tr[.//*[@data-testid="org-name"][text()=%q]]`, org)
		require.NoError(t, chromedp.Run(ctx,
			chromedp.Click(`[data-testid="nav-orgs"]`, chromedp.ByQuery),
			chromedp.WaitVisible(`[data-testid="org-form"]`, chromedp.ByQuery),
			chromedp.Click(row+`//*[@data-testid="org-switch"]`, chromedp.BySearch),
			chromedp.WaitVisible(row+`//*[@data-testid="org-current"]`, chromedp.BySearch),
			chromedp.Text(`[data-testid="nav-orgs"]`, &menu, chromedp.ByQuery),
		), org)
		require.Equal(t, org, menu)
	}
	var personal string
	require.NoError(t, chromedp.Run(viewer,
		chromedp.Click(`[data-testid="nav-orgs"]`, chromedp.ByQuery),
		chromedp.WaitVisible(`[data-testid="org-form"]`, chromedp.ByQuery),
		chromedp.Text(`//tr[.//*[@data-testid="org-personal"]]//*[@data-testid="org-name"]`, &personal, chromedp.BySearch),
		chromedp.Click(`[data-testid="nav-clusters"]`, chromedp.ByQuery),
		chromedp.WaitVisible(`[data-testid="clusters"]`, chromedp.ByQuery),
	))
	require.NotEqual(t, "Blue team", personal)
	switchTo(viewer, personal)
	var clusters string
	require.NoError(t, chromedp.Run(viewer,
		chromedp.Click(`[data-testid="nav-clusters"]`, chromedp.ByQuery),
		chromedp.WaitVisible(`[data-testid="clusters-empty"]`, chromedp.ByQuery),
		chromedp.Text(`main`, &clusters, chromedp.ByQuery),
	))
	require.NotContains(t, clusters, "teamwork", "the team's cluster is not the personal organization's")
	switchTo(viewer, "Blue team")

	// As a viewer: the cluster is listed; its pages, and the
	// organization's, offer nothing that changes them.
	clusterPage := fmt.Sprintf("%s/clusters/%d", base, clusterID)
	look := func(ctx context.Context, who string) map[string][]string {
		t.Helper()
		seen := map[string][]string{}
		require.NoError(t, chromedp.Run(ctx,
			chromedp.Click(`[data-testid="nav-clusters"]`, chromedp.ByQuery),
			chromedp.WaitVisible(`[data-testid="clusters"]`, chromedp.ByQuery),
			chromedp.Text(`[data-testid="clusters"]`, &clusters, chromedp.ByQuery),
		), who)
		require.Contains(t, clusters, "teamwork", who)
		seen["/clusters"] = testIDs(t, ctx)
		require.NoError(t, chromedp.Run(ctx,
			chromedp.Click(`//a[@data-testid="cluster-link"][text()="teamwork"]`, chromedp.BySearch),
			chromedp.WaitVisible(`[data-testid="page-title"]`, chromedp.ByQuery),
			// The panel htmx loads after the page.
			chromedp.WaitNotPresent(`[data-testid="cluster-endpoint-panel"] [aria-busy]`, chromedp.ByQuery),
			chromedp.Location(&location),
		), who)
		require.Equal(t, clusterPage, location, who)
		seen["cluster"] = testIDs(t, ctx)
		require.NoError(t, chromedp.Run(ctx,
			chromedp.Navigate(clusterPage+"/ingress"),
			chromedp.WaitVisible(`[data-testid="cluster-ingress"]`, chromedp.ByQuery),
		), who)
		seen["ingress"] = testIDs(t, ctx)
		require.NoError(t, chromedp.Run(ctx,
			chromedp.Click(`[data-testid="cluster-join-tokens"]`, chromedp.ByQuery),
			chromedp.WaitVisible(`[data-testid="join-token"]`, chromedp.ByQuery),
		), who)
		seen["tokens"] = testIDs(t, ctx)
		// Opened by its address: a click on the cluster page's link can
		// land while htmx swaps the page's panels, and be lost.
		require.NoError(t, chromedp.Run(ctx,
			chromedp.Navigate(clusterPage+"/nodes"),
			chromedp.WaitVisible(`[data-testid="nodes-table"]`, chromedp.ByQuery),
		), who)
		seen["nodes"] = testIDs(t, ctx)
		require.NoError(t, chromedp.Run(ctx,
			chromedp.Navigate(orgPage),
			chromedp.WaitVisible(`[data-testid="org-members"]`, chromedp.ByQuery),
		), who)
		seen["org"] = testIDs(t, ctx)
		return seen
	}
	seen := look(viewer, "viewer")
	for page, ids := range seen {
		for _, a := range append(clusterWriteActions, orgWriteActions...) {
			require.NotContains(t, ids, a, "the viewer is offered %s on the %s page", a, page)
		}
	}
	require.Contains(t, seen["org"], "org-leave", "a viewer may leave")
	var role string
	require.NoError(t, chromedp.Run(viewer, chromedp.Text(`[data-testid="org-my-role"]`, &role, chromedp.ByQuery)))
	require.Equal(t, "Your role: Viewer.", role)

	// The member is offered the cluster's actions, not the organization's.
	member := join(memberEmail, "password of orgmember")
	seen = look(member, "member")
	for page, actions := range map[string][]string{
		"/clusters": {"cluster-create-link"},
		"cluster":   {"cluster-settings", "cluster-add-node", "cluster-kubeconfig"},
		"ingress":   {"cluster-ingress-mode-save"},
		"tokens":    {"join-token-form", "join-token-revoke"},
	} {
		for _, a := range actions {
			require.Contains(t, seen[page], a, "the member is offered %s on the %s page", a, page)
		}
	}
	// and the cluster's Settings, with Delete and the stale-node clean-up.
	require.NoError(t, chromedp.Run(member,
		chromedp.Navigate(clusterPage+"/edit"),
		chromedp.WaitVisible(`[data-testid="cluster-danger-zone"]`, chromedp.ByQuery),
	))
	settings := testIDs(t, member)
	for _, a := range []string{"cluster-form", "stale-cleanup-form", "cluster-delete"} {
		require.Contains(t, settings, a, "the member is offered %s in Settings", a)
	}
	for _, a := range orgWriteActions {
		require.NotContains(t, seen["org"], a, "a member does not manage the organization")
	}

	// The owner sees both invitations accepted.
	var states []string
	require.NoError(t, chromedp.Run(owner,
		chromedp.Navigate(orgPage),
		chromedp.WaitVisible(`[data-testid="org-invitations"]`, chromedp.ByQuery),
		chromedp.Evaluate(`[...document.querySelectorAll('[data-testid="org-invitation-state"]')].map(e => e.textContent.trim())`, &states),
	))
	require.Equal(t, []string{"Accepted", "Accepted"}, states)
}
