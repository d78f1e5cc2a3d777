package handlers_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubebyon/kubebyon/handlers/handlerstest"
	"github.com/kubebyon/kubebyon/internal/jointokens"
	"github.com/kubebyon/kubebyon/internal/notify"
	"github.com/kubebyon/kubebyon/internal/testenv"
)

// runJoinCommand runs the documented join command, curl -fsSL piped into
// sh, with the machine's real curl and sh (sudo left out).
func runJoinCommand(t *testing.T, b *handlerstest.Bundle, token string) (string, error) {
	t.Helper()
	cmd := exec.Command("sh", "-c", `curl -fsSL "$1" | sh`, "sh", b.Server.URL+"/join/"+token)
	out, err := cmd.CombinedOutput()
	return string(out), err
}

// TestJoinTokenLifecycle: a token made in the console is a bootstrap token
// the real apiserver accepts; the CSR filed with it is recorded as a join,
// the use limit deletes the Secret, and revocation ends authentication.
func TestJoinTokenLifecycle(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	b := handlerstest.Setup(t)
	c, email := b.SignedUpUser(t, "joiner")
	cl, virt := b.ReadyVirtualCluster(t, c, "joins")
	admin := virt.Client(t)
	virt.KubeadmBootstrapBinding(t, jointokens.NodeGroup)

	page := fmt.Sprintf("/clusters/%d/tokens", cl.ID)
	resp := c.Post(page, page, url.Values{"description": {"rack 1"}, "lifetime": {"24h"}, "uses": {"n"}, "max_uses": {"0"}})
	require.Equal(t, http.StatusUnprocessableEntity, resp.StatusCode)
	require.Contains(t, handlerstest.ReadBody(t, resp), `data-testid="error-max_uses"`)

	token := handlerstest.CreateJoinToken(t, c, cl, url.Values{"description": {"rack 1"}, "lifetime": {"24h"}, "uses": {"1"}})
	id, secret, _ := strings.Cut(token, ".")
	s, err := admin.CoreV1().Secrets("kube-system").Get(ctx, "bootstrap-token-"+id, metav1.GetOptions{})
	require.NoError(t, err)
	require.Equal(t, corev1.SecretType("bootstrap.kubernetes.io/token"), s.Type)
	require.Equal(t, id, string(s.Data["token-id"]))
	require.Equal(t, secret, string(s.Data["token-secret"]))
	require.Equal(t, "true", string(s.Data["usage-bootstrap-authentication"]))
	require.Equal(t, "true", string(s.Data["usage-bootstrap-signing"]))
	require.Equal(t, jointokens.NodeGroup, string(s.Data["auth-extra-groups"]))
	require.Equal(t, "rack 1", string(s.Data["description"]))
	exp, err := time.Parse(time.RFC3339, string(s.Data["expiration"]))
	require.NoError(t, err)
	require.WithinDuration(t, time.Now().Add(24*time.Hour), exp, time.Minute)
	require.Equal(t, map[string]string{"vcluster.loft.sh/token": "true", "vcluster.loft.sh/token-node-type": "worker"}, s.Labels)
	var stored string
	require.NoError(t, b.Pool.QueryRow(ctx, "SELECT token_hash || sealed_token FROM join_tokens WHERE token_id = $1", id).Scan(&stored))
	require.NotContains(t, stored, secret, "the secret is stored only hashed and sealed")

	code, ctype, body := handlerstest.JoinStatus(t, b, token)
	require.Equal(t, http.StatusOK, code, body)
	require.Equal(t, "text/x-shellscript; charset=utf-8", ctype)
	require.Contains(t, body, cl.Endpoint)
	ca := strings.TrimSpace(string(virt.CA))
	require.Contains(t, body, ca, "the script checks the endpoint against the cluster's CA, from its kubeconfig")
	require.Equal(t, ca, b.Cluster(t, cl.ID).CaCert, "and keeps it for the next join")
	body = handlerstest.JoinRefusal(t, b, "abcdef.0123456789abcdef", "unknown")
	require.Contains(t, body, "unknown")
	out, err := runJoinCommand(t, b, "abcdef.0123456789abcdef")
	require.Error(t, err, "the documented command fails on a refused token")
	require.Equal(t, 1, err.(*exec.ExitError).ExitCode())
	require.Contains(t, out, "kubebyon: This join token is unknown.", "and says why")

	// A node joins: kubelet files its CSR with the token. Until its Node
	// registers, the join is pending: the token is not used yet, its
	// Secret stays (a kubelet that reconnects must still get through),
	// and nobody is told it joined.
	require.NoError(t, testenv.FileNodeCSR(t, virt.TokenClient(t, token), "worker-1"))
	runSync := func() { b.SyncJoinTokens(t, cl.ID) }
	runSync()
	runSync() // idempotent
	var uses int32
	var nodes []string
	require.NoError(t, b.Pool.QueryRow(ctx, "SELECT uses FROM join_tokens WHERE token_id = $1", id).Scan(&uses))
	require.Zero(t, uses, "a pending CSR is not a use")
	require.NoError(t, b.Pool.QueryRow(ctx, "SELECT array_agg(node_name) FROM join_token_nodes").Scan(&nodes))
	require.Equal(t, []string{"worker-1"}, nodes)
	require.Empty(t, b.Notices(t, email, notify.JoinTokenUsed), "not told of a join whose Node has not registered")
	_, err = admin.CoreV1().Secrets("kube-system").Get(ctx, "bootstrap-token-"+id, metav1.GetOptions{})
	require.NoError(t, err, "the token's Secret stays while the join is pending")
	require.NoError(t, testenv.FileNodeCSR(t, virt.TokenClient(t, token), "worker-1"), "the kubelet can file again with the token")
	code, _, _ = handlerstest.JoinStatus(t, b, token)
	require.Equal(t, http.StatusOK, code, "the join script is still served")
	_, body = c.Get(page)
	require.Contains(t, body, `data-registered="false">worker-1<`, "its CSR is in, its Node not yet")

	// kubelet registers the Node: the next sync counts the use, retires
	// the used-up token and tells the owner once.
	_, err = admin.CoreV1().Nodes().Create(ctx, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "worker-1"}}, metav1.CreateOptions{})
	require.NoError(t, err)
	runSync()
	runSync()
	require.NoError(t, b.Pool.QueryRow(ctx, "SELECT uses FROM join_tokens WHERE token_id = $1", id).Scan(&uses))
	require.Equal(t, int32(1), uses)
	told := b.Notices(t, email, notify.JoinTokenUsed)
	require.Len(t, told, 1, "told once, in the console")
	require.Equal(t, "The node worker-1 joined your cluster joins with the join token rack 1.", told[0].Body)
	_, err = admin.CoreV1().Secrets("kube-system").Get(ctx, "bootstrap-token-"+id, metav1.GetOptions{})
	require.True(t, apierrors.IsNotFound(err), "the used-up token's Secret is deleted: %v", err)
	handlerstest.WaitFor(t, func() bool {
		return apierrors.IsUnauthorized(testenv.FileNodeCSR(t, virt.TokenClient(t, token), "worker-2"))
	}, "the used-up token stops authenticating")
	require.Contains(t, handlerstest.JoinRefusal(t, b, token, "used-up"), "use limit")
	out, err = runJoinCommand(t, b, token)
	require.Error(t, err)
	require.Contains(t, out, "This join token has reached its use limit.")
	_, body = c.Get(page)
	require.Contains(t, body, `data-registered="true">worker-1<`)

	// An unlimited token reports join events, then is revoked.
	token2 := handlerstest.CreateJoinToken(t, c, cl, url.Values{"lifetime": {"none"}, "uses": {"unlimited"}})
	require.NotEqual(t, token, token2)
	id2, _, _ := strings.Cut(token2, ".")
	var tokenRowID int64
	require.NoError(t, b.Pool.QueryRow(ctx, "SELECT id FROM join_tokens WHERE token_id = $1", id2).Scan(&tokenRowID))
	live := fmt.Sprintf("%s/%d/live", page, tokenRowID)
	code, body = c.Get(live)
	require.Equal(t, http.StatusOK, code)
	require.Contains(t, body, `hx-trigger="every 3s"`, "an active token is watched")
	require.Contains(t, body, "No machine has reported")
	resp, err = http.PostForm(b.Server.URL+"/join/"+token2+"/events", url.Values{"step": {"root"}, "status": {"failed"}, "message": {"not root"}, "host": {"rack1-a"}})
	require.NoError(t, err)
	resp.Body.Close()
	require.Equal(t, http.StatusNoContent, resp.StatusCode)
	syncJobs := func() int {
		var n int
		require.NoError(t, b.Pool.QueryRow(ctx, "SELECT count(*) FROM river_job WHERE kind = 'join_token_sync' AND (args->>'cluster_id')::bigint = $1", cl.ID).Scan(&n))
		return n
	}
	require.Zero(t, syncJobs(), "a preflight step asks for no sync")
	resp, err = http.PostForm(b.Server.URL+"/join/"+token2+"/events", url.Values{"step": {"join"}, "status": {"ok"}, "host": {"rack1-b"}})
	require.NoError(t, err)
	resp.Body.Close()
	require.Equal(t, http.StatusNoContent, resp.StatusCode)
	require.Equal(t, 1, syncJobs(), "the join step asks for a sync at once")
	resp, err = http.PostForm(b.Server.URL+"/join/"+token2+"/events", url.Values{"step": {"root"}, "status": {"maybe"}})
	require.NoError(t, err)
	resp.Body.Close()
	require.Equal(t, http.StatusBadRequest, resp.StatusCode)
	resp, err = http.Post(b.Server.URL+"/join/"+token2+"/events", "application/x-www-form-urlencoded", strings.NewReader("message="+strings.Repeat("x", 5000)))
	require.NoError(t, err)
	resp.Body.Close()
	require.Equal(t, http.StatusRequestEntityTooLarge, resp.StatusCode)
	_, body = c.Get(live)
	require.Contains(t, body, `data-host="rack1-a" data-step="root" data-status="failed"`)
	require.Contains(t, body, "not root")
	require.Contains(t, body, `data-host="rack1-b" data-step="join" data-status="ok"`)
	_, body = c.Get(page)
	require.Contains(t, body, `data-host="rack1-a" data-step="root" data-status="failed"`, "the diagnostics are under the token")

	require.NoError(t, testenv.FileNodeCSR(t, virt.TokenClient(t, token2), "worker-3"))
	require.NoError(t, testenv.FileNodeCSR(t, virt.TokenClient(t, token2), "worker-5"))
	for _, n := range []string{"worker-3", "worker-5"} {
		_, err = admin.CoreV1().Nodes().Create(ctx, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: n}}, metav1.CreateOptions{})
		require.NoError(t, err)
	}
	runSync()
	told = b.Notices(t, email, notify.JoinTokenUsed)
	require.Equal(t, "2 nodes joined your cluster joins: worker-3, worker-5.", told[len(told)-1].Body, "one notice for the nodes of one sync")
	revoke := fmt.Sprintf("%s/%d/revoke", page, tokenRowID)
	code, body = c.Get(revoke)
	require.Equal(t, http.StatusOK, code)
	require.Contains(t, body, "worker-3")
	resp = c.Post(revoke, revoke, nil)
	require.Equal(t, http.StatusSeeOther, resp.StatusCode)
	_, err = admin.CoreV1().Secrets("kube-system").Get(ctx, "bootstrap-token-"+id2, metav1.GetOptions{})
	require.True(t, apierrors.IsNotFound(err))
	handlerstest.WaitFor(t, func() bool {
		return apierrors.IsUnauthorized(testenv.FileNodeCSR(t, virt.TokenClient(t, token2), "worker-4"))
	}, "the revoked token stops authenticating")
	handlerstest.JoinRefusal(t, b, token2, "revoked")
	_, body = c.Get(live)
	require.NotContains(t, body, "hx-trigger", "a revoked token is no longer watched")
	require.Contains(t, body, `id="join-command-block-`+fmt.Sprint(tokenRowID)+`" hx-swap-oob="true"`, "its command leaves the page")
	require.Contains(t, body, "worker-3")

	var actions []string
	require.NoError(t, b.Pool.QueryRow(ctx, "SELECT array_agg(action ORDER BY id) FROM audit_events WHERE action LIKE 'join_token.%'").Scan(&actions))
	require.Equal(t, []string{"join_token.create", "join_token.create", "join_token.revoke"}, actions)
}

