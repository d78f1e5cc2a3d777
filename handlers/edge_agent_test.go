package handlers_test

import (
	"bufio"
	"context"
	"crypto/tls"
	"io"
	"net"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/kubebyon/kubebyon/handlers/handlerstest"
	"github.com/kubebyon/kubebyon/internal/edgeagent"
	"github.com/kubebyon/kubebyon/internal/testenv"
	"github.com/kubebyon/kubebyon/queries"
)

// TestEdgeAgentKeepsHAProxyInStep runs `kubebyon edge`'s agent against
// the platform and a real HAProxy: a NodePort cluster's API host name
// reaches its control plane (with its certificate verified) through
// HAProxy at the Ready host node's address; a cluster created later is
// routed within seconds while a connection to the first survives the
// reload; another name is refused; the edge reports the version it
// applied and its backends' health; a deleted cluster's name is refused.
func TestEdgeAgentKeepsHAProxyInStep(t *testing.T) {
	t.Parallel()
	b := handlerstest.Setup(t)
	b.ConnectHost(t)
	ctx := context.Background()
	q := queries.New(b.Pool)
	c, _ := b.SignedUpUser(t, "edge-e2e")
	first := b.NewCluster(t, c, "first")
	firstHost := first.Slug + ".clusters.test"
	// Its "NodePorts": control planes on 127.0.0.1, each with a
	// certificate of its own for the host name, which clients verify.
	port, firstRoots := testenv.TLSEcho(t, firstHost, "apiserver of first")
	konn, _ := testenv.TLSEcho(t, firstHost, "konnectivity of first")
	setPorts := func(id int64, api, konn int) {
		_, err := b.Pool.Exec(ctx, "UPDATE clusters SET node_port = $2, konnectivity_node_port = $3 WHERE id = $1", id, api, konn)
		require.NoError(t, err)
	}
	setPorts(first.ID, port, konn)
	require.NoError(t, q.HostNodeUpsert(ctx, queries.HostNodeUpsertParams{Name: "host-1", InternalIp: "127.0.0.1", Ready: true}))
	tok := b.EdgeToken(t, "e2e")

	agent := b.RunEdge(t, "edge-e2e", tok.Value)

	var held *tls.Conn
	var heldR *bufio.Reader
	require.Eventually(t, func() bool {
		conn, r, greeting, err := testenv.TLSGreeting(agent.APIBind, firstHost, firstRoots)
		if err != nil {
			return false
		}
		held, heldR = conn, r
		return greeting == "apiserver of first"
	}, 30*time.Second, 100*time.Millisecond, "the first cluster is routed")
	defer held.Close()

	// A cluster created now is routed within seconds, through a reload
	// the held connection survives.
	created := time.Now()
	second := b.NewCluster(t, c, "second")
	secondHost := second.Slug + ".clusters.test"
	port2, roots2 := testenv.TLSEcho(t, secondHost, "apiserver of second")
	konn2, konnRoots2 := testenv.TLSEcho(t, secondHost, "konnectivity of second")
	setPorts(second.ID, port2, konn2)
	require.Eventually(t, func() bool {
		conn, _, greeting, err := testenv.TLSGreeting(agent.APIBind, secondHost, roots2)
		if err != nil {
			return false
		}
		conn.Close()
		return greeting == "apiserver of second"
	}, 30*time.Second, 100*time.Millisecond, "the second cluster is routed")
	t.Logf("a new cluster reached HAProxy in %s", time.Since(created).Round(time.Millisecond))
	_, err := io.WriteString(held, "still there?\n")
	require.NoError(t, err)
	line, err := heldR.ReadString('\n')
	require.NoError(t, err, "the connection opened before the reload still works")
	require.Equal(t, "still there?\n", line)
	conn, _, greeting, err := testenv.TLSGreeting(agent.KonnectivityBind, secondHost, konnRoots2)
	require.NoError(t, err)
	conn.Close()
	require.Equal(t, "konnectivity of second", greeting)
	_, _, _, err = testenv.TLSGreeting(agent.APIBind, "nobody.clusters.test", roots2)
	require.Error(t, err, "a name no cluster has is refused")

	// The edge reports what it applied and its backends' health.
	desired, _, err := b.EdgeState(t)
	require.NoError(t, err)
	require.Eventually(t, func() bool {
		insts, err := q.EdgeInstanceList(ctx)
		require.NoError(t, err)
		return len(insts) == 1 && insts[0].AppliedVersion == desired.Version && insts[0].BackendsUp == 4 && insts[0].LastError == ""
	}, 30*time.Second, 200*time.Millisecond)
	insts, err := q.EdgeInstanceList(ctx)
	require.NoError(t, err)
	require.Equal(t, "edge-e2e", insts[0].Name)
	require.Contains(t, insts[0].HaproxyVersion, ".")

	// A deleted cluster's name is refused.
	_, err = b.Pool.Exec(ctx, "UPDATE clusters SET status = 'deleted' WHERE id = $1", second.ID)
	require.NoError(t, err)
	require.Eventually(t, func() bool {
		_, _, _, err := testenv.TLSGreeting(agent.APIBind, secondHost, roots2)
		return err != nil
	}, 30*time.Second, 100*time.Millisecond, "the deleted cluster's route is gone")
}

