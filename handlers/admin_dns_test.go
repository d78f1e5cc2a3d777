package handlers_test

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/miekg/dns"
	"github.com/stretchr/testify/require"

	"github.com/kubebyon/kubebyon/internal/checks"
	"github.com/kubebyon/kubebyon/internal/dnsrecords"
	"github.com/kubebyon/kubebyon/internal/edge"
	"github.com/kubebyon/kubebyon/internal/settings"
	"github.com/kubebyon/kubebyon/internal/testenv"
	"github.com/kubebyon/kubebyon/queries"
)

// dnsForm is the DNS form for the server given, in RFC 2136 mode.
func dnsForm(srv *testenv.DNSServer, addresses string) url.Values {
	return url.Values{
		"mode": {dnsrecords.ModeRFC2136}, "addresses": {addresses}, "resolver": {""},
		"server": {srv.Addr}, "zone": {srv.Zone}, "keyName": {srv.KeyName}, "keyAlgorithm": {srv.KeyAlgorithm},
		"ttl": {"60"}, "namespace": {"kubebyon-dns"},
	}
}

// syncDNS works the cluster's DNS check as its job does
// (jobs.DNSRecordWorker): the sync, then its outcome recorded.
func (b *testBundle) syncDNS(t *testing.T, clusterID int64) {
	t.Helper()
	ctx := context.Background()
	next, err := (&dnsrecords.Service{Pool: b.pool, Box: b.box, KubeconfigPath: b.hostKubeconfig}).Sync(ctx, clusterID)
	require.NoError(t, err)
	require.NoError(t, checks.Recorder{Q: queries.New(b.pool)}.Done(ctx, clusterID, checks.DNSRecord, dnsrecords.Interval, next, nil))
}

// edgeReport records an edge's report that the cluster's API backend has
// up of up+down servers up, at the routes' current version.
func (b *testBundle) edgeReport(t *testing.T, name string, clusterID int64, up, down int) {
	t.Helper()
	ctx := context.Background()
	// The desired state as the database has it now (the watcher may be a
	// change behind).
	q := queries.New(b.pool)
	rt, err := settings.Load(ctx, q, b.box)
	require.NoError(t, err)
	st, err := edge.Desired(ctx, q, rt)
	require.NoError(t, err)
	var tokenID int64
	require.NoError(t, b.pool.QueryRow(ctx, `INSERT INTO edge_tokens (name, prefix, secret_hash) VALUES ($1, $2, 'x') RETURNING id`,
		name, "kbe_"+name).Scan(&tokenID))
	_, err = b.pool.Exec(ctx, `INSERT INTO edge_instances (token_id, name, applied_version, backends_down, down)
		VALUES ($1, $2, $3, 1, jsonb_build_array(jsonb_build_object('cluster_id', $4::bigint, 'backend', 'api', 'up', $5::int, 'down', $6::int)))`,
		tokenID, name, st.Version, clusterID, up, down)
	require.NoError(t, err)
}

