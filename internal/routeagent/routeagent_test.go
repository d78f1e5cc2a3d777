//go:build linux

package routeagent

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/netip"
	"runtime"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/kubebyon/kubebyon/internal/testenv"

	"github.com/stretchr/testify/require"
	"github.com/vishvananda/netlink"
	"github.com/vishvananda/netns"
)

func TestConvergeAddsReplacesRemoves(t *testing.T) {
	t.Parallel()

	tests := []struct {
		name    string
		table   int
		network string // on a link of its own, so that the vias are on-link
		dsts    [3]string
		vias    [3]string
	}{
		{
			name:    "IPv4 in main",
			network: "10.99.0.1/16",
			dsts:    [3]string{"10.200.1.0/24", "10.200.2.0/24", "10.200.3.0/24"},
			vias:    [3]string{"10.99.0.2", "10.99.0.3", "10.99.0.4"},
		},
		{
			name:    "IPv4 in table 100",
			table:   100,
			network: "10.99.0.1/16",
			dsts:    [3]string{"10.200.1.0/24", "10.200.2.0/24", "10.200.3.0/24"},
			vias:    [3]string{"10.99.0.2", "10.99.0.3", "10.99.0.4"},
		},
		{
			name:    "IPv6 in main",
			network: "fd00:99::1/64",
			dsts:    [3]string{"fd00:200:1::/64", "fd00:200:2::/64", "fd00:200:3::/64"},
			vias:    [3]string{"fd00:99::2", "fd00:99::3", "fd00:99::4"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			tn := newTestNetns(t)
			addNetwork(t, tn.h, "nodes0", tt.network)
			agent := &Agent{Handle: tn.h, Table: tt.table}
			a := route(tt.dsts[0], tt.vias[0])
			b := route(tt.dsts[1], tt.vias[1])
			c := route(tt.dsts[2], tt.vias[0])
			aMoved := route(tt.dsts[0], tt.vias[2])

			res := converge(t, agent, a, b)
			require.Equal(t, []Route{a, b}, res.Added)
			require.Empty(t, res.Replaced)
			require.Empty(t, res.Removed)
			require.Equal(t, 2, res.InPlace)
			require.Equal(t, []Route{a, b}, tn.ownRoutes(t, tt.table, Protocol))

			requireNoOp(t, agent, 2, a, b)

			res = converge(t, agent, aMoved, c)
			require.Equal(t, []Route{c}, res.Added)
			require.Equal(t, []Route{aMoved}, res.Replaced)
			require.Equal(t, []Route{b}, res.Removed)
			require.Equal(t, 2, res.InPlace)
			require.Equal(t, []Route{aMoved, c}, tn.ownRoutes(t, tt.table, Protocol))

			requireNoOp(t, agent, 2, aMoved, c)

			res = converge(t, agent)
			require.ElementsMatch(t, []Route{aMoved, c}, res.Removed)
			require.Empty(t, tn.ownRoutes(t, tt.table, Protocol))
			if tt.table != 0 {
				require.Empty(t, tn.ownRoutes(t, 0, Protocol), "the agent wrote to main instead of its table")
			}
		})
	}
}

func TestConvergeLeavesForeignRoutes(t *testing.T) {
	t.Parallel()
	tn := newTestNetns(t)
	addNetwork(t, tn.h, "nodes0", "10.99.0.1/16")
	agent := &Agent{Handle: tn.h}

	// Routes of others in the agent's table: the administrator's static
	// and boot-time routes, another daemon's and the kernel's link route.
	tn.addRoute(t, route("10.200.5.0/24", "10.99.0.9"), netlink.RouteProtocol(syscall.RTPROT_STATIC), 0, 0)
	tn.addRoute(t, route("10.201.0.0/24", "10.99.0.9"), netlink.RouteProtocol(syscall.RTPROT_STATIC), 0, 0)
	tn.addRoute(t, route("10.202.0.0/24", "10.99.0.9"), netlink.RouteProtocol(syscall.RTPROT_BOOT), 0, 0)
	tn.addRoute(t, route("10.203.0.0/24", "10.99.0.9"), netlink.RouteProtocol(80), 0, 0)
	foreign := tn.foreignRoutes(t, Protocol)
	require.Contains(t, foreign, "10.99.0.0/16 via invalid IP proto kernel metric 0")

	ok := route("10.200.6.0/24", "10.99.0.3")
	res := converge(t, agent,
		route("10.200.5.0/24", "10.99.0.3"), // the static route's Dst
		route("10.99.0.0/16", "10.99.0.4"),  // the link route's Dst
		ok,
	)
	require.Equal(t, []Route{ok}, res.Added)
	require.Len(t, res.Failed, 2)
	require.Contains(t, res.Failed["10.200.5.0/24"], "of protocol static (4), not the agent's; it is left alone")
	require.Contains(t, res.Failed["10.99.0.0/16"], "of protocol kernel (2), not the agent's; it is left alone")
	require.Equal(t, foreign, tn.foreignRoutes(t, Protocol))

	// The administrator adds a route to a Dst the agent already serves,
	// with another metric so that both can be there.
	mine := route("10.200.7.0/24", "10.99.0.3")
	res = converge(t, agent, ok, mine)
	require.Equal(t, []Route{mine}, res.Added)
	tn.addRoute(t, route("10.200.7.0/24", "10.99.0.9"), netlink.RouteProtocol(syscall.RTPROT_STATIC), 0, 100)
	foreign = tn.foreignRoutes(t, Protocol)

	res = converge(t, agent, ok, route("10.200.7.0/24", "10.99.0.5"))
	require.False(t, res.Changed(), "nothing may change: %+v", res)
	require.Contains(t, res.Failed["10.200.7.0/24"], "of protocol static (4), not the agent's; it is left alone")
	require.Equal(t, []Route{ok, mine}, tn.ownRoutes(t, 0, Protocol), "the agent's route to a contested Dst stays as it was")

	res = converge(t, agent)
	require.ElementsMatch(t, []Route{ok, mine}, res.Removed)
	require.Empty(t, res.Failed)
	require.Empty(t, tn.ownRoutes(t, 0, Protocol))
	require.Equal(t, foreign, tn.foreignRoutes(t, Protocol), "removing its own route to 10.200.7.0/24 must leave the static one")
}

