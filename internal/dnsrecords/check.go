package dnsrecords

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"slices"
	"strings"

	"github.com/miekg/dns"
)

// CheckWildcard resolves a random name under domain, through resolver
// (host:port; empty: the system's), and says whether it reaches the edge
// addresses want: every address it resolves to is one of them.
func CheckWildcard(ctx context.Context, resolver, domain string, want []netip.Addr) CheckResult {
	name := "kubebyon-check-" + strings.ToLower(rand.Text()[:12]) + "." + domain
	res := CheckResult{Name: name}
	found, err := resolve(ctx, resolver, name)
	if err != nil {
		res.Err = err.Error()
		return res
	}
	res.Found = strs(found)
	var stray []string
	for _, a := range found {
		if !slices.Contains(want, a) {
			stray = append(stray, a.String())
		}
	}
	switch {
	case len(found) == 0:
		res.Err = fmt.Sprintf("%s has no address: make *.%s point at the edge addresses (%s)", name, domain, strings.Join(strs(want), ", "))
	case len(stray) > 0:
		res.Err = fmt.Sprintf("%s resolves to %s, which is not an edge address (%s)", name, strings.Join(stray, ", "), strings.Join(strs(want), ", "))
	default:
		res.OK = true
	}
	return res
}

// resolve looks up name's addresses, sorted; none when it does not exist.
func resolve(ctx context.Context, resolver, name string) ([]netip.Addr, error) {
	if resolver == "" {
		addrs, err := net.DefaultResolver.LookupNetIP(ctx, "ip", name)
		var dnsErr *net.DNSError
		if errors.As(err, &dnsErr) && dnsErr.IsNotFound {
			return nil, nil
		}
		if err != nil {
			return nil, fmt.Errorf("look up %s: %w", name, err)
		}
		for i := range addrs {
			addrs[i] = addrs[i].Unmap()
		}
		return sortAddrs(addrs), nil
	}
	r, err := Resolve(ctx, resolver, name)
	return r.Addrs, err
}

// Resolution is what a name resolves to: the aliases on its way (CNAME
// targets, in order) and its addresses, sorted.
type Resolution struct {
	Aliases []string
	Addrs   []netip.Addr
}

// String says what the name resolves to, for a person: its aliases and
// addresses, or "nothing".
func (r Resolution) String() string {
	parts := slices.Clone(r.Aliases)
	parts = append(parts, strs(r.Addrs)...)
	if len(parts) == 0 {
		return "nothing"
	}
	return strings.Join(parts, ", ")
}

// Resolve looks up name through resolver (host:port; empty: the
// system's): the CNAMEs on its way and its addresses; none when it does
// not exist.
func Resolve(ctx context.Context, resolver, name string) (Resolution, error) {
	var r Resolution
	if resolver == "" {
		cname, err := net.DefaultResolver.LookupCNAME(ctx, name)
		var dnsErr *net.DNSError
		if errors.As(err, &dnsErr) && dnsErr.IsNotFound {
			return r, nil
		}
		if err != nil {
			return r, fmt.Errorf("look up %s: %w", name, err)
		}
		if cname = strings.TrimSuffix(cname, "."); cname != "" && !strings.EqualFold(cname, name) {
			r.Aliases = []string{strings.ToLower(cname)}
		}
		r.Addrs, err = resolve(ctx, "", name)
		return r, err
	}
	c := &dns.Client{}
	for _, qtype := range []uint16{dns.TypeA, dns.TypeAAAA} {
		m := new(dns.Msg)
		m.SetQuestion(dns.Fqdn(name), qtype)
		resp, _, err := c.ExchangeContext(ctx, m, resolver)
		if err == nil && resp.Truncated {
			resp, _, err = (&dns.Client{Net: "tcp"}).ExchangeContext(ctx, m, resolver)
		}
		if err != nil {
			return r, fmt.Errorf("look up %s through %s: %w", name, resolver, err)
		}
		if resp.Rcode != dns.RcodeSuccess && resp.Rcode != dns.RcodeNameError {
			return r, fmt.Errorf("look up %s through %s: %s", name, resolver, dns.RcodeToString[resp.Rcode])
		}
		// A name whose alias leads nowhere is NXDOMAIN with the alias in
		// the answer.
		for _, rr := range resp.Answer {
			if c, ok := rr.(*dns.CNAME); ok {
				if t := strings.ToLower(strings.TrimSuffix(c.Target, ".")); !slices.Contains(r.Aliases, t) {
					r.Aliases = append(r.Aliases, t)
				}
			}
		}
		r.Addrs = append(r.Addrs, answerAddrs(resp)...)
	}
	r.Addrs = sortAddrs(r.Addrs)
	return r, nil
}