// TestJoinScript runs the join script with a real sh, stand-ins only for
// id, systemctl and uname, against a TLS server playing the control plane.
func TestJoinScript(t *testing.T) {
	t.Parallel()
	b := handlerstest.Setup(t)
	var mu sync.Mutex
	var joinRequests []string
	cp := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/node/join" {
			mu.Lock()
			joinRequests = append(joinRequests, r.URL.RequestURI())
			mu.Unlock()
			fmt.Fprint(w, "#!/bin/sh\necho \"control plane join: $*\"\n")
			return
		}
		w.WriteHeader(http.StatusUnauthorized)
	}))
	t.Cleanup(cp.Close)
	token, clusterID := handlerstest.ScriptToken(t, b, cp)

	// Without the CA (no kubeconfig Secret to read it from) no script.
	_, err := b.Pool.Exec(context.Background(), "UPDATE clusters SET ca_cert = '' WHERE id = $1", clusterID)
	require.NoError(t, err)
	require.Contains(t, handlerstest.JoinRefusal(t, b, token, "unavailable"), "connection details right now")
	handlerstest.SetClusterCA(t, b, clusterID, cp)

	code, _, script := handlerstest.JoinStatus(t, b, token)
	require.Equal(t, http.StatusOK, code, script)
	dir := t.TempDir()
	scriptPath := filepath.Join(dir, "join.sh")
	require.NoError(t, os.WriteFile(scriptPath, []byte(script), 0o600))
	shellcheck, err := exec.LookPath("shellcheck")
	require.NoError(t, err, "shellcheck is not installed (Debian package shellcheck; .ci/run installs it)")
	out, err := exec.Command(shellcheck, "-s", "sh", scriptPath).CombinedOutput()
	require.NoError(t, err, "shellcheck:\n%s", out)

	osRelease := filepath.Join(dir, "os-release")
	require.NoError(t, os.WriteFile(osRelease, []byte("PRETTY_NAME=\"Debian GNU/Linux 13\"\nID=debian\n"), 0o600))
	run := func(uid string, args ...string) (string, string, error) {
		return handlerstest.RunJoinScript(t, scriptPath, osRelease, dir, uid, nil, args...)
	}
	steps := func() []string {
		var s []string
		require.NoError(t, b.Pool.QueryRow(context.Background(), "SELECT coalesce(array_agg(step || ':' || status ORDER BY id), '{}') FROM join_events").Scan(&s))
		return s
	}

	_, stderr, err := run("1000")
	require.Error(t, err)
	require.Contains(t, stderr, "must run as root")
	require.Equal(t, []string{"curl:ok", "root:failed"}, steps())
	mu.Lock()
	require.Empty(t, joinRequests)
	mu.Unlock()

	_, stderr, err = run("0", "--bogus")
	require.Error(t, err)
	require.Contains(t, stderr, "--bogus: unknown flag")

	stdout, stderr, err := run("0", "--node-name", "foo", "--force-join", "--kubernetes-version", "v1.34.0")
	require.NoError(t, err, "stdout:\n%s\nstderr:\n%s", stdout, stderr)
	require.Contains(t, stdout, "control plane join: --node-name foo --force-join --kubernetes-version v1.34.0")
	mu.Lock()
	require.Equal(t, []string{"/node/join?token=" + token}, joinRequests)
	mu.Unlock()
	require.Equal(t, []string{"curl:ok", "root:failed", "flags:failed",
		"curl:ok", "root:ok", "systemd:ok", "arch:ok", "os:ok", "endpoint:ok", "download:ok", "join:ok"}, steps())
	var hosts []string
	require.NoError(t, b.Pool.QueryRow(context.Background(), "SELECT array_agg(host ORDER BY id) FROM join_events").Scan(&hosts))
	require.Equal(t, []string{"box-7", "box-7", "box-7", "foo", "foo", "foo", "foo", "foo", "foo", "foo", "foo"}, hosts,
		"without --node-name the machine is its host name; with it, every report of the run names the node")

	// --reset-only: the control plane's script cleans the machine, fetched
	// from the endpoint verified with the cluster's CA as for a join; it is
	// reported as a reset, not a join.
	stdout, stderr, err = run("0", "--reset-only")
	require.NoError(t, err, "stdout:\n%s\nstderr:\n%s", stdout, stderr)
	require.Contains(t, stdout, "control plane join: --reset-only")
	require.Contains(t, stdout, "The machine is cleaned")
	mu.Lock()
	require.Len(t, joinRequests, 2)
	mu.Unlock()
	require.Equal(t, []string{"endpoint:ok", "download:ok", "reset:ok"}, steps()[len(steps())-3:])

	// Something between the machine and the cluster presents another
	// certificate: the script stops before it downloads anything.
	// (Every httptest server has the same certificate; the cluster gets a
	// CA of its own instead.)
	_, err = b.Pool.Exec(context.Background(), "UPDATE clusters SET ca_cert = $1 WHERE id = $2",
		string(testenv.SelfSignedCA(t, "cluster CA")), clusterID)
	require.NoError(t, err)
	code, _, script = handlerstest.JoinStatus(t, b, token)
	require.Equal(t, http.StatusOK, code, script)
	require.NoError(t, os.WriteFile(scriptPath, []byte(script), 0o600))
	for _, args := range [][]string{nil, {"--reset-only"}} {
		_, stderr, err = run("0", args...)
		require.Error(t, err, "%v", args)
		require.Contains(t, stderr, "certificate is not the cluster's")
		mu.Lock()
		require.Len(t, joinRequests, 2, "no script fetched through an intercepted connection (%v)", args)
		mu.Unlock()
		require.Equal(t, "endpoint:failed", steps()[len(steps())-1])
	}
}

