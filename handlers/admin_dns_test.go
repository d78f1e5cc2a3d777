package handlers_test

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/miekg/dns"
	"github.com/stretchr/testify/require"

	"github.com/kubebyon/kubebyon/handlers/handlerstest"
	"github.com/kubebyon/kubebyon/internal/checks"
	"github.com/kubebyon/kubebyon/internal/dnsrecords"
	"github.com/kubebyon/kubebyon/internal/testenv"
)

// dnsForm is the DNS form for the server given, in RFC 2136 mode.
func dnsForm(srv *testenv.DNSServer, addresses string) url.Values {
	return url.Values{
		"mode": {dnsrecords.ModeRFC2136}, "addresses": {addresses}, "resolver": {""},
		"server": {srv.Addr}, "zone": {srv.Zone}, "keyName": {srv.KeyName}, "keyAlgorithm": {srv.KeyAlgorithm},
		"ttl": {"60"}, "namespace": {"kubebyon-dns"},
	}
}

// TestAdminDNS: the admin sets the DNS mode on /admin/edge: bad fields
// are shown at their fields, a TSIG secret needs the admin's password,
// the check reports on the real DNS server, and the change is audited. A
// cluster's record is then published on that server, and its page's
// endpoint panel says so, and what the edges say of it, to its owner
// alone. Users who are not admins cannot change the settings.
func TestAdminDNS(t *testing.T) {
	t.Parallel()
	b := handlerstest.Setup(t)
	b.ConnectHost(t)
	srv := testenv.Knot(t, "clusters.test")
	admin, adminEmail := b.SignedUpAdmin(t, "dns-admin")
	user, _ := b.SignedUpUser(t, "dns-user")
	other, _ := b.SignedUpUser(t, "dns-other")

	resp := user.Post("/", "/admin/edge/dns", dnsForm(srv, "203.0.113.60"))
	require.Equal(t, http.StatusNotFound, resp.StatusCode)
	resp.Body.Close()

	code, body := admin.Get("/admin/edge")
	require.Equal(t, http.StatusOK, code)
	require.Contains(t, body, `data-testid="dns-form"`)
	require.Regexp(t, `<option value="none" selected>`, body)

	bad := dnsForm(srv, "203.0.113.60\nnot-an-ip")
	bad.Set("server", "ns1")
	resp = admin.Post("/admin/edge", "/admin/edge/dns", bad)
	require.Equal(t, http.StatusUnprocessableEntity, resp.StatusCode)
	page := handlerstest.ReadBody(t, resp)
	require.Contains(t, page, `data-testid="error-server"`)
	require.Contains(t, page, "Enter a host and port, such as ns1.example.com:53.")
	require.Contains(t, page, "Enter IP addresses (IPv4 or IPv6), one per line.")
	require.Contains(t, page, "not-an-ip", "what was typed is kept")

	form := dnsForm(srv, "203.0.113.60, 2001:db8::60")
	form.Set("keySecret", srv.KeySecret)
	resp = admin.Post("/admin/edge", "/admin/edge/dns", form)
	require.Equal(t, http.StatusUnprocessableEntity, resp.StatusCode)
	require.Contains(t, handlerstest.ReadBody(t, resp), "Enter your password to change the TSIG secret.")

	form.Set("keySecret", srv.KeySecret)
	form.Set("password", "password of dns-admin")
	resp = admin.Post("/admin/edge", "/admin/edge/dns", form)
	require.Equal(t, http.StatusSeeOther, resp.StatusCode, handlerstest.ReadBody(t, resp))
	_, body = admin.Get("/admin/edge")
	require.Contains(t, body, "DNS settings saved.")
	require.Contains(t, body, `data-testid="dns-key-secret-set"`)
	require.NotContains(t, body, srv.KeySecret)
	require.Contains(t, b.Audits(t, b.UserID(t, adminEmail)), dnsrecords.Action)

	// The check, as htmx asks for it.
	req, err := http.NewRequest(http.MethodPost, b.Server.URL+"/admin/edge/dns/check",
		strings.NewReader(url.Values{"_csrf": {admin.CSRF("/admin/edge")}}.Encode()))
	require.NoError(t, err)
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("HX-Request", "true")
	r, err := admin.HTTP.Do(req)
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, r.StatusCode)
	check := handlerstest.ReadBody(t, r)
	require.Contains(t, check, `data-ok="true"`, check)
	require.NotContains(t, check, "<html")
	// The check is recorded: the admin overview's checklist ticks it.
	require.Contains(t, b.Audits(t, b.UserID(t, adminEmail)), dnsrecords.CheckAction)
	_, body = admin.Get("/admin")
	require.Regexp(t, `data-testid="checklist-dns" data-done="true"`, body)

	cl := b.NewCluster(t, user, "dnsweb")
	name := cl.Slug + ".clusters.test"
	code, body = user.Get(fmt.Sprintf("/clusters/%d", cl.ID))
	require.Equal(t, http.StatusOK, code)
	require.Contains(t, body, fmt.Sprintf(`hx-get="/clusters/%d/endpoint"`, cl.ID))
	code, body = user.Get(fmt.Sprintf("/clusters/%d/endpoint", cl.ID))
	require.Equal(t, http.StatusOK, code)
	require.Contains(t, body, `data-dns-state="pending"`)
	require.Contains(t, body, `data-testid="cluster-edge-none"`)

	b.SyncDNS(t, cl.ID)
	require.ElementsMatch(t, []string{"203.0.113.60"}, srv.Lookup(t, name, dns.TypeA))
	require.ElementsMatch(t, []string{"2001:db8::60"}, srv.Lookup(t, name, dns.TypeAAAA))
	b.EdgeReport(t, "edge-down", cl.ID, 0, 2)
	b.EdgeReport(t, "edge-half", cl.ID, 1, 1)
	// Once the watcher has the version the edges report.
	require.Eventually(t, func() bool {
		_, body = user.Get(fmt.Sprintf("/clusters/%d/endpoint", cl.ID))
		return !strings.Contains(body, "updating")
	}, 10*time.Second, 50*time.Millisecond)
	require.Contains(t, body, `data-dns-state="published"`)
	require.Contains(t, body, name+" → 203.0.113.60, 2001:db8::60")
	require.Contains(t, body, `data-edge="edge-down" data-reached="false"`)
	require.Contains(t, body, `data-edge="edge-half" data-reached="true"`)
	require.Contains(t, body, "1 of 2 host nodes")

	code, _ = other.Get(fmt.Sprintf("/clusters/%d/endpoint", cl.ID))
	require.Equal(t, http.StatusNotFound, code)

	// A new API base domain moves every record now, not at its next check.
	dnsDue := func() time.Time {
		var due time.Time
		require.NoError(t, b.Pool.QueryRow(context.Background(), "SELECT due_at FROM cluster_checks WHERE cluster_id = $1 AND kind = $2",
			cl.ID, string(checks.DNSRecord)).Scan(&due))
		return due
	}
	require.True(t, dnsDue().After(time.Now().Add(time.Minute)), "published: next check in a while")
	resp = admin.Post("/admin/settings", "/admin/settings", handlerstest.FormWith(handlerstest.FullSettings(t), "apiBaseDomain", "apps.clusters.test"))
	require.Equal(t, http.StatusSeeOther, resp.StatusCode, handlerstest.ReadBody(t, resp))
	require.False(t, dnsDue().After(time.Now()), "due now")
}
