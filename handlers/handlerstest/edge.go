package handlerstest

import (
	"context"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/netip"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/kubebyon/kubebyon/internal/audit"
	"github.com/kubebyon/kubebyon/internal/edge"
	"github.com/kubebyon/kubebyon/internal/edgeagent"
	"github.com/kubebyon/kubebyon/internal/edgewire"
	"github.com/kubebyon/kubebyon/internal/testenv"
	"github.com/kubebyon/kubebyon/queries"
)

// FreeAddr is a local TCP address nothing listens on now.
func FreeAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer ln.Close()
	return "127.0.0.1:" + strconv.Itoa(ln.Addr().(*net.TCPAddr).Port)
}

// RunEdge runs an edge (the agent of `kubebyon edge`, beside a real
// HAProxy it runs itself) named name with the edge token given, against
// the test's platform, until the test ends; change adjusts it first.
func (b *Bundle) RunEdge(t *testing.T, name, token string, change ...func(*edgeagent.Agent)) *edgeagent.Agent {
	t.Helper()
	agent := &edgeagent.Agent{
		Platform: &edgeagent.Remote{URL: b.Server.URL, Token: token, Client: &http.Client{}}, Name: name, Dir: t.TempDir(),
		HAProxy: testenv.HAProxy(t), APIBind: FreeAddr(t), KonnectivityBind: FreeAddr(t),
		Wait: 5 * time.Second, Logger: slog.New(slog.NewTextHandler(io.Discard, nil)),
	}
	for _, c := range change {
		c(agent)
	}
	runCtx, stop := context.WithCancel(context.Background())
	ran := make(chan error, 1)
	go func() { ran <- agent.Run(runCtx) }()
	t.Cleanup(func() {
		stop()
		require.NoError(t, <-ran)
	})
	return agent
}

// EdgeState is the desired edge state as the platform works it out.
func (b *Bundle) EdgeState(t *testing.T) (edgewire.State, <-chan struct{}, error) {
	t.Helper()
	return edge.NewWatcher(b.Pool, b.Box, slog.New(slog.NewTextHandler(io.Discard, nil))).Current(context.Background())
}

// EdgeToken makes an edge token as an admin would.
func (b *Bundle) EdgeToken(t *testing.T, name string) edge.CreatedToken {
	t.Helper()
	tok, err := (&edge.Service{Pool: b.Pool, Box: b.Box}).CreateToken(context.Background(), name, audit.Actor{})
	require.NoError(t, err)
	require.True(t, strings.HasPrefix(tok.Value, "kbe_"), tok.Value)
	return tok
}

// RoutedNode records a node of cluster c as the health job would: Ready
// or not, with its Pod CIDR and InternalIP.
func (b *Bundle) RoutedNode(t *testing.T, c queries.Cluster, name string, ready bool, podCIDR, internalIP string) {
	t.Helper()
	status := "False"
	if ready {
		status = "True"
	}
	_, err := b.Pool.Exec(context.Background(), `
		INSERT INTO nodes (cluster_id, name, ready, conditions, kubelet_version, addresses, pod_cidr)
		VALUES ($1, $2, $3, jsonb_build_array(jsonb_build_object('type', 'Ready', 'status', $4::text)), 'v1.34.0',
		        jsonb_build_array(jsonb_build_object('type', 'InternalIP', 'address', $5::text)), $6::cidr)
		ON CONFLICT (cluster_id, name) DO UPDATE SET ready = EXCLUDED.ready, conditions = EXCLUDED.conditions,
		        addresses = EXCLUDED.addresses, pod_cidr = EXCLUDED.pod_cidr`,
		c.ID, name, ready, status, internalIP, podCIDR)
	require.NoError(t, err)
}

// PodSubnet is the i-th /24 of the cluster's Pod network.
func PodSubnet(t *testing.T, c queries.Cluster, i int) string {
	t.Helper()
	require.LessOrEqual(t, c.PodCidr.Bits(), 24)
	a := c.PodCidr.Addr().As4()
	a[2] += byte(i)
	return netip.PrefixFrom(netip.AddrFrom4(a), 24).String()
}
