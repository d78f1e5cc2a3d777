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
	var out []netip.Addr
	c := &dns.Client{}
	for _, qtype := range []uint16{dns.TypeA, dns.TypeAAAA} {
		m := new(dns.Msg)
		m.SetQuestion(dns.Fqdn(name), qtype)
		resp, _, err := c.ExchangeContext(ctx, m, resolver)
		if err == nil && resp.Truncated {
			resp, _, err = (&dns.Client{Net: "tcp"}).ExchangeContext(ctx, m, resolver)
		}
		if err != nil {
			return nil, fmt.Errorf("look up %s through %s: %w", name, resolver, err)
		}
		if resp.Rcode == dns.RcodeNameError {
			return nil, nil
		}
		if resp.Rcode != dns.RcodeSuccess {
			return nil, fmt.Errorf("look up %s through %s: %s", name, resolver, dns.RcodeToString[resp.Rcode])
		}
		out = append(out, answerAddrs(resp)...)
	}
	return sortAddrs(out), nil
}
