//go:build linux

package routeagent

import (
	"net/netip"
	"slices"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// benchNodes is a large platform's worth of tenant nodes: 1,000 clusters
// of 10 nodes.
const benchNodes = 1000 * 10

// BenchmarkConverge measures Converge on benchNodes routes, in a namespace
// where all the vias (10.99.x.y) are on-link.
func BenchmarkConverge(b *testing.B) {
	desired := benchRoutes(benchNodes)

	b.Run("from empty", func(b *testing.B) {
		agent := benchAgent(b)
		var m meter
		for range b.N {
			b.StopTimer()
			res := benchConverge(b, agent, nil)
			require.Len(b, res.Failed, 0)
			b.StartTimer()

			m.start()
			res = benchConverge(b, agent, desired)
			m.stop()
			require.Len(b, res.Added, benchNodes)
		}
		m.report(b)
	})

	b.Run("one change on top", func(b *testing.B) {
		agent := benchAgent(b)
		res := benchConverge(b, agent, desired)
		require.Len(b, res.Added, benchNodes)
		res = benchConverge(b, agent, desired)
		require.False(b, res.Changed())
		require.Equal(b, benchNodes, res.InPlace)

		routes := slices.Clone(desired)
		moved := &routes[benchNodes/2]
		var m meter
		b.ResetTimer()
		for range b.N {
			// A node changes address: to the first free one and back.
			if moved.Via == desired[benchNodes/2].Via {
				moved.Via = benchVia(benchNodes)
			} else {
				moved.Via = desired[benchNodes/2].Via
			}

			m.start()
			res := benchConverge(b, agent, routes)
			m.stop()
			require.Equal(b, []Route{*moved}, res.Replaced)
		}
		m.report(b)
	})
}

func benchAgent(b *testing.B) *Agent {
	tn := newTestNetns(b)
	addNetwork(b, tn.h, "nodes0", "10.99.255.254/16")
	return &Agent{Handle: tn.h}
}

func benchConverge(b *testing.B, agent *Agent, desired []Route) Result {
	res, err := agent.Converge(b.Context(), desired)
	require.NoError(b, err)
	return res
}

// benchRoutes gives node i the Pod CIDR 10.128.0.0/24 + i (distinct /24s up
// to 10.167.15.0/24 for 10,000 nodes) via benchVia(i).
func benchRoutes(n int) []Route {
	routes := make([]Route, n)
	for i := range routes {
		routes[i] = Route{Dst: netip.PrefixFrom(ipv4(10<<24|128<<16+uint32(i)<<8), 24), Via: benchVia(i)}
	}
	return routes
}

// benchVia is node i's address, 10.99.0.1 + i.
func benchVia(i int) netip.Addr {
	return ipv4(10<<24 | 99<<16 + uint32(i) + 1)
}

func ipv4(a uint32) netip.Addr {
	return netip.AddrFrom4([4]byte{byte(a >> 24), byte(a >> 16), byte(a >> 8), byte(a)})
}

// meter sums the wall and CPU (user and system) time of the converges it
// measures; the kernel's work on the routes is system time of the process.
type meter struct {
	n                   int
	wall, cpu           time.Duration
	startWall           time.Time
	startUser, startSys time.Duration
}

func (m *meter) start() {
	m.startUser, m.startSys = rusage()
	m.startWall = time.Now()
}

func (m *meter) stop() {
	m.wall += time.Since(m.startWall)
	user, sys := rusage()
	m.cpu += user - m.startUser + sys - m.startSys
	m.n++
}

func (m *meter) report(b *testing.B) {
	if m.n == 0 {
		return
	}
	b.ReportMetric(float64(m.wall.Microseconds())/1000/float64(m.n), "ms/converge")
	b.ReportMetric(float64(m.cpu.Microseconds())/1000/float64(m.n), "cpu-ms/converge")
}

func rusage() (user, sys time.Duration) {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		panic(err)
	}
	return time.Duration(ru.Utime.Nano()), time.Duration(ru.Stime.Nano())
}
