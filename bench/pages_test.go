package bench

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgtype"
	"github.com/stretchr/testify/require"

	"github.com/kubebyon/kubebyon/internal/adminauth"
	"github.com/kubebyon/kubebyon/internal/passwords"
	"github.com/kubebyon/kubebyon/internal/testenv"
	"github.com/kubebyon/kubebyon/queries"
)

const (
	// pagesBenchUsers and pagesBenchClusters are the platform's size: the
	// signed-in users' pages must not slow down with it.
	pagesBenchUsers    = 1_000
	pagesBenchClusters = 10_000
	// pagesBenchBrowsers sign in, one per load goroutine, each as a user
	// of its own with pagesBenchOwn clusters.
	pagesBenchBrowsers = joinBenchConcurrency
	pagesBenchOwn      = 5
	// pagesBenchEvents is how many events each cluster has recorded, and
	// pagesBenchAudit how many audit rows each signed-in user has left.
	pagesBenchEvents = 20
	pagesBenchAudit  = 5_000
	// The cluster list's latency is measured at pagesFixedRate requests
	// per second for pagesFixedDuration.
	pagesFixedRate     = 500
	pagesFixedDuration = 20 * time.Second
)

var pagesCSRF = regexp.MustCompile(`name="_csrf" value="([^"]+)"`)

