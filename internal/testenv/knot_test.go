package testenv_test

import (
	"testing"
	"time"

	"github.com/miekg/dns"
	"github.com/stretchr/testify/require"

	"github.com/kubebyon/kubebyon/internal/testenv"
)

// TestKnot checks the DNS server: it serves its zone, applies an update
// signed with its TSIG key and refuses one that is not signed.
func TestKnot(t *testing.T) {
	t.Parallel()
	s := testenv.Knot(t, "clusters.test")
	require.Equal(t, "clusters.test", s.Zone)
	require.Equal(t, []string{"127.0.0.1"}, s.Lookup(t, "ns.clusters.test", dns.TypeA))
	require.Empty(t, s.Lookup(t, "a.clusters.test", dns.TypeA), "NXDOMAIN")
	require.Empty(t, s.Lookup(t, "ns.clusters.test", dns.TypeAAAA), "no data")

	update := func(name, ip string) *dns.Msg {
		rr, err := dns.NewRR(name + ". 60 IN A " + ip)
		require.NoError(t, err)
		m := new(dns.Msg)
		m.SetUpdate(s.Zone + ".")
		m.Insert([]dns.RR{rr})
		return m
	}

	keyName := dns.Fqdn(s.KeyName)
	signed := update("a.clusters.test", "10.0.0.1")
	signed.SetTsig(keyName, dns.Fqdn(s.KeyAlgorithm), 300, time.Now().Unix())
	c := &dns.Client{Net: "tcp", Timeout: 5 * time.Second, TsigSecret: map[string]string{keyName: s.KeySecret}}
	r, _, err := c.Exchange(signed, s.Addr)
	require.NoError(t, err)
	require.Equal(t, dns.RcodeSuccess, r.Rcode, dns.RcodeToString[r.Rcode])
	require.Equal(t, []string{"10.0.0.1"}, s.Lookup(t, "a.clusters.test", dns.TypeA))

	unsigned := update("b.clusters.test", "10.0.0.2")
	r, _, err = (&dns.Client{Net: "tcp", Timeout: 5 * time.Second}).Exchange(unsigned, s.Addr)
	require.NoError(t, err)
	require.Contains(t, []int{dns.RcodeRefused, dns.RcodeNotAuth}, r.Rcode, dns.RcodeToString[r.Rcode])
	require.Empty(t, s.Lookup(t, "b.clusters.test", dns.TypeA))
}