func TestConvergeWorksOnlyInItsTableAndProtocol(t *testing.T) {
	t.Parallel()
	tn := newTestNetns(t)
	addNetwork(t, tn.h, "nodes0", "10.99.0.1/16")
	inMain := route("10.200.1.0/24", "10.99.0.2")
	tn.addRoute(t, inMain, Protocol, 0, 0)
	inTable := route("10.200.2.0/24", "10.99.0.2")
	tn.addRoute(t, inTable, Protocol, 100, 0)

	tests := []struct {
		name  string
		agent *Agent
	}{
		{name: "agent on table 200", agent: &Agent{Handle: tn.h, Table: 200}},
		{name: "agent of protocol 109 on main", agent: &Agent{Handle: tn.h, Protocol: 109}},
		{name: "agent of protocol 109 on table 100", agent: &Agent{Handle: tn.h, Table: 100, Protocol: 109}},
	}
	for _, tt := range tests {
		res := converge(t, tt.agent)
		require.False(t, res.Changed(), "%s: %+v", tt.name, res)
		require.Equal(t, []Route{inMain}, tn.ownRoutes(t, 0, Protocol), tt.name)
		require.Equal(t, []Route{inTable}, tn.ownRoutes(t, 100, Protocol), tt.name)
	}

	_, err := (&Agent{Handle: tn.h, Protocol: netlink.RouteProtocol(syscall.RTPROT_BOOT)}).Converge(t.Context(), nil)
	require.ErrorContains(t, err, "protocol 3 is reserved")
	_, err = (&Agent{Handle: tn.h, Protocol: 256 + Protocol}).Converge(t.Context(), nil)
	require.ErrorContains(t, err, "protocol 364 does not fit")
}

func TestConvergeReportsFailuresPerRoute(t *testing.T) {
	t.Parallel()
	tn := newTestNetns(t)
	addNetwork(t, tn.h, "nodes0", "10.99.0.1/16")
	var logs strings.Builder
	agent := &Agent{Handle: tn.h, Logger: slog.New(slog.NewTextHandler(&logs, nil))}

	tests := []struct {
		route   Route
		wantErr string // "" for a route that is applied
	}{
		{route: route("10.200.1.0/24", "10.99.0.2")},
		{route: route("10.200.2.0/24", "192.0.2.1"), wantErr: "cannot add the route via 192.0.2.1: the via address is not on a network this host reaches (network is unreachable)"},
		{route: route("10.200.3.0/24", "10.99.0.3")},
		{route: route("10.200.1.0/24", "10.99.0.7"), wantErr: "given more than once: the route via 10.99.0.2 is kept and the one via 10.99.0.7 ignored"},
		{route: route("10.200.4.0/24", "fd00:99::2"), wantErr: "the destination is IPv4 but the via address fd00:99::2 is IPv6"},
		{route: route("10.200.5.7/24", "10.99.0.2"), wantErr: "the destination has host bits set; the network is 10.200.5.0/24"},
		{route: Route{Dst: netip.MustParsePrefix("10.200.6.0/24")}, wantErr: "the via address is missing"},
		{route: Route{Via: netip.MustParseAddr("10.99.0.2")}, wantErr: "the destination is not a valid prefix"},
	}
	var desired, applied []Route
	wantFailed := map[string]string{}
	for _, tt := range tests {
		desired = append(desired, tt.route)
		if tt.wantErr == "" {
			applied = append(applied, tt.route)
		} else {
			wantFailed[tt.route.Dst.String()] = tt.wantErr
		}
	}

	res := converge(t, agent, desired...)
	require.Equal(t, applied, res.Added)
	require.Equal(t, len(applied), res.InPlace)
	require.Equal(t, wantFailed, res.Failed)
	require.Equal(t, applied, tn.ownRoutes(t, 0, Protocol))
	require.Contains(t, logs.String(), `level=WARN msg="routes converged with failures" table=254 protocol=108 added=2 replaced=0 removed=0 in_place=2 failed=6`)
	require.Contains(t, logs.String(), `first_failure="10.200.2.0/24: cannot add the route via 192.0.2.1`)

	// A via that becomes unreachable leaves the route as it was.
	res = converge(t, agent, route("10.200.1.0/24", "192.0.2.1"), route("10.200.3.0/24", "10.99.0.3"))
	require.False(t, res.Changed(), "%+v", res)
	require.Equal(t, 1, res.InPlace)
	require.Equal(t, map[string]string{
		"10.200.1.0/24": "cannot change the route's via from 10.99.0.2 to 192.0.2.1: the via address is not on a network this host reaches (network is unreachable)",
	}, res.Failed)
	require.Equal(t, applied, tn.ownRoutes(t, 0, Protocol))
}

