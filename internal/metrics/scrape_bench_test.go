package metrics_test

import (
	"bytes"
	"compress/gzip"
	"context"
	"fmt"
	"io"
	"net/http"
	"syscall"
	"testing"
	"time"

	"github.com/prometheus/common/expfmt"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"

	"github.com/kubebyon/kubebyon/internal/metrics"
	"github.com/kubebyon/kubebyon/internal/testenv"
)

// formats are the expositions an apiserver offers.
var formats = []struct {
	name   string
	format expfmt.Format
}{
	{"protobuf", expfmt.FmtProtoDelim},
	{"text", expfmt.FmtText},
}

// BenchmarkParse parses the /metrics of a real apiserver, fresh and after
// a request of each verb to each resource (which makes the request
// families several times larger, as traffic does on a cluster in use).
func BenchmarkParse(b *testing.B) {
	k := testenv.NewKube(b)
	for _, state := range []string{"fresh", "exercised"} {
		if state == "exercised" {
			exercise(b, k.Config)
		}
		for _, f := range formats {
			body, err := get(k.Config, string(f.format), "identity")
			if err != nil {
				b.Fatal(err)
			}
			b.Run(state+"/"+f.name, func(b *testing.B) {
				b.SetBytes(int64(len(body)))
				b.ReportAllocs()
				for b.Loop() {
					if _, err := metrics.Parse(bytes.NewReader(body), f.format); err != nil {
						b.Fatal(err)
					}
				}
				b.ReportMetric(float64(len(body))/1024, "body-KiB")
			})
		}
	}
}

// BenchmarkScrape scrapes a real apiserver over HTTPS and derives a sample,
// as the scrape job does, 8 at a time, and reports the CPU the scraping
// process spent per scrape (cpu-ns/op: ns/op is mostly the apiserver's
// time). The variants compare the formats and gzip; Scrape itself asks
// for protobuf without gzip.
func BenchmarkScrape(b *testing.B) {
	k := testenv.NewKube(b)
	exercise(b, k.Config)
	ctx := context.Background()
	prev, err := metrics.Scrape(ctx, k.Config, nil)
	if err != nil {
		b.Fatal(err)
	}
	prevAt := time.Now()
	measure := func(b *testing.B, scrape func() error) {
		b.ReportAllocs()
		b.SetParallelism(4) // 8 on 2 cores
		cpu := cpuTime()
		b.RunParallel(func(pb *testing.PB) {
			for pb.Next() {
				if err := scrape(); err != nil {
					b.Error(err)
				}
			}
		})
		b.ReportMetric(float64(cpuTime()-cpu)/float64(b.N), "cpu-ns/op")
	}
	b.Run("Scrape", func(b *testing.B) {
		measure(b, func() error {
			cur, err := metrics.Scrape(ctx, k.Config, nil)
			_ = metrics.Derive(&prev, prevAt, cur, time.Now())
			return err
		})
	})
	for _, f := range formats {
		for _, encoding := range []string{"identity", "gzip"} {
			b.Run(f.name+"/"+encoding, func(b *testing.B) {
				measure(b, func() error {
					body, err := get(k.Config, string(f.format), encoding)
					if err != nil {
						return err
					}
					_, err = metrics.Parse(bytes.NewReader(body), f.format)
					return err
				})
			})
		}
	}
}

// cpuTime is the CPU time the process has spent, user and system.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// get is the apiserver's /metrics in the format asked for, sent with the
// encoding asked for.
func get(cfg *rest.Config, accept, encoding string) ([]byte, error) {
	client, err := rest.HTTPClientFor(cfg)
	if err != nil {
		return nil, err
	}
	req, err := http.NewRequest(http.MethodGet, cfg.Host+"/metrics", nil)
	if err != nil {
		return nil, err
	}
	req.Header.Set("Accept", accept)
	req.Header.Set("Accept-Encoding", encoding)
	resp, err := client.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	var r io.Reader = resp.Body
	if got := resp.Header.Get("Content-Encoding"); got == "gzip" {
		if r, err = gzip.NewReader(r); err != nil {
			return nil, err
		}
	} else if encoding == "gzip" {
		return nil, fmt.Errorf("asked for gzip, got %q", got)
	}
	return io.ReadAll(r)
}

// exercise lists, gets and deletes (a missing name) each resource of the apiserver,
// cluster-wide and in a namespace, adding the series a cluster in use has.
func exercise(b *testing.B, cfg *rest.Config) {
	b.Helper()
	ctx := context.Background()
	dc, err := dynamic.NewForConfig(cfg)
	if err != nil {
		b.Fatal(err)
	}
	disco, err := discovery.NewDiscoveryClientForConfig(cfg)
	if err != nil {
		b.Fatal(err)
	}
	lists, err := disco.ServerPreferredResources()
	if err != nil {
		b.Fatal(err)
	}
	for _, list := range lists {
		gv, err := schema.ParseGroupVersion(list.GroupVersion)
		if err != nil {
			b.Fatal(err)
		}
		for _, r := range list.APIResources {
			res := dc.Resource(gv.WithResource(r.Name))
			if _, err := res.List(ctx, metav1.ListOptions{Limit: 1}); err != nil {
				continue // not listable
			}
			_, _ = res.Get(ctx, "missing", metav1.GetOptions{})
			_ = res.Delete(ctx, "missing", metav1.DeleteOptions{})
			if r.Namespaced {
				in := res.Namespace("default")
				_, _ = in.List(ctx, metav1.ListOptions{Limit: 1})
				_, _ = in.Get(ctx, "missing", metav1.GetOptions{})
				_ = in.Delete(ctx, "missing", metav1.DeleteOptions{})
			}
		}
	}
}
