package edgeagent

import (
	"context"
	"crypto/x509"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/kubebyon/kubebyon/internal/edgewire"
	"github.com/kubebyon/kubebyon/internal/testenv"
)

// TestHAProxyRoutesByName runs a real HAProxy on a rendered config and
// checks that each host name reaches its own cluster's servers, the
// apiserver on one port and konnectivity on the other, with the servers'
// own certificates verified through it, and that a name no route holds is
// refused.
func TestHAProxyRoutesByName(t *testing.T) {
	t.Parallel()
	haproxy := testenv.HAProxy(t)
	type upstream struct {
		host, greeting string
		server         edgewire.Server
		roots          *x509.CertPool
	}
	start := func(host, greeting string) upstream {
		port, roots := testenv.TLSEcho(t, host, greeting)
		return upstream{host: host, greeting: greeting, server: edgewire.Server{Address: "127.0.0.1", Port: port}, roots: roots}
	}
	aAPI, aKonn := start("a.k.test", "api of a"), start("a.k.test", "konnectivity of a")
	bAPI := start("b.k.test", "api of b")

	dir := t.TempDir()
	apiBind, konnBind := "127.0.0.1:"+strconv.Itoa(freePort(t)), "127.0.0.1:"+strconv.Itoa(freePort(t))
	f, err := Render(Config{
		Version: "7", APIBind: apiBind, KonnectivityBind: konnBind, Dir: dir,
		Routes: []edgewire.Route{
			{ClusterID: 2, Host: "b.k.test", API: []edgewire.Server{bAPI.server}},
			{ClusterID: 1, Host: "a.k.test", API: []edgewire.Server{aAPI.server}, Konnectivity: []edgewire.Server{aKonn.server}},
		},
	})
	require.NoError(t, err)
	require.NoError(t, f.Write(dir))
	ctx := context.Background()
	require.NoError(t, Check(ctx, haproxy, dir))

	cmd := exec.Command(haproxy, "-db", "-f", filepath.Join(dir, ConfigFile))
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
	require.NoError(t, cmd.Start())
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
	})
	require.Eventually(t, func() bool {
		c, err := net.Dial("tcp", konnBind)
		if err == nil {
			c.Close()
		}
		return err == nil
	}, 10*time.Second, 20*time.Millisecond, "HAProxy listens")

	read := func(bind, host string, roots *x509.CertPool) (string, error) {
		c, _, greeting, err := testenv.TLSGreeting(bind, host, roots)
		if err != nil {
			return "", err
		}
		c.Close()
		return greeting, nil
	}
	for _, tt := range []struct {
		bind string
		up   upstream
	}{{apiBind, aAPI}, {apiBind, bAPI}, {konnBind, aKonn}} {
		got, err := read(tt.bind, tt.up.host, tt.up.roots)
		require.NoError(t, err, "%s through %s", tt.up.host, tt.bind)
		require.Equal(t, tt.up.greeting, got)
	}
	// Upper case in SNI is the same name.
	got, err := read(apiBind, "A.K.TEST", aAPI.roots)
	require.NoError(t, err)
	require.Equal(t, aAPI.greeting, got)
	// A name no route holds is refused before any server sees it.
	_, err = read(apiBind, "c.k.test", aAPI.roots)
	require.Error(t, err)
	// b has no konnectivity server: its connection ends without a server.
	_, err = read(konnBind, "b.k.test", bAPI.roots)
	require.Error(t, err)
}

func TestRenderRefusesWhatHAProxyMustNotGet(t *testing.T) {
	t.Parallel()
	ok := Config{APIBind: ":443", KonnectivityBind: ":8132", Dir: "/etc/kubebyon/edge"}
	for name, tt := range map[string]func(c *Config){
		"host name with a space":    func(c *Config) { c.Routes = []edgewire.Route{{ClusterID: 1, Host: "a b.k.test"}} },
		"host name with a new line": func(c *Config) { c.Routes = []edgewire.Route{{ClusterID: 1, Host: "a.k.test\nbackend x"}} },
		"host name twice": func(c *Config) {
			c.Routes = []edgewire.Route{{ClusterID: 1, Host: "a.k.test"}, {ClusterID: 2, Host: "a.k.test"}}
		},
		"cluster twice": func(c *Config) {
			c.Routes = []edgewire.Route{{ClusterID: 1, Host: "a.k.test"}, {ClusterID: 2, Host: "b.k.test"}, {ClusterID: 1, Host: "c.k.test"}}
		},
		"server port 0": func(c *Config) {
			c.Routes = []edgewire.Route{{ClusterID: 1, Host: "a.k.test", API: []edgewire.Server{{Address: "10.0.0.1", Port: 0}}}}
		},
		"server address with a space": func(c *Config) {
			c.Routes = []edgewire.Route{{ClusterID: 1, Host: "a.k.test", API: []edgewire.Server{{Address: "10.0.0.1 backup", Port: 30443}}}}
		},
		"relative directory": func(c *Config) { c.Dir = "edge" },
		"bind without port":  func(c *Config) { c.APIBind = "0.0.0.0" },
		"bind on port 0":     func(c *Config) { c.KonnectivityBind = ":0" },
	} {
		c := ok
		tt(&c)
		_, err := Render(c)
		require.ErrorIs(t, err, ErrInvalid, name)
	}
	_, err := Render(ok)
	require.NoError(t, err)
}