func TestConvergeStopsWhenContextEnds(t *testing.T) {
	t.Parallel()
	tn := newTestNetns(t)
	addNetwork(t, tn.h, "nodes0", "10.99.0.1/16")
	agent := &Agent{Handle: tn.h}

	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	res, err := agent.Converge(ctx, []Route{route("10.200.1.0/24", "10.99.0.2")})
	require.ErrorIs(t, err, context.Canceled)
	require.False(t, res.Changed())
	require.Empty(t, tn.ownRoutes(t, 0, Protocol))

	_, err = (&Agent{}).Converge(t.Context(), nil)
	require.ErrorContains(t, err, "no netlink handle")
}

// TestConvergeCarriesPackets connects from a "host" namespace to a pod
// address in a "node" namespace, which only works through the agent's
// route to the node's Pod CIDR.
func TestConvergeCarriesPackets(t *testing.T) {
	t.Parallel()
	host := newTestNetns(t)
	node := newTestNetns(t)

	require.NoError(t, host.h.LinkAdd(&netlink.Veth{
		LinkAttrs:     netlink.LinkAttrs{Name: "to-node"},
		PeerName:      "to-host",
		PeerNamespace: netlink.NsFd(node.ns),
	}))
	setUp(t, host.h, "to-node", "10.99.0.1/24")
	setUp(t, node.h, "to-host", "10.99.0.2/24")
	setUp(t, node.h, "lo", "10.200.1.5/32")

	var ln net.Listener
	require.NoError(t, inNetns(node.ns, func() error {
		var err error
		ln, err = net.Listen("tcp", "10.200.1.5:0")
		return err
	}))
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			conn, err := ln.Accept()
			if err != nil {
				return
			}
			_, _ = io.WriteString(conn, "pod here\n")
			conn.Close()
		}
	}()

	dial := func() (string, error) {
		var answer string
		err := inNetns(host.ns, func() error {
			conn, err := net.DialTimeout("tcp", ln.Addr().String(), 2*time.Second)
			if err != nil {
				return err
			}
			defer conn.Close()
			if err := conn.SetDeadline(time.Now().Add(2 * time.Second)); err != nil {
				return err
			}
			b, err := io.ReadAll(conn)
			answer = string(b)
			return err
		})
		return answer, err
	}

	_, err := dial()
	require.ErrorIs(t, err, syscall.ENETUNREACH, "the pod must not be reachable before the agent runs")

	res := converge(t, &Agent{Handle: host.h}, route("10.200.1.0/24", "10.99.0.2"))
	require.Len(t, res.Added, 1)

	answer, err := dial()
	require.NoError(t, err)
	require.Equal(t, "pod here\n", answer)
}

// converge runs agent towards desired and fails the test on an error.
func converge(t *testing.T, agent *Agent, desired ...Route) Result {
	t.Helper()
	res, err := agent.Converge(t.Context(), desired)
	require.NoError(t, err)
	return res
}

// requireNoOp checks that converging to desired again changes nothing.
func requireNoOp(t *testing.T, agent *Agent, inPlace int, desired ...Route) {
	t.Helper()
	res := converge(t, agent, desired...)
	require.False(t, res.Changed(), "a second run must change nothing: %+v", res)
	require.Empty(t, res.Failed)
	require.Equal(t, inPlace, res.InPlace)
}

func route(dst, via string) Route {
	return Route{Dst: netip.MustParsePrefix(dst), Via: netip.MustParseAddr(via)}
}