// TestAdminDNS: the admin sets the DNS mode on /admin/edge: bad fields
// are shown at their fields, a TSIG secret needs the admin's password,
// the check reports on the real DNS server, and the change is audited. A
// cluster's record is then published on that server, and its page's
// endpoint panel says so, and what the edges say of it, to its owner
// alone. Users who are not admins cannot change the settings.
func TestAdminDNS(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.connectHost(t)
	srv := testenv.Knot(t, "clusters.test")
	admin, adminEmail := b.signedUpAdmin(t, "dns-admin")
	user, _ := b.signedUpUser(t, "dns-user")
	other, _ := b.signedUpUser(t, "dns-other")

	resp := user.post("/", "/admin/edge/dns", dnsForm(srv, "203.0.113.60"))
	require.Equal(t, http.StatusNotFound, resp.StatusCode)
	resp.Body.Close()

	code, body := admin.get("/admin/edge")
	require.Equal(t, http.StatusOK, code)
	require.Contains(t, body, `data-testid="dns-form"`)
	require.Regexp(t, `<option value="none" selected>`, body)

	bad := dnsForm(srv, "203.0.113.60\nnot-an-ip")
	bad.Set("server", "ns1")
	resp = admin.post("/admin/edge", "/admin/edge/dns", bad)
	require.Equal(t, http.StatusUnprocessableEntity, resp.StatusCode)
	page := readBody(t, resp)
	require.Contains(t, page, `data-testid="error-server"`)
	require.Contains(t, page, "Enter a host and port, such as ns1.example.com:53.")
	require.Contains(t, page, "Enter IP addresses (IPv4 or IPv6), one per line.")
	require.Contains(t, page, "not-an-ip", "what was typed is kept")

	form := dnsForm(srv, "203.0.113.60, 2001:db8::60")
	form.Set("keySecret", srv.KeySecret)
	resp = admin.post("/admin/edge", "/admin/edge/dns", form)
	require.Equal(t, http.StatusUnprocessableEntity, resp.StatusCode)
	require.Contains(t, readBody(t, resp), "Enter your password to change the TSIG secret.")

	form.Set("keySecret", srv.KeySecret)
	form.Set("password", "password of dns-admin")
	resp = admin.post("/admin/edge", "/admin/edge/dns", form)
	require.Equal(t, http.StatusSeeOther, resp.StatusCode, readBody(t, resp))
	_, body = admin.get("/admin/edge")
	require.Contains(t, body, "DNS settings saved.")
	require.Contains(t, body, `data-testid="dns-key-secret-set"`)
	require.NotContains(t, body, srv.KeySecret)
	require.Contains(t, b.audits(t, b.userID(t, adminEmail)), dnsrecords.Action)

	// The check, as htmx asks for it.
	req, err := http.NewRequest(http.MethodPost, b.server.URL+"/admin/edge/dns/check",
		strings.NewReader(url.Values{"_csrf": {admin.csrf("/admin/edge")}}.Encode()))
	require.NoError(t, err)
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("HX-Request", "true")
	r, err := admin.http.Do(req)
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, r.StatusCode)
	check := readBody(t, r)
	require.Contains(t, check, `data-ok="true"`, check)
	require.NotContains(t, check, "<html")

	cl := b.newCluster(t, user, "dnsweb")
	name := cl.Slug + ".clusters.test"
	code, body = user.get(fmt.Sprintf("/clusters/%d", cl.ID))
	require.Equal(t, http.StatusOK, code)
	require.Contains(t, body, fmt.Sprintf(`hx-get="/clusters/%d/endpoint"`, cl.ID))
	code, body = user.get(fmt.Sprintf("/clusters/%d/endpoint", cl.ID))
	require.Equal(t, http.StatusOK, code)
	require.Contains(t, body, `data-dns-state="pending"`)
	require.Contains(t, body, `data-testid="cluster-edge-none"`)

	b.syncDNS(t, cl.ID)
	require.ElementsMatch(t, []string{"203.0.113.60"}, srv.Lookup(t, name, dns.TypeA))
	require.ElementsMatch(t, []string{"2001:db8::60"}, srv.Lookup(t, name, dns.TypeAAAA))
	b.edgeReport(t, "edge-down", cl.ID, 0, 2)
	b.edgeReport(t, "edge-half", cl.ID, 1, 1)
	// Once the watcher has the version the edges report.
	require.Eventually(t, func() bool {
		_, body = user.get(fmt.Sprintf("/clusters/%d/endpoint", cl.ID))
		return !strings.Contains(body, "updating")
	}, 10*time.Second, 50*time.Millisecond)
	require.Contains(t, body, `data-dns-state="published"`)
	require.Contains(t, body, name+" → 203.0.113.60, 2001:db8::60")
	require.Contains(t, body, `data-edge="edge-down" data-reached="false"`)
	require.Contains(t, body, `data-edge="edge-half" data-reached="true"`)
	require.Contains(t, body, "1 of 2 host nodes")

	code, _ = other.get(fmt.Sprintf("/clusters/%d/endpoint", cl.ID))
	require.Equal(t, http.StatusNotFound, code)

	// A new API base domain moves every record now, not at its next check.
	dnsDue := func() time.Time {
		var due time.Time
		require.NoError(t, b.pool.QueryRow(context.Background(), "SELECT due_at FROM cluster_checks WHERE cluster_id = $1 AND kind = $2",
			cl.ID, string(checks.DNSRecord)).Scan(&due))
		return due
	}
	require.True(t, dnsDue().After(time.Now().Add(time.Minute)), "published: next check in a while")
	resp = admin.post("/admin/settings", "/admin/settings", with(fullSettings(t), "apiBaseDomain", "apps.clusters.test"))
	require.Equal(t, http.StatusSeeOther, resp.StatusCode, readBody(t, resp))
	require.False(t, dnsDue().After(time.Now()), "due now")
}

