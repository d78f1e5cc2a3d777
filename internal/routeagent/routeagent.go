//go:build linux

// Package routeagent keeps a host's routes to the Pod CIDRs of tenant
// clusters: for every tenant node, a route "<node podCIDR> via <node
// address>". It is the core of "kubebyon route-agent", the DaemonSet that
// runs on every host node; the command fetches the desired routes and hands
// them to Agent.Converge.
//
// The agent marks its routes with its own route protocol number and only
// ever changes or deletes routes that carry it, so routes made by the
// kernel, the administrator or other daemons in the same table are safe.
package routeagent

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/netip"
	"strconv"
	"sync"
	"syscall"
	"time"

	"github.com/vishvananda/netlink"
)

// Protocol is the route protocol number ("proto" in ip-route(8)) that marks
// the agent's routes. 108 is not assigned in iproute2's rt_protos nor in the
// kernel's RTPROT_* list, is above RTPROT_STATIC (so the kernel gives it no
// meaning) and is not used by the CNI plugins commonly found on hosts
// (Calico's Felix uses 80, Cilium the kernel's 2). An administrator can name
// it with "108 kubebyon" in /etc/iproute2/rt_protos.d/kubebyon.conf.
const Protocol netlink.RouteProtocol = 108

// dumpAttempts is how often the routes are read again when the kernel says
// that the table changed during the dump, which leaves the dump incomplete.
const dumpAttempts = 3

// Route is one route to a tenant cluster's Pod CIDR: Dst is the node's
// spec.podCIDR and Via the node's address. Dst and Via are of the same
// family, IPv4 or IPv6.
type Route struct {
	Dst netip.Prefix
	Via netip.Addr
}

func (r Route) String() string {
	return r.Dst.String() + " via " + r.Via.String()
}

// Result says what one Converge did.
type Result struct {
	Added    []Route
	Replaced []Route // the routes as they are now; the old via is logged
	Removed  []Route
	// InPlace counts the desired routes that are in the table when
	// Converge returns: those already right, added or replaced.
	InPlace int
	// Failed says, by destination (Dst.String()), why a route could not be
	// applied or removed.
	Failed map[string]string
}

// Changed tells whether Converge touched the routing table.
func (r Result) Changed() bool {
	return len(r.Added)+len(r.Replaced)+len(r.Removed) > 0
}

// Agent converges one routing table of one network namespace, the one
// Handle talks to, towards a set of desired routes. Calls to Converge on
// the same Agent are serialised.
type Agent struct {
	Handle *netlink.Handle
	// Table is the routing table the agent works on; 0 means main.
	Table int
	// Protocol marks the agent's routes; 0 means the package's Protocol.
	Protocol netlink.RouteProtocol
	// Logger gets per-route changes at debug level and a summary of each
	// Converge that changed or failed something; nil logs nothing.
	Logger *slog.Logger

	mu sync.Mutex
}