// TestJoinRefusedAtNodeLimit: a token of a cluster that has as many nodes
// as its owner's plan allows gets a refusal that says so (node-limit);
// with a node fewer, the join script again.
func TestJoinRefusedAtNodeLimit(t *testing.T) {
	t.Parallel()
	b := handlerstest.Setup(t)
	ctx := context.Background()
	cp := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusUnauthorized) }))
	t.Cleanup(cp.Close)
	token, clusterID := handlerstest.ScriptToken(t, b, cp)
	// The default plan: 10 nodes per cluster.
	_, err := b.Pool.Exec(ctx, `INSERT INTO nodes (cluster_id, name, ready) SELECT $1, 'worker-' || i, true FROM generate_series(1, 10) i`, clusterID)
	require.NoError(t, err)
	body := handlerstest.JoinRefusal(t, b, token, "node-limit")
	require.Contains(t, body, "as many nodes as its owner")
	require.Contains(t, body, "Settings → Plan")

	_, err = b.Pool.Exec(ctx, `DELETE FROM nodes WHERE cluster_id = $1 AND name = 'worker-10'`, clusterID)
	require.NoError(t, err)
	resp, err := http.Get(b.Server.URL + "/join/" + token)
	require.NoError(t, err)
	resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode)
	require.Empty(t, resp.Header.Get("X-KubeBYON-Join-Refused"), "below the limit: the join script")
}