// TestClusterDNSInBrowser: in the browser, the admin switches DNS to RFC
// 2136 and checks it; the cluster's owner then sees on the cluster page
// that its name is published and that the edge reaches it.
func TestClusterDNSInBrowser(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.connectHost(t)
	srv := testenv.Knot(t, "clusters.test")
	_, adminEmail := b.signedUpAdmin(t, "dns-clicker")
	user, userEmail := b.signedUpUser(t, "dns-owner")
	cl := b.newCluster(t, user, "dnsshop")

	ctx := testenv.Browser(t)
	browserSignIn(t, ctx, b.server.URL, adminEmail, "password of dns-clicker")
	var result string
	require.NoError(t, chromedp.Run(ctx,
		chromedp.Navigate(b.server.URL+"/admin/edge"),
		chromedp.SetValue(`[data-testid="dns-mode"]`, dnsrecords.ModeRFC2136, chromedp.ByQuery),
		chromedp.SendKeys(`[data-testid="dns-addresses"]`, "203.0.113.70", chromedp.ByQuery),
		chromedp.SetValue(`#server`, srv.Addr, chromedp.ByQuery),
		chromedp.SetValue(`#zone`, srv.Zone, chromedp.ByQuery),
		chromedp.SetValue(`#keyName`, srv.KeyName, chromedp.ByQuery),
		chromedp.SendKeys(`#keySecret`, srv.KeySecret, chromedp.ByQuery),
		chromedp.SendKeys(`[data-testid="dns-form"] #password`, "password of dns-clicker", chromedp.ByQuery),
		chromedp.Click(`[data-testid="dns-save"]`, chromedp.ByQuery),
		chromedp.WaitVisible(`[data-testid="dns-key-secret-set"]`, chromedp.ByQuery),
		chromedp.Click(`[data-testid="dns-check"]`, chromedp.ByQuery),
		chromedp.WaitVisible(`[data-testid="dns-check-result"]`, chromedp.ByQuery),
		chromedp.Text(`[data-testid="dns-check-result"]`, &result, chromedp.ByQuery),
	))
	require.Contains(t, result, "DNS works")

	b.syncDNS(t, cl.ID)
	b.edgeReport(t, "edge-one", cl.ID, 2, 0)
	owner := testenv.Browser(t)
	browserSignIn(t, owner, b.server.URL, userEmail, "password of dns-owner")
	var dnsState, edgeState string
	require.NoError(t, chromedp.Run(owner,
		chromedp.Navigate(fmt.Sprintf("%s/clusters/%d", b.server.URL, cl.ID)),
		chromedp.WaitVisible(`[data-testid="cluster-edge"][data-reached="true"] [data-status="Ready"]`, chromedp.ByQuery),
		chromedp.Text(`[data-testid="cluster-endpoint-status"]`, &dnsState, chromedp.ByQuery),
		chromedp.Text(`[data-testid="cluster-edge"]`, &edgeState, chromedp.ByQuery),
	))
	require.Contains(t, dnsState, "published")
	require.Contains(t, dnsState, cl.Slug+".clusters.test → 203.0.113.70")
	require.Contains(t, edgeState, "edge-one")
	require.Contains(t, edgeState, "reaches it")
}