// TestCheckSaysWhatHAProxyRefuses shows HAProxy's complaint about a config
// it will not load, in words.
func TestCheckSaysWhatHAProxyRefuses(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	f, err := Render(Config{APIBind: "127.0.0.1:18443", KonnectivityBind: "127.0.0.1:18132", Dir: dir})
	require.NoError(t, err)
	f.Config = append(f.Config, "backend broken\n    no-such-keyword 1\n"...)
	require.NoError(t, f.Write(dir))
	err = Check(context.Background(), testenv.HAProxy(t), dir)
	require.ErrorContains(t, err, "no-such-keyword")
}

// TestRenderIsStable checks that the same routes in another order render
// the same bytes.
func TestRenderIsStable(t *testing.T) {
	t.Parallel()
	routes := []edgewire.Route{
		{ClusterID: 1, Host: "a.k.test", API: []edgewire.Server{{Address: "10.0.0.1", Port: 30443}}},
		{ClusterID: 2, Host: "b.k.test", API: []edgewire.Server{{Address: "node-2.example", Port: 30444}}},
	}
	c := Config{APIBind: ":443", KonnectivityBind: ":8132", Dir: "/e", Routes: routes}
	one, err := Render(c)
	require.NoError(t, err)
	c.Routes = []edgewire.Route{routes[1], routes[0]}
	two, err := Render(c)
	require.NoError(t, err)
	require.Equal(t, one, two)
	require.Equal(t, "a.k.test c1_api\nb.k.test c2_api\n", string(one.APIMap))
	require.True(t, strings.Contains(string(one.Config), "server s0 node-2.example:30444 check"))
}

func freePort(t testing.TB) int {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port
}

// BenchmarkRender renders and checks (haproxy -c) the config of 10,000
// clusters, three host nodes each in NodePort mode, and reports its size.
func BenchmarkRender(b *testing.B) {
	haproxy := testenv.HAProxy(b)
	dir := b.TempDir()
	const clusters = 10_000
	routes := make([]edgewire.Route, clusters)
	for i := range routes {
		var api, konn []edgewire.Server
		for n := range 3 {
			addr := "10.0.0." + strconv.Itoa(n+1)
			api = append(api, edgewire.Server{Address: addr, Port: 30000 + i%2000})
			konn = append(konn, edgewire.Server{Address: addr, Port: 32000 + i%700})
		}
		routes[i] = edgewire.Route{ClusterID: int64(i + 1), Host: "cluster-" + strconv.Itoa(i) + ".k.example.com", API: api, Konnectivity: konn}
	}
	c := Config{Version: "1", APIBind: "127.0.0.1:18443", KonnectivityBind: "127.0.0.1:18132", Dir: dir, Routes: routes}
	var f Files
	var render, check time.Duration
	for b.Loop() {
		t0 := time.Now()
		var err error
		f, err = Render(c)
		require.NoError(b, err)
		require.NoError(b, f.Write(dir))
		t1 := time.Now()
		require.NoError(b, Check(context.Background(), haproxy, dir))
		render, check = render+t1.Sub(t0), check+time.Since(t1)
	}
	b.ReportMetric(float64(render.Milliseconds())/float64(b.N), "render-ms")
	b.ReportMetric(float64(check.Milliseconds())/float64(b.N), "check-ms")
	b.ReportMetric(float64(len(f.Config)+len(f.APIMap)+len(f.KonnectivityMap))/1024, "config-KiB")
}
