package dnsrecords

import (
	"context"
	"fmt"
	"net"
	"net/netip"
	"time"

	"github.com/miekg/dns"
)

// Writer writes one kind of record store: a name's A and AAAA records.
type Writer interface {
	// Lookup returns the addresses the store holds for name, sorted;
	// none when it has no record.
	Lookup(ctx context.Context, name string) ([]netip.Addr, error)
	// Set makes addrs name's only A and AAAA records.
	Set(ctx context.Context, name string, addrs []netip.Addr) error
	// Remove deletes name's A and AAAA records; none is not an error.
	Remove(ctx context.Context, name string) error
}

// RFC2136 writes records on a primary DNS server with dynamic updates
// (RFC 2136) signed with a TSIG key, and reads them back from it.
type RFC2136 struct {
	Server    string // host:port
	Zone      string
	KeyName   string
	Algorithm string // hmac-sha256 ...
	Secret    string // base64
	TTL       uint32
	// Timeout bounds each exchange; zero means 5 s.
	Timeout time.Duration
}

// RFC2136From is the writer the settings describe.
func RFC2136From(s Settings) *RFC2136 {
	return &RFC2136{Server: s.Server, Zone: s.Zone, KeyName: s.KeyName, Algorithm: s.KeyAlgorithm, Secret: s.KeySecret, TTL: uint32(s.TTL)}
}

func (r *RFC2136) key() string { return dns.Fqdn(r.KeyName) }

func (r *RFC2136) client() *dns.Client {
	timeout := r.Timeout
	if timeout == 0 {
		timeout = 5 * time.Second
	}
	// TCP: an update and its answer are never truncated.
	return &dns.Client{Net: "tcp", Timeout: timeout, TsigSecret: map[string]string{r.key(): r.Secret}}
}

// exchange sends m signed, and turns a refusal into an error that says
// what the server answered.
func (r *RFC2136) exchange(ctx context.Context, m *dns.Msg, what string) (*dns.Msg, error) {
	m.SetTsig(r.key(), dns.Fqdn(r.Algorithm), 300, time.Now().Unix())
	resp, _, err := r.client().ExchangeContext(ctx, m, r.Server)
	if err != nil {
		return nil, fmt.Errorf("%s on %s: %w", what, r.Server, err)
	}
	if t := resp.IsTsig(); t != nil && t.Error != dns.RcodeSuccess {
		return nil, fmt.Errorf("%s on %s: the server rejected the TSIG key %s: %s", what, r.Server, r.KeyName, dns.RcodeToString[int(t.Error)])
	}
	return resp, nil
}

// Lookup asks the primary for name's A and AAAA records.
func (r *RFC2136) Lookup(ctx context.Context, name string) ([]netip.Addr, error) {
	var out []netip.Addr
	for _, qtype := range []uint16{dns.TypeA, dns.TypeAAAA} {
		m := new(dns.Msg)
		m.SetQuestion(dns.Fqdn(name), qtype)
		m.RecursionDesired = false
		resp, err := r.exchange(ctx, m, "look up "+name)
		if err != nil {
			return nil, err
		}
		if resp.Rcode != dns.RcodeSuccess && resp.Rcode != dns.RcodeNameError {
			return nil, fmt.Errorf("look up %s on %s: %s", name, r.Server, dns.RcodeToString[resp.Rcode])
		}
		out = append(out, answerAddrs(resp)...)
	}
	return sortAddrs(out), nil
}

// answerAddrs are the addresses of an answer's A and AAAA records.
func answerAddrs(resp *dns.Msg) []netip.Addr {
	var out []netip.Addr
	for _, rr := range resp.Answer {
		var ip net.IP
		switch rr := rr.(type) {
		case *dns.A:
			ip = rr.A
		case *dns.AAAA:
			ip = rr.AAAA
		default:
			continue
		}
		if a, ok := netip.AddrFromSlice(ip); ok {
			out = append(out, a.Unmap())
		}
	}
	return out
}

// Set replaces name's A and AAAA records with addrs in one update.
func (r *RFC2136) Set(ctx context.Context, name string, addrs []netip.Addr) error {
	m := r.update(name)
	for _, a := range addrs {
		hdr := dns.RR_Header{Name: dns.Fqdn(name), Class: dns.ClassINET, Ttl: r.TTL}
		if a.Is4() {
			hdr.Rrtype = dns.TypeA
			m.Insert([]dns.RR{&dns.A{Hdr: hdr, A: a.AsSlice()}})
		} else {
			hdr.Rrtype = dns.TypeAAAA
			m.Insert([]dns.RR{&dns.AAAA{Hdr: hdr, AAAA: a.AsSlice()}})
		}
	}
	return r.send(ctx, m, "update "+name)
}

// Remove deletes name's A and AAAA records (and a CNAME).
func (r *RFC2136) Remove(ctx context.Context, name string) error {
	return r.send(ctx, r.update(name), "remove "+name)
}

// update is an update of the zone that first removes name's A, AAAA and
// CNAME record sets (an alias has no other records beside it).
func (r *RFC2136) update(name string) *dns.Msg {
	m := new(dns.Msg)
	m.SetUpdate(dns.Fqdn(r.Zone))
	m.RemoveRRset([]dns.RR{
		&dns.A{Hdr: dns.RR_Header{Name: dns.Fqdn(name), Rrtype: dns.TypeA, Class: dns.ClassINET}},
		&dns.AAAA{Hdr: dns.RR_Header{Name: dns.Fqdn(name), Rrtype: dns.TypeAAAA, Class: dns.ClassINET}},
		&dns.CNAME{Hdr: dns.RR_Header{Name: dns.Fqdn(name), Rrtype: dns.TypeCNAME, Class: dns.ClassINET}},
	})
	return m
}

func (r *RFC2136) send(ctx context.Context, m *dns.Msg, what string) error {
	resp, err := r.exchange(ctx, m, what)
	if err != nil {
		return err
	}
	if resp.Rcode != dns.RcodeSuccess {
		return fmt.Errorf("%s on %s: the server answered %s", what, r.Server, dns.RcodeToString[resp.Rcode])
	}
	return nil
}

// Check asks the primary for the zone's SOA, signed: it tells whether the
// server answers, serves the zone, and takes the key.
func (r *RFC2136) Check(ctx context.Context) error {
	m := new(dns.Msg)
	m.SetQuestion(dns.Fqdn(r.Zone), dns.TypeSOA)
	m.RecursionDesired = false
	resp, err := r.exchange(ctx, m, "ask for the SOA of "+r.Zone)
	if err != nil {
		return err
	}
	if resp.Rcode != dns.RcodeSuccess || !resp.Authoritative {
		return fmt.Errorf("%s is not a primary of %s (it answered %s)", r.Server, r.Zone, dns.RcodeToString[resp.Rcode])
	}
	return nil
}