// BenchmarkPages serves the real handlers with pagesBenchUsers users and
// pagesBenchClusters clusters (ten recorded nodes each, joined with the
// cluster's one join token, and pagesBenchEvents events) in the database,
// signs in pagesBenchBrowsers browsers (each a user with pagesBenchOwn
// clusters; every other one an admin), then loads from all of them at once
// each of the signed-in pages issue 10 names: the cluster list, a
// cluster's page, its nodes page, the dashboard, and (the admins)
// /admin/users; each in slices alternating with /healthz (no database,
// no session) as its baseline (pairedLoad), benchRounds times. It reports
// requests per second, p50/p99 latency and CPU per request of each (the
// last round's), each page's throughput as the median percentage of
// /healthz's over every slice pair, and the cluster list's p50/p99 latency
// at pagesFixedRate requests per second.
func BenchmarkPages(b *testing.B) {
	ctx := context.Background()
	pool := testenv.DB(b)
	q := queries.New(pool)

	// The crowd: users with ten clusters each, none of them signed in.
	_, err := pool.Exec(ctx, `
		INSERT INTO users (email, name, email_verified_at)
		SELECT 'crowd' || i || '@example.com', 'Crowd ' || i, now() FROM generate_series(1, $1::int) i`, pagesBenchUsers-pagesBenchBrowsers)
	require.NoError(b, err)
	_, err = pool.Exec(ctx, `
		INSERT INTO clusters (owner_id, name, slug, kubernetes_version, public_access_mode, status, endpoint)
		SELECT u.id, 'c' || i, 'crowd-' || u.id || '-' || i, 'v1.34.0', 'loadbalancer', 'ready', 'crowd.bench.test:443'
		FROM users u CROSS JOIN generate_series(1, $1::int) i WHERE u.email LIKE 'crowd%'`,
		(pagesBenchClusters-pagesBenchBrowsers*pagesBenchOwn)/(pagesBenchUsers-pagesBenchBrowsers))
	require.NoError(b, err)

	hash, err := passwords.Hash("bench password")
	require.NoError(b, err)
	type browser struct {
		email   string
		cluster int64 // the first of the user's clusters
	}
	var browsers []browser
	for i := range pagesBenchBrowsers {
		// Half the browsers are admins, for /admin/users.
		role := adminauth.RoleUser
		if i%2 == 1 {
			role = adminauth.RoleAdmin
		}
		u, err := q.UserCreate(ctx, queries.UserCreateParams{
			Email: fmt.Sprintf("pages%d@example.com", i), Name: fmt.Sprintf("Pages %d", i),
			PasswordHash: pgtype.Text{String: hash, Valid: true}, Role: role,
			EmailVerifiedAt: pgtype.Timestamptz{Time: time.Now(), Valid: true},
		})
		require.NoError(b, err)
		for j := range pagesBenchOwn {
			cl, err := q.ClusterCreate(ctx, queries.ClusterCreateParams{OwnerID: u.ID, Name: fmt.Sprintf("mine-%d", j), Slug: fmt.Sprintf("pages-%d-%d", i, j), KubernetesVersion: "v1.34.0", PublicAccessMode: "loadbalancer"})
			require.NoError(b, err)
			_, err = q.ClusterMarkReady(ctx, queries.ClusterMarkReadyParams{ID: cl.ID, Endpoint: cl.Slug + ".bench.test:443", Generation: cl.Generation})
			require.NoError(b, err)
			cl, err = q.ClusterGetByID(ctx, cl.ID)
			require.NoError(b, err)
			require.NoError(b, q.ClusterSetCACert(ctx, queries.ClusterSetCACertParams{CaCert: string(testenv.SelfSignedCA(b, "bench cluster CA")), ID: cl.ID, UpdatedAt: cl.UpdatedAt}))
			if j == 0 {
				browsers = append(browsers, browser{email: u.Email, cluster: cl.ID})
			}
		}
	}
	// Every cluster's nodes as the health check records them: ten each.
	_, err = pool.Exec(ctx, `INSERT INTO nodes (cluster_id, name, ready, conditions, kubelet_version, addresses)
		SELECT c.id, 'node-' || n, true, '[{"type":"Ready","status":"True"}]', 'v1.34.0', '[{"type":"InternalIP","address":"10.0.0.1"}]'
		FROM clusters c CROSS JOIN generate_series(1, 10) n`)
	require.NoError(b, err)
	// A join token per cluster, which its nodes joined with.
	_, err = pool.Exec(ctx, `INSERT INTO join_tokens (cluster_id, token_id, token_hash, sealed_token, description)
		SELECT c.id, lpad(to_hex(c.id), 6, '0'), md5(c.id::text), md5(c.id::text), 'rack ' || c.id FROM clusters c`)
	require.NoError(b, err)
	_, err = pool.Exec(ctx, `INSERT INTO join_token_nodes (token_id, node_name, csr_name, registered_at)
		SELECT t.id, n.name, 'csr-' || n.name, now() FROM join_tokens t JOIN nodes n ON n.cluster_id = t.cluster_id`)
	require.NoError(b, err)
	// The node rows name their token, as the health check writes them.
	_, err = pool.Exec(ctx, `UPDATE nodes SET join_token_id = t.id FROM join_tokens t WHERE t.cluster_id = nodes.cluster_id`)
	require.NoError(b, err)
	// Every cluster's history as the reconcile job and its owner leave it:
	// pagesBenchEvents events, its creation and a kubeconfig download in
	// the audit log, and ten notifications for each user (half unread),
	// so that the pages read and show what they would on a platform that
	// has run for a while.
	_, err = pool.Exec(ctx, `INSERT INTO cluster_events (cluster_id, level, reason, message, created_at)
		SELECT c.id, 'info', (ARRAY['Provisioning', 'Installed', 'Ready', 'Updating', 'NodeJoined'])[1 + g % 5],
		       'Event ' || g || ' of cluster ' || c.name, now() - make_interval(mins => $1 - g)
		FROM clusters c CROSS JOIN generate_series(1, $1::int) g`, pagesBenchEvents)
	require.NoError(b, err)
	_, err = pool.Exec(ctx, `INSERT INTO audit_events (actor_id, action, target_type, target_id)
		SELECT c.owner_id, a, 'cluster', c.id::text
		FROM clusters c CROSS JOIN unnest(ARRAY['cluster.create', 'cluster.kubeconfig_download']) a`)
	require.NoError(b, err)
	// The signed-in users drive their clusters through the API too: each
	// has left pagesBenchAudit more audit rows.
	_, err = pool.Exec(ctx, `INSERT INTO audit_events (actor_id, action, target_type, target_id)
		SELECT c.owner_id, 'cluster.update', 'cluster', c.id::text
		FROM clusters c JOIN users u ON u.id = c.owner_id CROSS JOIN generate_series(1, $1::int / $2::int)
		WHERE u.email LIKE 'pages%'`, pagesBenchAudit, pagesBenchOwn)
	require.NoError(b, err)
	_, err = pool.Exec(ctx, `INSERT INTO notifications (user_id, kind, title, read_at)
		SELECT u.id, 'cluster_ready', 'Cluster ' || g || ' is ready', CASE WHEN g % 2 = 0 THEN now() END
		FROM users u CROSS JOIN generate_series(1, 10) g`)
	require.NoError(b, err)
	_, err = pool.Exec(ctx, "VACUUM ANALYZE")
	require.NoError(b, err)

	srv := benchServer(b, pool, bytes.Repeat([]byte{8}, 32))
	baseURL := srv.url
	transport := &http.Transport{
		MaxIdleConns: joinBenchConcurrency, MaxIdleConnsPerHost: joinBenchConcurrency,
		ForceAttemptHTTP2: false, IdleConnTimeout: time.Minute,
	}
	hc := &http.Client{Transport: transport}

	// Each browser signs in through the login form, as a person would; its
	// cookies then go with every page request it makes.
	cookies := make([]string, len(browsers))
	for i, br := range browsers {
		jar, err := cookiejar.New(nil)
		require.NoError(b, err)
		bc := &http.Client{Transport: transport, Jar: jar, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
		resp, err := bc.Get(baseURL + "/login")
		require.NoError(b, err)
		page, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		m := pagesCSRF.FindSubmatch(page)
		require.NotNil(b, m, "no CSRF token on /login")
		resp, err = bc.PostForm(baseURL+"/login", url.Values{"_csrf": {string(m[1])}, "email": {br.email}, "password": {"bench password"}})
		require.NoError(b, err)
		resp.Body.Close()
		require.Equal(b, http.StatusSeeOther, resp.StatusCode, "sign-in of %s", br.email)
		u, _ := url.Parse(baseURL)
		var header []string
		for _, c := range jar.Cookies(u) {
			header = append(header, c.Name+"="+c.Value)
		}
		cookies[i] = strings.Join(header, "; ")

		req, _ := http.NewRequest(http.MethodGet, baseURL+"/clusters", nil)
		req.Header.Set("Cookie", cookies[i])
		resp, err = hc.Do(req)
		require.NoError(b, err)
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		require.Equal(b, http.StatusOK, resp.StatusCode)
		require.Contains(b, string(body), "mine-4", "the page measured is the user's cluster list")
		require.Contains(b, string(body), fmt.Sprintf("pages-%d-0", i))

		req, _ = http.NewRequest(http.MethodGet, fmt.Sprintf("%s/clusters/%d/nodes", baseURL, br.cluster), nil)
		req.Header.Set("Cookie", cookies[i])
		resp, err = hc.Do(req)
		require.NoError(b, err)
		body, _ = io.ReadAll(resp.Body)
		resp.Body.Close()
		require.Equal(b, http.StatusOK, resp.StatusCode)
		require.Equal(b, 10, strings.Count(string(body), `data-testid="node-row"`), "the page measured lists the cluster's nodes")
		require.Contains(b, string(body), fmt.Sprintf("rack %d", br.cluster), "with the token they joined with")
	}

	// The pages measured, each asked by every browser that may see it.
	pages := []struct {
		name   string
		path   func(br browser) string
		admins bool
	}{
		{"clusters", func(browser) string { return "/clusters" }, false},
		{"detail", func(br browser) string { return fmt.Sprintf("/clusters/%d", br.cluster) }, false},
		{"nodes", func(br browser) string { return fmt.Sprintf("/clusters/%d/nodes", br.cluster) }, false},
		{"dashboard", func(browser) string { return "/" }, false},
		{"adminusers", func(browser) string { return "/admin/users" }, true},
	}
	type asker struct {
		cookie string
		br     browser
	}
	for i := 0; i < b.N; i++ {
		b.ResetTimer()
		results := map[string]loadResult{}
		ratios := map[string][]float64{}
		for range benchRounds {
			for _, p := range pages {
				if only := os.Getenv("BENCH_PAGES"); only != "" && !slices.Contains(strings.Split(only, ","), p.name) {
					continue
				}
				var askers []asker
				for j, br := range browsers {
					if !p.admins || j%2 == 1 {
						askers = append(askers, asker{cookies[j], br})
					}
				}
				health, r, pr := pairedLoad(b, srv, p.name, hc, func(int) *http.Request {
					req, _ := http.NewRequest(http.MethodGet, baseURL+"/healthz", nil)
					return req
				}, func(n int) *http.Request {
					a := askers[n%len(askers)]
					req, _ := http.NewRequest(http.MethodGet, baseURL+p.path(a.br), nil)
					req.Header.Set("Cookie", a.cookie)
					req.Header.Set("Accept-Encoding", "gzip")
					return req
				})
				for name, r := range map[string]loadResult{p.name: r, "healthz": health} {
					require.Equal(b, joinBenchRequests, r.ok, "%s: %d of %d answered 200 (statuses %v)", name, r.ok, joinBenchRequests, r.statuses)
				}
				results[p.name], results["healthz"] = r, health
				ratios[p.name] = append(ratios[p.name], pr...)
			}
		}
		// The cluster list at a fixed rate, as a busy console would ask
		// for it: its latency there, not at saturation.
		fixed := loadAtRate(b, srv, hc, pagesFixedRate, pagesFixedDuration, func(n int) *http.Request {
			req, _ := http.NewRequest(http.MethodGet, baseURL+"/clusters", nil)
			req.Header.Set("Cookie", cookies[n%len(cookies)])
			req.Header.Set("Accept-Encoding", "gzip")
			return req
		})
		b.StopTimer()
		want := int(pagesFixedRate * pagesFixedDuration.Seconds())
		require.Equal(b, want, fixed.ok, "clusters at %d req/s: %d of %d answered 200 (statuses %v)", pagesFixedRate, fixed.ok, want, fixed.statuses)
		b.ReportMetric(fixed.quantile(0.50), fmt.Sprintf("clusters-at-%d-p50-ms", pagesFixedRate))
		b.ReportMetric(fixed.quantile(0.99), fmt.Sprintf("clusters-at-%d-p99-ms", pagesFixedRate))
		for name, r := range results {
			reportLoad(b, name, r)
			if name != "healthz" {
				b.ReportMetric(median(ratios[name]), name+"-%-of-healthz")
			}
		}
	}
}