// Converge makes the agent's routes in its table exactly desired: it adds
// the missing routes, replaces those whose via changed and removes its own
// routes that are no longer desired. It reads the table once.
//
// A route that cannot be applied is reported in Result.Failed and does not
// stop the others: an invalid route, a Dst given twice (the first one
// wins), a Dst that already has a route of another protocol (that route is
// left alone) or a via the kernel refuses, such as one not on a connected
// network. The agent's current route for such a Dst, if any, stays as it
// is. The error is for what stops the whole run: the table cannot be read,
// or ctx ends (the Result then holds what was done until then).
func (a *Agent) Converge(ctx context.Context, desired []Route) (Result, error) {
	a.mu.Lock()
	defer a.mu.Unlock()

	res := Result{Failed: map[string]string{}}
	if a.Handle == nil {
		return res, errors.New("converge routes: the agent has no netlink handle")
	}
	proto := a.Protocol
	if proto == 0 {
		proto = Protocol
	}
	// The kernel's own numbers mark routes the agent must never delete.
	if proto <= syscall.RTPROT_STATIC {
		return res, fmt.Errorf("converge routes: protocol %d is reserved for the kernel, boot-time and static routes; use one of the agent's own", proto)
	}
	if proto > 255 {
		return res, fmt.Errorf("converge routes: protocol %d does not fit the kernel's 8 bits", proto)
	}
	table := a.Table
	if table == 0 {
		table = syscall.RT_TABLE_MAIN
	}
	log := a.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	log = log.With("table", table, "protocol", int(proto))

	if err := ctx.Err(); err != nil {
		return res, fmt.Errorf("converge routes: %w", err)
	}
	start := time.Now()
	cur, err := a.read(table, proto)
	if err != nil {
		return res, fmt.Errorf("converge routes: read table %d: %w", table, err)
	}

	c := converger{h: a.Handle, table: table, proto: proto, log: log, cur: cur, res: &res}
	err = c.run(ctx, desired)
	attrs := []any{
		"added", len(res.Added), "replaced", len(res.Replaced), "removed", len(res.Removed),
		"in_place", res.InPlace, "failed", len(res.Failed), "duration", time.Since(start),
	}
	switch {
	case len(res.Failed) > 0:
		attrs = append(attrs, "first_failure", c.firstFailure)
		log.Warn("routes converged with failures", attrs...)
	case res.Changed():
		log.Info("routes converged", attrs...)
	default:
		log.Debug("routes already converged", attrs...)
	}
	if err != nil {
		return res, fmt.Errorf("converge routes: %w", err)
	}
	return res, nil
}

// tableState is what one dump of the table says.
type tableState struct {
	own     map[netip.Prefix][]netlink.Route
	ownDsts []netip.Prefix // in dump order, so that removals are too
	foreign map[netip.Prefix]netlink.RouteProtocol
}

// read dumps table once. The protocol is sorted out here rather than with
// RT_FILTER_PROTOCOL: the kernel sends the whole table either way (netlink
// filters in user space unless strict checking is on), and the Dsts of
// other protocols' routes are needed to leave them alone.
func (a *Agent) read(table int, proto netlink.RouteProtocol) (tableState, error) {
	filter := &netlink.Route{Table: table}
	var err error
	for range dumpAttempts {
		st := tableState{
			own:     map[netip.Prefix][]netlink.Route{},
			foreign: map[netip.Prefix]netlink.RouteProtocol{},
		}
		err = a.Handle.RouteListFilteredIter(netlink.FAMILY_ALL, filter, netlink.RT_FILTER_TABLE, func(r netlink.Route) bool {
			dst, ok := kernelDst(r)
			if !ok {
				return true
			}
			if r.Protocol != proto {
				if _, seen := st.foreign[dst]; !seen {
					st.foreign[dst] = r.Protocol
				}
				return true
			}
			if _, seen := st.own[dst]; !seen {
				st.ownDsts = append(st.ownDsts, dst)
			}
			st.own[dst] = append(st.own[dst], r)
			return true
		})
		if err == nil {
			return st, nil
		}
		if !errors.Is(err, netlink.ErrDumpInterrupted) {
			return tableState{}, err
		}
	}
	return tableState{}, fmt.Errorf("the table kept changing during %d dumps: %w", dumpAttempts, err)
}

// converger is the state of one Converge run.
type converger struct {
	h     *netlink.Handle
	table int
	proto netlink.RouteProtocol
	log   *slog.Logger
	cur   tableState
	res   *Result
	// firstFailure is an example for the summary in the log.
	firstFailure string
}