// TestEdgeReportsHAProxyDown: an edge beside an HAProxy run by someone
// else (--master-socket) reports when that HAProxy goes down, and the
// admin's edge page shows it, with the error; once HAProxy is back the
// error goes.
func TestEdgeReportsHAProxyDown(t *testing.T) {
	t.Parallel()
	b := handlerstest.Setup(t)
	b.ConnectHost(t)
	admin, _ := b.SignedUpAdmin(t, "edge-down-admin")
	tok := b.EdgeToken(t, "down")
	dir := t.TempDir()
	apiBind, konnBind := handlerstest.FreeAddr(t), handlerstest.FreeAddr(t)
	files, err := edgeagent.Render(edgeagent.Config{Dir: dir, APIBind: apiBind, KonnectivityBind: konnBind})
	require.NoError(t, err)
	require.NoError(t, files.Write(dir))
	master := filepath.Join(dir, "master.sock")
	startHAProxy := func() *exec.Cmd {
		cmd := exec.Command(testenv.HAProxy(t), "-W", "-db", "-S", master+",mode,600", "-f", filepath.Join(dir, edgeagent.ConfigFile))
		cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
		require.NoError(t, cmd.Start())
		t.Cleanup(func() {
			_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
			_ = cmd.Wait()
		})
		// Up once its master socket answers: an edge that finds it
		// down backs off, which a loaded machine makes long.
		require.Eventually(t, func() bool {
			conn, err := net.Dial("unix", master)
			if err == nil {
				conn.Close()
			}
			return err == nil
		}, 30*time.Second, 50*time.Millisecond, "HAProxy's master socket answers")
		return cmd
	}
	haproxy := startHAProxy()

	b.RunEdge(t, "edge-beside", tok.Value, func(a *edgeagent.Agent) {
		a.Dir, a.APIBind, a.KonnectivityBind, a.MasterSocket, a.Wait = dir, apiBind, konnBind, master, time.Second
	})
	page := func() string {
		_, body := admin.Get("/admin/edge")
		return body
	}
	t.Cleanup(func() {
		if !t.Failed() {
			return
		}
		insts, err := queries.New(b.Pool).EdgeInstanceList(context.Background())
		st, _, serr := b.EdgeState(t)
		t.Logf("desired %s (%v); edges %+v (%v)", st.Version, serr, insts, err)
	})
	require.Eventually(t, func() bool { return strings.Contains(page(), `data-testid="edge-in-step"`) },
		60*time.Second, 200*time.Millisecond, "the edge comes up in step")
	require.NotContains(t, page(), `data-testid="edge-last-error"`)

	require.NoError(t, syscall.Kill(-haproxy.Process.Pid, syscall.SIGKILL))
	var body string
	require.Eventually(t, func() bool {
		body = page()
		return strings.Contains(body, `data-testid="edge-last-error"`)
	}, 60*time.Second, 200*time.Millisecond, "the edge reports HAProxy down")
	require.Contains(t, body, "haproxy does not answer on its master socket")

	startHAProxy()
	require.Eventually(t, func() bool { return !strings.Contains(page(), `data-testid="edge-last-error"`) },
		60*time.Second, 200*time.Millisecond, "HAProxy back: no error")
}
