//go:build fixture

package main_test

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubebyon/kubebyon/internal/clusters"
	"github.com/kubebyon/kubebyon/internal/secrets"
	"github.com/kubebyon/kubebyon/internal/settings"
	"github.com/kubebyon/kubebyon/internal/testenv"
	"github.com/kubebyon/kubebyon/queries"
)

// TestWriteUpgradeFixture writes migrations/testdata/<release>-data.sql:
// the data a release's platform made, for TestUpgradeFromRelease. It is
// not a test: run it once per release, with that release's binary
// (migrations/testdata/README.md says how):
//
//	KUBEBYON_FIXTURE_BINARY=/tmp/kubebyon-v0.1.0 KUBEBYON_FIXTURE_OUT=$PWD/migrations/testdata/v0.1.0-data.sql \
//	  go test -tags fixture -count=1 -run TestWriteUpgradeFixture ./cmd/kubebyon/
func TestWriteUpgradeFixture(t *testing.T) {
	binary = os.Getenv("KUBEBYON_FIXTURE_BINARY")
	out := os.Getenv("KUBEBYON_FIXTURE_OUT")
	require.NotEmpty(t, binary, "KUBEBYON_FIXTURE_BINARY: the release's kubebyon")
	require.NotEmpty(t, out, "KUBEBYON_FIXTURE_OUT: the SQL file to write")
	ctx := context.Background()

	dbURL := testenv.EmptyDBURL(t)
	host := testenv.HostKube(t)
	hostKubeconfig := filepath.Join(t.TempDir(), "host.kubeconfig")
	require.NoError(t, os.WriteFile(hostKubeconfig, host.Kubeconfig(t), 0o600))
	env := []string{"DATABASE_URL=" + dbURL, "KUBEBYON_DATA_DIR=" + t.TempDir(),
		"KUBEBYON_SECRET_KEY=" + upgradeSecretKey, "KUBEBYON_KUBECONFIG=" + hostKubeconfig}

	s := startServe(t, env, "--migrate")
	s.waitReady(t)
	conn, err := pgx.Connect(ctx, dbURL)
	require.NoError(t, err)
	defer conn.Close(ctx)
	q := queries.New(conn)
	box, err := secrets.New(upgradeKey(t))
	require.NoError(t, err)

	// The host's settings, as the admin settings page saves them.
	rt := settings.Defaults()
	rt.NodePortMin, rt.NodePortMax = testenv.NodePorts()
	rt.APIBaseDomain = "clusters.test"
	rt.AllowedVersions = []string{"v1.34.0", "v1.33.4"}
	require.NoError(t, settings.Save(ctx, q, box, rt))

	r := kubebyon(t, env, upgradeAdminPassword+"\n", "admin", "create", "--email", upgradeAdmin, "--name", "Ada Admin", "--password-stdin")
	require.Equal(t, 0, r.code, r.stderr)

	// A user signs up with a password and the code mailed (logged).
	user := newWeb(t, s)
	resp, body := user.post("/signup", "/signup", url.Values{"email": {upgradeUser}, "name": {"Uma User"}, "password": {upgradeUserPassword}})
	require.Equal(t, http.StatusSeeOther, resp.StatusCode, body)
	code := mailedCode(t, s, upgradeUser)
	resp, body = user.post("/signup/verify?email="+url.QueryEscape(upgradeUser), "/signup/verify", url.Values{"email": {upgradeUser}, "code": {code}})
	require.Equal(t, http.StatusSeeOther, resp.StatusCode, body)

	// An API key.
	resp, body = user.postShown("/settings/api-keys", url.Values{"name": {"ci"}, "expiry": {"never"}})
	require.Equal(t, http.StatusOK, resp.StatusCode, "%s %s", resp.Header.Get("Location"), body)
	key := regexp.MustCompile(`id="new-api-key"[^>]* value="(kbn_[a-z2-7]{8}_[a-z2-7]{32})"`).FindStringSubmatch(body)
	require.NotNil(t, key, body)

	// Then without workers: the cluster jobs are queued only, as on an API
	// replica, and no reconcile runs into the states set below. The
	// user's session goes on.
	s.stop(t)
	s = startServe(t, env, "--workers=false")
	s.waitReady(t)
	user.base = "http://" + s.addr

	// Clusters through the form, their reconcile jobs queued. "web" is
	// then made ready as vcluster would have (tests' readyVirtualCluster),
	// "db" failed, "old" deleted through the form (and left deleting):
	// the free plan allows three.
	ids := map[string]int64{}
	for _, c := range []struct{ name, version, mode string }{
		{"web", "v1.34.0", "nodeport"}, {"db", "v1.33.4", "loadbalancer"}, {"old", "v1.34.0", "nodeport"},
	} {
		resp, body := user.post("/clusters/new", "/clusters", url.Values{"name": {c.name}, "kubernetes_version": {c.version}, "public_access_mode": {c.mode}, "description": {c.name + " cluster"}})
		require.Equal(t, http.StatusSeeOther, resp.StatusCode, body)
		var id int64
		_, err := fmt.Sscanf(resp.Header.Get("Location"), "/clusters/%d", &id)
		require.NoError(t, err)
		ids[c.name] = id
	}
	old := fmt.Sprintf("/clusters/%d", ids["old"])
	resp, body = user.post(old+"/delete", old+"/delete", url.Values{"confirm": {"old"}})
	require.Equal(t, http.StatusSeeOther, resp.StatusCode, body)

	require.NoError(t, q.ClusterMarkFailed(ctx, queries.ClusterMarkFailedParams{ID: ids["db"], StatusMessage: "install vcluster: timed out"}))
	web, err := q.ClusterGetByID(ctx, ids["web"])
	require.NoError(t, err)
	_, err = q.ClusterMarkReady(ctx, queries.ClusterMarkReadyParams{ID: web.ID, Endpoint: web.Slug + ".clusters.test", Generation: web.Generation})
	require.NoError(t, err)
	virt := testenv.NewKube(t)
	hc := host.Client(t)
	ns := clusters.Namespace(web)
	// The reconcile worker may have made it.
	_, err = hc.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{})
	if !apierrors.IsAlreadyExists(err) {
		require.NoError(t, err)
	}
	_, err = hc.CoreV1().Secrets(ns).Create(ctx, &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: clusters.KubeconfigSecretName(web)},
		Data:       map[string][]byte{"config": virt.Kubeconfig(t)},
	}, metav1.CreateOptions{})
	require.NoError(t, err)

	// Join tokens through the form: their values are sealed with the key.
	tokens := fmt.Sprintf("/clusters/%d/tokens", web.ID)
	for _, d := range []string{"rack 1", "rack 2"} {
		resp, body := user.post(tokens, tokens, url.Values{"description": {d}, "lifetime": {"24h"}, "uses": {"unlimited"}})
		require.Equal(t, http.StatusSeeOther, resp.StatusCode, body)
	}

	// Nodes and notifications, as the node watch and notify write them
	// (tests' rows): no kubelet joins here.
	_, err = conn.Exec(ctx, `INSERT INTO nodes (cluster_id, name, ready, conditions, addresses)
		VALUES ($1, 'node-1', true, '[]', '[]'), ($1, 'node-2', false, '[]', '[]')`, web.ID)
	require.NoError(t, err)
	_, err = conn.Exec(ctx, `INSERT INTO notifications (user_id, kind, title, body)
		SELECT id, 'node_not_ready', 'Node node-2 is not ready', 'In cluster web.' FROM users WHERE email = $1`, upgradeUser)
	require.NoError(t, err)

	// The admin has seen the users page.
	admin := newWeb(t, s)
	admin.signIn(upgradeAdmin, upgradeAdminPassword)
	code2, body := admin.get("/admin/users")
	require.Equal(t, http.StatusOK, code2, body)

	s.stop(t)

	dump := exec.Command("pg_dump", "--data-only", "--inserts", "--no-owner", "--no-acl",
		"--exclude-table=public.schema_version", "--exclude-table=public.river_migration",
		"--dbname="+dbURL, "--file="+out)
	b, err := dump.CombinedOutput()
	require.NoError(t, err, string(b))
	t.Logf("wrote %s; the API key is %s", out, key[1])
}