func (c *converger) run(ctx context.Context, desired []Route) error {
	// mentioned holds every Dst the caller asked for, even in a route that
	// fails, so that a bad entry never removes a working route.
	mentioned := make(map[netip.Prefix]bool, len(desired))
	first := make(map[netip.Prefix]netip.Addr, len(desired))
	for _, r := range desired {
		if r.Dst.IsValid() {
			mentioned[r.Dst.Masked()] = true
		}
		if reason := invalid(r); reason != "" {
			c.fail(r.Dst, reason)
			continue
		}
		if via, dup := first[r.Dst]; dup {
			c.fail(r.Dst, fmt.Sprintf("given more than once: the route via %s is kept and the one via %s ignored", via, r.Via))
			continue
		}
		first[r.Dst] = r.Via
		if err := ctx.Err(); err != nil {
			return err
		}
		c.apply(r)
	}
	for _, dst := range c.cur.ownDsts {
		if mentioned[dst] {
			continue
		}
		for _, kr := range c.cur.own[dst] {
			if err := ctx.Err(); err != nil {
				return err
			}
			c.remove(kr)
		}
	}
	return nil
}

// apply makes r the agent's only route to r.Dst.
func (c *converger) apply(r Route) {
	if p, ok := c.cur.foreign[r.Dst]; ok {
		c.fail(r.Dst, fmt.Sprintf("table %d already has a route to %s of protocol %s, not the agent's; it is left alone", c.table, r.Dst, protocolName(p)))
		return
	}
	own := c.cur.own[r.Dst]
	if len(own) == 0 {
		if err := c.h.RouteAdd(c.kernelRoute(r)); err != nil {
			c.fail(r.Dst, fmt.Sprintf("cannot add the route via %s: %s", r.Via, inWords(err)))
			return
		}
		c.log.Debug("route added", "dst", r.Dst, "via", r.Via)
		c.res.Added = append(c.res.Added, r)
		c.res.InPlace++
		return
	}

	keep := -1
	for i, kr := range own {
		if matches(kr, r.Via) {
			keep = i
			break
		}
	}
	if keep < 0 {
		// Replacing the agent's own route with the same metric and TOS is
		// atomic, and no other route to Dst exists that it could hit.
		old := own[0]
		nr := c.kernelRoute(r)
		nr.Priority, nr.Tos = old.Priority, old.Tos
		if err := c.h.RouteReplace(nr); err != nil {
			c.fail(r.Dst, fmt.Sprintf("cannot change the route's via from %s to %s: %s", viaOf(old), r.Via, inWords(err)))
			return
		}
		c.log.Debug("route replaced", "dst", r.Dst, "via", r.Via, "old_via", viaOf(old))
		c.res.Replaced = append(c.res.Replaced, r)
		keep = 0
	}
	c.res.InPlace++
	// Extra routes of the agent's to the same Dst (other metrics) go.
	for i, kr := range own {
		if i != keep {
			c.remove(kr)
		}
	}
}

// remove deletes one of the agent's routes. The request names the agent's
// protocol, so the kernel deletes nothing else even if the table changed
// since the dump.
func (c *converger) remove(kr netlink.Route) {
	dst, _ := kernelDst(kr)
	del := &netlink.Route{
		Dst:      kr.Dst,
		Gw:       kr.Gw,
		Table:    c.table,
		Protocol: c.proto,
		Priority: kr.Priority,
		Tos:      kr.Tos,
		Scope:    kr.Scope,
		Type:     kr.Type,
	}
	if del.Dst == nil {
		del.Dst = &net.IPNet{IP: dst.Addr().AsSlice(), Mask: net.CIDRMask(0, dst.Addr().BitLen())}
	}
	if err := c.h.RouteDel(del); err != nil {
		c.fail(dst, fmt.Sprintf("cannot remove the route via %s: %s", viaOf(kr), inWords(err)))
		return
	}
	c.log.Debug("route removed", "dst", dst, "via", viaOf(kr))
	c.res.Removed = append(c.res.Removed, Route{Dst: dst, Via: viaOf(kr)})
}

// fail records why the route to dst failed, after any earlier reason.
func (c *converger) fail(dst netip.Prefix, reason string) {
	key := dst.String()
	c.log.Debug("route failed", "dst", key, "reason", reason)
	if c.firstFailure == "" {
		c.firstFailure = key + ": " + reason
	}
	if prev, ok := c.res.Failed[key]; ok {
		reason = prev + "; " + reason
	}
	c.res.Failed[key] = reason
}