// testNetns is a network namespace that a test or benchmark owns, with a
// netlink handle working in it.
type testNetns struct {
	ns netns.NsHandle
	h  *netlink.Handle
}

// newTestNetns makes a network namespace with lo up, removed at cleanup.
func newTestNetns(tb testing.TB) testNetns {
	tb.Helper()
	ns, h := testenv.NetNamespace(tb)
	return testNetns{ns: ns, h: h}
}

// inNetns runs fn on a thread of its own in ns.
func inNetns(ns netns.NsHandle, fn func() error) error {
	errc := make(chan error, 1)
	go func() {
		runtime.LockOSThread()
		orig, err := netns.Get()
		if err != nil {
			runtime.UnlockOSThread()
			errc <- fmt.Errorf("get the current network namespace: %w", err)
			return
		}
		defer orig.Close()
		if err := netns.Set(ns); err != nil {
			runtime.UnlockOSThread()
			errc <- fmt.Errorf("enter the network namespace: %w", err)
			return
		}
		fnErr := fn()
		if err := netns.Set(orig); err != nil {
			// Left locked, the thread ends with this goroutine.
			errc <- fmt.Errorf("return to the original network namespace: %w", err)
			return
		}
		runtime.UnlockOSThread()
		errc <- fnErr
	}()
	return <-errc
}

// addNetwork puts addr on a new link that is up, so that the other
// addresses of its network are on-link. The link is a veth whose peer stays
// in the namespace: a dummy link would do, but not every kernel that runs
// the tests has the dummy driver.
func addNetwork(tb testing.TB, h *netlink.Handle, name, addr string) {
	tb.Helper()
	peer := name + "p"
	require.NoError(tb, h.LinkAdd(&netlink.Veth{LinkAttrs: netlink.LinkAttrs{Name: name}, PeerName: peer}))
	link, err := h.LinkByName(peer)
	require.NoError(tb, err)
	require.NoError(tb, h.LinkSetUp(link))
	setUp(tb, h, name, addr)
}

// setUp gives the link addr and sets it up.
func setUp(tb testing.TB, h *netlink.Handle, name, addr string) {
	tb.Helper()
	link, err := h.LinkByName(name)
	require.NoError(tb, err)
	a, err := netlink.ParseAddr(addr)
	require.NoError(tb, err)
	a.Flags = syscall.IFA_F_NODAD // an IPv6 address is usable at once
	require.NoError(tb, h.AddrAdd(link, a))
	require.NoError(tb, h.LinkSetUp(link))
}

// addRoute adds a route the way someone other than the agent would.
func (tn testNetns) addRoute(tb testing.TB, r Route, proto netlink.RouteProtocol, table, metric int) {
	tb.Helper()
	require.NoError(tb, tn.h.RouteAdd(&netlink.Route{
		Dst:      &net.IPNet{IP: r.Dst.Addr().AsSlice(), Mask: net.CIDRMask(r.Dst.Bits(), r.Dst.Addr().BitLen())},
		Gw:       r.Via.AsSlice(),
		Protocol: proto,
		Table:    table,
		Priority: metric,
	}))
}

// ownRoutes lists the routes of proto in table (0 for main), sorted.
func (tn testNetns) ownRoutes(tb testing.TB, table int, proto netlink.RouteProtocol) []Route {
	tb.Helper()
	if table == 0 {
		table = syscall.RT_TABLE_MAIN
	}
	krs, err := tn.h.RouteListFiltered(netlink.FAMILY_ALL, &netlink.Route{Table: table, Protocol: proto}, netlink.RT_FILTER_TABLE|netlink.RT_FILTER_PROTOCOL)
	require.NoError(tb, err)
	var routes []Route
	for _, kr := range krs {
		dst, ok := kernelDst(kr)
		require.True(tb, ok)
		routes = append(routes, Route{Dst: dst, Via: viaOf(kr)})
	}
	slices.SortFunc(routes, func(a, b Route) int { return strings.Compare(a.String(), b.String()) })
	return routes
}

// foreignRoutes describes the IPv4 routes of the main table not of proto.
// (The kernel adds IPv6 link-local routes whenever it gets to it.)
func (tn testNetns) foreignRoutes(tb testing.TB, proto netlink.RouteProtocol) []string {
	tb.Helper()
	krs, err := tn.h.RouteList(nil, netlink.FAMILY_V4)
	require.NoError(tb, err)
	var routes []string
	for _, kr := range krs {
		if kr.Protocol == proto {
			continue
		}
		dst, ok := kernelDst(kr)
		require.True(tb, ok)
		routes = append(routes, fmt.Sprintf("%s via %s proto %s metric %d", dst, viaOf(kr), kr.Protocol, kr.Priority))
	}
	slices.Sort(routes)
	return routes
}
