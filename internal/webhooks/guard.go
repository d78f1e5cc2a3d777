package webhooks

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"syscall"
	"time"
)

// AttemptTimeout bounds one attempt at a delivery, connection included.
const AttemptTimeout = 10 * time.Second

// refused are the networks a webhook may not reach unless the admins
// allow them: loopback, private (RFC 1918, fc00::/7), shared (CGNAT, where
// some clouds keep their metadata service: 100.100.100.200), link-local
// (169.254.169.254, the metadata service of most clouds; fe80::/10),
// unspecified, multicast, broadcast and the other special ranges.
var refused = []netip.Prefix{
	netip.MustParsePrefix("0.0.0.0/8"),
	netip.MustParsePrefix("10.0.0.0/8"),
	netip.MustParsePrefix("100.64.0.0/10"),
	netip.MustParsePrefix("127.0.0.0/8"),
	netip.MustParsePrefix("169.254.0.0/16"),
	netip.MustParsePrefix("172.16.0.0/12"),
	netip.MustParsePrefix("192.0.0.0/24"),
	netip.MustParsePrefix("192.168.0.0/16"),
	netip.MustParsePrefix("198.18.0.0/15"),
	netip.MustParsePrefix("224.0.0.0/4"),
	netip.MustParsePrefix("240.0.0.0/4"),
	netip.MustParsePrefix("::/128"),
	netip.MustParsePrefix("::1/128"),
	netip.MustParsePrefix("64:ff9b::/96"),
	netip.MustParsePrefix("64:ff9b:1::/48"),
	netip.MustParsePrefix("fc00::/7"),
	netip.MustParsePrefix("fe80::/10"),
	netip.MustParsePrefix("ff00::/8"),
}

// RefusedError is an address a webhook may not reach.
type RefusedError struct{ Addr netip.Addr }

func (e *RefusedError) Error() string {
	return fmt.Sprintf("address %s is loopback, private, link-local or otherwise internal; webhooks may not reach it unless an admin allows its network", e.Addr)
}

// ErrRedirect is a webhook that answered with a redirect, which is not
// followed (it could lead anywhere, an internal address included).
var ErrRedirect = errors.New("the webhook answered with a redirect, which is not followed: use the final URL")

// Guard decides which addresses webhooks may reach.
type Guard struct {
	// Allowed are networks reachable despite being refused otherwise.
	Allowed []netip.Prefix
}

// Check refuses an internal address that no allowed network holds.
func (g Guard) Check(addr netip.Addr) error {
	addr = addr.Unmap()
	for _, p := range g.Allowed {
		if p.Contains(addr) {
			return nil
		}
	}
	if !addr.IsValid() || !addr.IsGlobalUnicast() {
		return &RefusedError{Addr: addr}
	}
	for _, p := range refused {
		if p.Contains(addr) {
			return &RefusedError{Addr: addr}
		}
	}
	return nil
}

// Client is an HTTP client that checks the address of every connection
// it opens, after name resolution (so a name that resolves, or later
// rebinds, to an internal address is refused too), uses no proxy, follows
// no redirect and gives up after AttemptTimeout.
func (g Guard) Client() *http.Client {
	d := &net.Dialer{
		Timeout: AttemptTimeout,
		ControlContext: func(_ context.Context, _, address string, _ syscall.RawConn) error {
			ap, err := netip.ParseAddrPort(address)
			if err != nil {
				return fmt.Errorf("webhook address %q: %w", address, err)
			}
			return g.Check(ap.Addr())
		},
	}
	return &http.Client{
		Transport: &http.Transport{
			Proxy:                 nil,
			DialContext:           d.DialContext,
			TLSHandshakeTimeout:   AttemptTimeout,
			ResponseHeaderTimeout: AttemptTimeout,
			DisableKeepAlives:     true,
			ForceAttemptHTTP2:     true,
		},
		Timeout:       AttemptTimeout,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}
}