func (c *converger) kernelRoute(r Route) *netlink.Route {
	return &netlink.Route{
		Dst:      &net.IPNet{IP: r.Dst.Addr().AsSlice(), Mask: net.CIDRMask(r.Dst.Bits(), r.Dst.Addr().BitLen())},
		Gw:       r.Via.AsSlice(),
		Table:    c.table,
		Protocol: c.proto,
		Scope:    netlink.SCOPE_UNIVERSE,
		Type:     syscall.RTN_UNICAST,
	}
}

// invalid says what is wrong with r before the kernel sees it, or "".
func invalid(r Route) string {
	switch {
	case !r.Dst.IsValid():
		return "the destination is not a valid prefix"
	case r.Dst != r.Dst.Masked():
		return fmt.Sprintf("the destination has host bits set; the network is %s", r.Dst.Masked())
	case !r.Via.IsValid():
		return "the via address is missing"
	case r.Via.Zone() != "":
		return fmt.Sprintf("the via address %s has a zone; link-local next hops are not supported", r.Via)
	case r.Dst.Addr().Is4() != r.Via.Is4():
		return fmt.Sprintf("the destination is %s but the via address %s is %s", family(r.Dst.Addr()), r.Via, family(r.Via))
	}
	return ""
}

// protocolName is p as ip-route(8) shows it, with the number.
func protocolName(p netlink.RouteProtocol) string {
	n := strconv.Itoa(int(p))
	if name := p.String(); name != n {
		return name + " (" + n + ")"
	}
	return n
}

func family(a netip.Addr) string {
	if a.Is4() {
		return "IPv4"
	}
	return "IPv6"
}

// matches tells whether kr is a plain unicast route via via.
func matches(kr netlink.Route, via netip.Addr) bool {
	return kr.Type == syscall.RTN_UNICAST && len(kr.MultiPath) == 0 && viaOf(kr) == via
}

// kernelDst is kr's destination as a prefix; false for families other than
// IPv4 and IPv6.
func kernelDst(kr netlink.Route) (netip.Prefix, bool) {
	var zero netip.Addr
	switch kr.Family {
	case netlink.FAMILY_V4:
		zero = netip.IPv4Unspecified()
	case netlink.FAMILY_V6:
		zero = netip.IPv6Unspecified()
	default:
		return netip.Prefix{}, false
	}
	if kr.Dst == nil {
		return netip.PrefixFrom(zero, 0), true
	}
	addr, ok := netip.AddrFromSlice(kr.Dst.IP)
	if !ok {
		return netip.Prefix{}, false
	}
	if kr.Family == netlink.FAMILY_V4 {
		addr = addr.Unmap()
	}
	ones, _ := kr.Dst.Mask.Size()
	return netip.PrefixFrom(addr, ones), true
}

// viaOf is kr's gateway, or the zero Addr for a route without one.
func viaOf(kr netlink.Route) netip.Addr {
	addr, ok := netip.AddrFromSlice(kr.Gw)
	if !ok {
		return netip.Addr{}
	}
	if kr.Family == netlink.FAMILY_V4 {
		addr = addr.Unmap()
	}
	return addr
}

// inWords explains the kernel's answer for the operator, keeping the
// kernel's own text.
func inWords(err error) string {
	var hint string
	switch {
	case errors.Is(err, syscall.ENETUNREACH):
		hint = "the via address is not on a network this host reaches"
	case errors.Is(err, syscall.EEXIST):
		hint = "a route to this destination appeared since the table was read"
	case errors.Is(err, syscall.ESRCH):
		hint = "the route disappeared since the table was read"
	case errors.Is(err, syscall.EPERM):
		hint = "the agent lacks CAP_NET_ADMIN"
	case errors.Is(err, syscall.EINVAL):
		hint = "the kernel rejected the route as invalid"
	default:
		return err.Error()
	}
	return fmt.Sprintf("%s (%v)", hint, err)
}
