package handlers_test

import (
	"context"
	"crypto/tls"
	"encoding/pem"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"k8s.io/client-go/rest"

	"github.com/kubebyon/kubebyon/handlers/handlerstest"
	"github.com/kubebyon/kubebyon/internal/audit"
	"github.com/kubebyon/kubebyon/internal/jointokens"
	"github.com/kubebyon/kubebyon/internal/testenv"
	"github.com/kubebyon/kubebyon/queries"
)

// TestJoinScriptThroughEdge: the join script's endpoint check and its
// download of the control plane's join script pass through HAProxy, by
// the cluster's public name, verified with the cluster's CA (curl is told
// where that name is, as DNS would: a .curlrc connect-to).
func TestJoinScriptThroughEdge(t *testing.T) {
	t.Parallel()
	b := handlerstest.Setup(t)
	ctx := context.Background()
	q := queries.New(b.Pool)
	b.ConnectHost(t)
	c, email := b.SignedUpUser(t, "edge-joiner")
	cl := b.NewCluster(t, c, "joins")
	b.MarkReady(t, cl)
	host := cl.Slug + ".clusters.test"

	// The control plane, with a certificate for the public name only.
	cert, roots := testenv.SelfSignedServer(t, host)
	cp := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/node/join" {
			fmt.Fprint(w, "#!/bin/sh\necho \"control plane join: $*\"\n")
			return
		}
		w.WriteHeader(http.StatusUnauthorized)
	}))
	cp.TLS = &tls.Config{Certificates: []tls.Certificate{cert}}
	cp.StartTLS()
	t.Cleanup(cp.Close)
	ca := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: cert.Leaf.Raw})
	_, err := b.Pool.Exec(ctx, "UPDATE clusters SET ca_cert = $1, node_port = $2 WHERE id = $3", string(ca), cp.Listener.Addr().(*net.TCPAddr).Port, cl.ID)
	require.NoError(t, err)
	require.NoError(t, q.HostNodeUpsert(ctx, queries.HostNodeUpsertParams{Name: "host-1", InternalIp: "127.0.0.1", Ready: true}))

	u, err := q.UserGetByEmail(ctx, email)
	require.NoError(t, err)
	hostCfg := testenv.HostKube(t).Config
	tokens := &jointokens.Service{Pool: b.Pool, Box: b.Box, Virtual: func(context.Context, queries.Cluster) (*rest.Config, error) { return hostCfg, nil }}
	created, err := tokens.Create(ctx, actingAs(t, tokens.Pool, u.ID), cl.ID, jointokens.Input{Lifetime: jointokens.Lifetime1Hour, Uses: jointokens.UsesOne}, audit.Actor{UserID: u.ID})
	require.NoError(t, err)

	tok := b.EdgeToken(t, "join")
	agent := b.RunEdge(t, "edge-join", tok.Value)
	require.Eventually(t, func() bool {
		conn, err := tls.Dial("tcp", agent.APIBind, &tls.Config{ServerName: host, RootCAs: roots})
		if err == nil {
			conn.Close()
		}
		return err == nil
	}, 30*time.Second, 100*time.Millisecond, "the edge routes the cluster")

	code, _, script := handlerstest.JoinStatus(t, b, created.Value)
	require.Equal(t, http.StatusOK, code, script)
	require.Contains(t, script, "ENDPOINT='"+host+"'")
	dir := t.TempDir()
	scriptPath := filepath.Join(dir, "join.sh")
	require.NoError(t, os.WriteFile(scriptPath, []byte(script), 0o600))
	osRelease := filepath.Join(dir, "os-release")
	require.NoError(t, os.WriteFile(osRelease, []byte("ID=debian\n"), 0o600))
	curlHome := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(curlHome, ".curlrc"), []byte(fmt.Sprintf("connect-to = \"%s:443:%s\"\n", host, agent.APIBind)), 0o600))

	stdout, stderr, err := handlerstest.RunJoinScript(t, scriptPath, osRelease, dir, "0", []string{"CURL_HOME=" + curlHome})
	require.NoError(t, err, "stdout:\n%s\nstderr:\n%s", stdout, stderr)
	require.Contains(t, stdout, "control plane join:")
	var steps []string
	require.NoError(t, b.Pool.QueryRow(ctx, "SELECT array_agg(step || ':' || status ORDER BY id) FROM join_events").Scan(&steps))
	require.Contains(t, steps, "endpoint:ok")
	require.Contains(t, steps, "download:ok")
	require.Contains(t, steps, "join:ok")
}
