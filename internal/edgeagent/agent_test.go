package edgeagent

import (
	"context"
	"crypto/x509"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/kubebyon/kubebyon/internal/edgewire"
	"github.com/kubebyon/kubebyon/internal/testenv"
)

// echoUpstream is a control plane (testenv.TLSEcho) for host, and its
// address as a server of a route.
func echoUpstream(t *testing.T, host, greeting string) (edgewire.Server, *x509.CertPool) {
	t.Helper()
	port, roots := testenv.TLSEcho(t, host, greeting)
	return edgewire.Server{Address: "127.0.0.1", Port: port}, roots
}

// TestAgentAppliesStatesSeamlessly runs the agent's HAProxy (master-worker
// mode, started as `kubebyon edge` starts it) and applies states to it:
// each new route works after its reload, a connection opened before a
// reload still works after it, a config HAProxy refuses never replaces the
// one it serves, and the backends' health is read from the runtime API.
func TestAgentAppliesStatesSeamlessly(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	aAPI, aRoots := echoUpstream(t, "a.k.test", "api of a")
	aKonn, _ := echoUpstream(t, "a.k.test", "konnectivity of a")
	bAPI, bRoots := echoUpstream(t, "b.k.test", "api of b")

	dir := t.TempDir()
	a := &Agent{
		Dir: dir, HAProxy: testenv.HAProxy(t),
		APIBind: "127.0.0.1:" + strconv.Itoa(freePort(t)), KonnectivityBind: "127.0.0.1:" + strconv.Itoa(freePort(t)),
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil)),
	}
	require.NoError(t, os.MkdirAll(filepath.Join(dir, versionsDir), 0o700))
	require.NoError(t, a.write(ctx, edgewire.State{Routes: []edgewire.Route{}}))
	a.MasterSocket = filepath.Join(dir, MasterSocketFile)
	died := make(chan error, 1)
	stop, err := a.startHAProxy(ctx, died)
	require.NoError(t, err)
	t.Cleanup(stop)
	v, err := a.servedVersion()
	require.NoError(t, err)
	require.Empty(t, v, "the empty state until the platform answers")

	routeA := edgewire.Route{ClusterID: 1, Host: "a.k.test", API: []edgewire.Server{aAPI}, Konnectivity: []edgewire.Server{aKonn}}
	s1, err := edgewire.NewState([]edgewire.Route{routeA}, nil)
	require.NoError(t, err)
	require.NoError(t, a.Apply(ctx, s1))
	held, heldR, greeting, err := testenv.TLSGreeting(a.APIBind, "a.k.test", aRoots)
	require.NoError(t, err)
	defer held.Close()
	require.Equal(t, "api of a", greeting)
	_, _, _, err = testenv.TLSGreeting(a.APIBind, "b.k.test", bRoots)
	require.Error(t, err, "b has no route yet")

	dead := edgewire.Server{Address: "127.0.0.1", Port: freePort(t)} // nothing listens
	s2, err := edgewire.NewState([]edgewire.Route{routeA, {ClusterID: 2, Host: "b.k.test", API: []edgewire.Server{bAPI}}, {ClusterID: 3, Host: "c.k.test", API: []edgewire.Server{dead}}}, nil)
	require.NoError(t, err)
	require.NoError(t, a.Apply(ctx, s2))
	served, err := a.servedVersion()
	require.NoError(t, err)
	require.Equal(t, s2.Version, served)
	c, _, greeting, err := testenv.TLSGreeting(a.APIBind, "b.k.test", bRoots)
	require.NoError(t, err)
	c.Close()
	require.Equal(t, "api of b", greeting)
	// The connection opened before the reload still carries data.
	_, err = io.WriteString(held, "still here\n")
	require.NoError(t, err)
	line, err := heldR.ReadString('\n')
	require.NoError(t, err)
	require.Equal(t, "still here\n", line)
	entries, err := os.ReadDir(filepath.Join(dir, versionsDir))
	require.NoError(t, err)
	require.Len(t, entries, 1, "only the served version's files are kept")

	// A config HAProxy refuses (here: a listen address it cannot parse)
	// never reaches the running HAProxy.
	cfgBefore, err := os.ReadFile(filepath.Join(dir, ConfigFile))
	require.NoError(t, err)
	good := a.APIBind
	a.APIBind = "256.0.0.1:443"
	s3, err := edgewire.NewState([]edgewire.Route{routeA, {ClusterID: 2, Host: "b.k.test", API: []edgewire.Server{bAPI}}}, nil)
	require.NoError(t, err)
	err = a.Apply(ctx, s3)
	require.ErrorContains(t, err, "haproxy refuses the configuration")
	served, err = a.servedVersion()
	require.NoError(t, err)
	require.Equal(t, s2.Version, served)
	cfgAfter, err := os.ReadFile(filepath.Join(dir, ConfigFile))
	require.NoError(t, err)
	require.Equal(t, string(cfgBefore), string(cfgAfter))
	_, err = os.Stat(filepath.Join(dir, versionsDir, s3.Version))
	require.True(t, os.IsNotExist(err), "the refused version's files are gone")
	a.APIBind = good
	c, _, _, err = testenv.TLSGreeting(a.APIBind, "b.k.test", bRoots)
	require.NoError(t, err, "b is still routed")
	c.Close()

	// Health: every server is checked (a TCP connect); c's server does
	// not answer. Backends without servers (b's and c's konnectivity)
	// count as neither.
	var r edgewire.Report
	require.Eventually(t, func() bool {
		r = edgewire.Report{}
		require.NoError(t, a.health(&r))
		return r.BackendsUp == 3 && r.BackendsDown == 1
	}, 30*time.Second, 200*time.Millisecond)
	require.Equal(t, []edgewire.Backend{{ClusterID: 3, Kind: "api", Up: 0, Down: 1}}, r.Down)

	select {
	case err := <-died:
		t.Fatalf("haproxy died: %v", err)
	default:
	}
}
