package testenv

import (
	"crypto/rand"
	"encoding/base64"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/miekg/dns"
)

// DNSServer is a private Knot DNS server (Knot) that is the primary of one
// zone and takes RFC 2136 dynamic updates signed with its TSIG key, and no
// others. It answers queries from anyone.
type DNSServer struct {
	Addr         string // "127.0.0.1:port", UDP and TCP
	Zone         string // as given, without the trailing dot
	KeyName      string // the TSIG key's name, e.g. "kubebyon-test"
	KeyAlgorithm string // "hmac-sha256"
	KeySecret    string // base64
}

const (
	knotKeyName      = "kubebyon-test"
	knotKeyAlgorithm = "hmac-sha256"
	// knotAttempts is how many ports Knot tries before giving up: freePort's
	// port may be taken (UDP, or by another test) before knotd binds it.
	knotAttempts = 5
)

// knotd is the path of Debian's knotd (or $KNOTD). A missing knotd fails
// the test: install the Debian package 'knot'.
func knotd(t testing.TB) string {
	t.Helper()
	if p := os.Getenv("KNOTD"); p != "" {
		return p
	}
	p, err := exec.LookPath("knotd")
	if err != nil {
		t.Fatalf("testenv: no knotd found (install the Debian package 'knot' or set KNOTD): %v", err)
	}
	return p
}

// Knot starts a Knot DNS server of its own for t, the primary of zone
// (such as "clusters.test": an SOA and ns.<zone>, TTL 60) on 127.0.0.1, and
// returns once it answers for the zone. It is stopped when t ends; its log
// is shown if t failed.
func Knot(t testing.TB, zone string) *DNSServer {
	t.Helper()
	bin := knotd(t)
	zone = strings.TrimSuffix(zone, ".")
	if _, ok := dns.IsDomainName(zone); !ok || zone == "" {
		t.Fatalf("testenv: knot: %q is not a zone name", zone)
	}
	dir, err := tempDir("kubebyon-knot-")
	if err != nil {
		t.Fatalf("testenv: knot: %v", err)
	}
	// Registered first, so it runs after knotd is stopped.
	t.Cleanup(func() { _ = os.RemoveAll(dir) })

	secret := make([]byte, 32)
	if _, err := rand.Read(secret); err != nil {
		t.Fatalf("testenv: knot: TSIG secret: %v", err)
	}
	s := &DNSServer{
		Zone:         zone,
		KeyName:      knotKeyName,
		KeyAlgorithm: knotKeyAlgorithm,
		KeySecret:    base64.StdEncoding.EncodeToString(secret),
	}
	zoneFile := fmt.Sprintf(`$TTL 60
@	IN	SOA	ns.%[1]s. hostmaster.%[1]s. 1 3600 600 86400 60
@	IN	NS	ns.%[1]s.
ns	IN	A	127.0.0.1
`, zone)
	// Knot names the file after the zone's canonical (lower-case) name.
	if err := os.WriteFile(filepath.Join(dir, strings.ToLower(zone)+".zone"), []byte(zoneFile), 0o600); err != nil {
		t.Fatalf("testenv: knot: write zone file: %v", err)
	}

	var logs Output
	for attempt := 1; ; attempt++ {
		k, retry, err := startKnot(bin, dir, s, &logs)
		if err == nil {
			t.Cleanup(func() {
				k.stop()
				if t.Failed() {
					t.Logf("testenv: knotd log:\n%s", logs.String())
				}
			})
			return s
		}
		if !retry || attempt == knotAttempts {
			t.Fatalf("testenv: knot: %v\n%s", err, tail(logs.String(), 4000))
		}
	}
}

// knotProcess is a running knotd.
type knotProcess struct {
	cmd  *exec.Cmd
	done chan struct{}
}

