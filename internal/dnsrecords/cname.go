package dnsrecords

import (
	"context"
	"fmt"
	"strings"

	"github.com/miekg/dns"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// CNAMEWriter writes aliases: a name that stands for another (the host
// names of managed ingress point at their cluster's CNAME target).
type CNAMEWriter interface {
	// LookupCNAME returns the name's target, "" when it has none.
	LookupCNAME(ctx context.Context, name string) (string, error)
	// SetCNAME makes target the name's only record (a CNAME has no
	// other records beside it).
	SetCNAME(ctx context.Context, name, target string) error
	// RemoveCNAME deletes the name's CNAME; none is not an error.
	RemoveCNAME(ctx context.Context, name string) error
}

var (
	_ CNAMEWriter = (*RFC2136)(nil)
	_ CNAMEWriter = (*ExternalDNS)(nil)
)

// LookupCNAME asks the primary for name's CNAME.
func (r *RFC2136) LookupCNAME(ctx context.Context, name string) (string, error) {
	m := new(dns.Msg)
	m.SetQuestion(dns.Fqdn(name), dns.TypeCNAME)
	m.RecursionDesired = false
	resp, err := r.exchange(ctx, m, "look up "+name)
	if err != nil {
		return "", err
	}
	if resp.Rcode != dns.RcodeSuccess && resp.Rcode != dns.RcodeNameError {
		return "", fmt.Errorf("look up %s on %s: %s", name, r.Server, dns.RcodeToString[resp.Rcode])
	}
	for _, rr := range resp.Answer {
		if c, ok := rr.(*dns.CNAME); ok {
			return strings.TrimSuffix(c.Target, "."), nil
		}
	}
	return "", nil
}

// SetCNAME replaces whatever name has (addresses or another alias) with a
// CNAME to target, in one update.
func (r *RFC2136) SetCNAME(ctx context.Context, name, target string) error {
	m := r.update(name)
	hdr := dns.RR_Header{Name: dns.Fqdn(name), Class: dns.ClassINET, Rrtype: dns.TypeCNAME, Ttl: r.TTL}
	m.Insert([]dns.RR{&dns.CNAME{Hdr: hdr, Target: dns.Fqdn(target)}})
	return r.send(ctx, m, "alias "+name)
}

// RemoveCNAME deletes name's CNAME.
func (r *RFC2136) RemoveCNAME(ctx context.Context, name string) error {
	m := new(dns.Msg)
	m.SetUpdate(dns.Fqdn(r.Zone))
	m.RemoveRRset([]dns.RR{&dns.CNAME{Hdr: dns.RR_Header{Name: dns.Fqdn(name), Rrtype: dns.TypeCNAME, Class: dns.ClassINET}}})
	return r.send(ctx, m, "remove the alias "+name)
}

// LookupCNAME reads the target name's object holds.
func (e *ExternalDNS) LookupCNAME(ctx context.Context, name string) (string, error) {
	obj, err := e.resource().Get(ctx, name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return "", nil
	}
	if err != nil {
		return "", fmt.Errorf("read DNSEndpoint %s/%s: %w", e.Namespace, name, err)
	}
	eps, _, _ := unstructured.NestedSlice(obj.Object, "spec", "endpoints")
	for _, ep := range eps {
		m, ok := ep.(map[string]any)
		if !ok || m["dnsName"] != name || m["recordType"] != "CNAME" {
			continue
		}
		if targets, _, _ := unstructured.NestedStringSlice(m, "targets"); len(targets) > 0 {
			return strings.TrimSuffix(targets[0], "."), nil
		}
	}
	return "", nil
}

// SetCNAME creates or replaces name's object with one CNAME endpoint.
func (e *ExternalDNS) SetCNAME(ctx context.Context, name, target string) error {
	return e.write(ctx, name, []any{map[string]any{"dnsName": name, "recordType": "CNAME", "targets": []any{target}, "recordTTL": e.TTL}})
}

// RemoveCNAME deletes name's object.
func (e *ExternalDNS) RemoveCNAME(ctx context.Context, name string) error { return e.Remove(ctx, name) }