// mailedCode is the 6-digit code in the mail to email that serve logged.
func mailedCode(t *testing.T, s *server, email string) string {
	t.Helper()
	re := regexp.MustCompile(`\b(\d{6})\b`)
	var code string
	s.waitFor(t, "the sign-up code mailed to "+email, func() bool {
		for _, line := range strings.Split(s.stderr.String(), "\n") {
			if strings.Contains(line, "to="+email) {
				if m := re.FindStringSubmatch(line[strings.Index(line, "text="):]); m != nil {
					code = m[1]
					return true
				}
			}
		}
		return false
	})
	return code
}

// postShown sends a form that posts once, as page shows it: with the CSRF
// token and the form id of one load of the page.
func (w *web) postShown(page string, form url.Values) (*http.Response, string) {
	w.t.Helper()
	_, body := w.get(page)
	csrf := pageCSRF.FindStringSubmatch(body)
	id := regexp.MustCompile(`name="form_id" value="([^"]+)"`).FindStringSubmatch(body)
	require.NotNil(w.t, csrf, body)
	require.NotNil(w.t, id, body)
	form.Set("_csrf", csrf[1])
	form.Set("form_id", id[1])
	req, err := http.NewRequest(http.MethodPost, w.base+page, strings.NewReader(form.Encode()))
	require.NoError(w.t, err)
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	return w.do(req)
}