// startKnot runs knotd on a free port, setting s.Addr, and waits until it
// answers for s.Zone. retry is whether another port may do better: the
// port was taken.
func startKnot(bin, dir string, s *DNSServer, logs *Output) (k *knotProcess, retry bool, err error) {
	port, err := freePort()
	if err != nil {
		return nil, false, fmt.Errorf("free port: %w", err)
	}
	s.Addr = fmt.Sprintf("127.0.0.1:%d", port)
	conf := filepath.Join(dir, "knot.conf")
	if err := os.WriteFile(conf, []byte(knotConfig(dir, port, s)), 0o600); err != nil {
		return nil, false, fmt.Errorf("write config: %w", err)
	}
	logStart := len(logs.String())
	cmd := exec.Command(bin, "-c", conf)
	cmd.Stdout, cmd.Stderr = logs, logs
	cmd.SysProcAttr = dieWithTests()
	if err := cmd.Start(); err != nil {
		return nil, false, fmt.Errorf("start knotd: %w", err)
	}
	k = &knotProcess{cmd: cmd, done: make(chan struct{})}
	go func() { _ = cmd.Wait(); close(k.done) }()

	c := &dns.Client{Net: "tcp", Timeout: 2 * time.Second}
	q := new(dns.Msg)
	q.SetQuestion(dns.Fqdn(s.Zone), dns.TypeSOA)
	q.RecursionDesired = false
	deadline := time.Now().Add(30 * time.Second)
	for {
		select {
		case <-k.done:
			// knotd ends at once when it cannot bind its address.
			taken := strings.Contains(logs.String()[logStart:], "cannot bind")
			return nil, taken, fmt.Errorf("knotd on %s exited: %s", s.Addr, cmd.ProcessState)
		default:
		}
		r, _, err := c.Exchange(q, s.Addr)
		if err == nil && r.Rcode == dns.RcodeSuccess && len(r.Answer) > 0 {
			return k, false, nil
		}
		if time.Now().After(deadline) {
			k.stop()
			if err == nil {
				err = fmt.Errorf("rcode %s", dns.RcodeToString[r.Rcode])
			}
			return nil, false, fmt.Errorf("knotd on %s does not answer for %s: %w", s.Addr, s.Zone, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// stop asks knotd to end (SIGTERM) and waits for it, killing it if it
// takes more than 10 seconds.
func (k *knotProcess) stop() {
	select {
	case <-k.done:
		return
	default:
	}
	_ = k.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-k.done:
	case <-time.After(10 * time.Second):
		_ = k.cmd.Process.Kill()
		<-k.done
	}
}

// knotConfig is knotd's configuration: everything (control socket, zone
// file, journal, timers) in dir, one worker of each kind, and an ACL that
// lets the key update the zone and nothing else.
func knotConfig(dir string, port int, s *DNSServer) string {
	return fmt.Sprintf(`server:
    rundir: %[1]q
    listen: 127.0.0.1@%[2]d
    udp-workers: 1
    tcp-workers: 1
    background-workers: 1
log:
  - target: stderr
    any: info
database:
    storage: %[1]q
key:
  - id: %[3]s
    algorithm: %[4]s
    secret: %[5]s
acl:
  - id: update
    key: %[3]s
    action: update
template:
  - id: default
    storage: %[1]q
    file: "%%s.zone"
    zonefile-sync: -1
    zonefile-load: difference-no-serial
    journal-content: all
zone:
  - domain: %[6]s
    acl: update
`, dir, port, s.KeyName, s.KeyAlgorithm, s.KeySecret, s.Zone)
}

// Lookup asks the server (TCP, no recursion) for name's records of type
// qtype (dns.TypeA ...) and returns their values in presentation format
// ("10.0.0.1"): none for NXDOMAIN or no data. Other errors fail the test.
func (s *DNSServer) Lookup(t testing.TB, name string, qtype uint16) []string {
	t.Helper()
	q := new(dns.Msg)
	q.SetQuestion(dns.Fqdn(name), qtype)
	q.RecursionDesired = false
	c := &dns.Client{Net: "tcp", Timeout: 5 * time.Second}
	r, _, err := c.Exchange(q, s.Addr)
	if err != nil {
		t.Fatalf("testenv: dns lookup %s %s: %v", name, dns.TypeToString[qtype], err)
	}
	switch r.Rcode {
	case dns.RcodeSuccess:
	case dns.RcodeNameError:
		return nil
	default:
		t.Fatalf("testenv: dns lookup %s %s: rcode %s", name, dns.TypeToString[qtype], dns.RcodeToString[r.Rcode])
	}
	var values []string
	for _, rr := range r.Answer {
		if rr.Header().Rrtype != qtype {
			continue
		}
		values = append(values, strings.TrimPrefix(rr.String(), rr.Header().String()))
	}
	return values
}
