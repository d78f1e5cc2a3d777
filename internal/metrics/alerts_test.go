package metrics

import (
	"context"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/kubebyon/kubebyon/internal/testenv"
	"github.com/kubebyon/kubebyon/queries"
)

// TestEvaluateAlerts: an alert needs every successful scrape of the last
// ten minutes above its threshold, the scrapes covering the span; it is
// raised once, cleared by a scrape back under, and a gap does neither.
func TestEvaluateAlerts(t *testing.T) {
	t.Parallel()
	st := DefaultSettings() // 1 error/s, 1000 ms
	type scrape struct {
		ago    time.Duration
		errors *float64 // nil: unreachable
		p99    float64
	}
	high, low := ptr(5.0), ptr(0.0)
	tenMinutes := func(errs *float64, p99 float64) []scrape {
		var out []scrape
		for i := 10; i >= 1; i-- {
			out = append(out, scrape{ago: time.Duration(i)*time.Minute - 30*time.Second, errors: errs, p99: p99})
		}
		return out
	}
	for _, tc := range []struct {
		name    string
		scrapes []scrape
		open    []AlertKind // open before
		raised  []AlertKind
		cleared []AlertKind
	}{
		{name: "errors for ten minutes", scrapes: tenMinutes(high, 0.01), raised: []AlertKind{AlertErrors}},
		{name: "slow for ten minutes", scrapes: tenMinutes(low, 2), raised: []AlertKind{AlertLatency}},
		{name: "both", scrapes: tenMinutes(high, 2), raised: []AlertKind{AlertErrors, AlertLatency}},
		{name: "raised already", scrapes: tenMinutes(high, 0.01), open: []AlertKind{AlertErrors}},
		{name: "only five minutes of errors", scrapes: tenMinutes(high, 0.01)[5:]},
		{name: "one good scrape among them", scrapes: append(tenMinutes(high, 0.01)[:5], append([]scrape{{ago: 4*time.Minute + 45*time.Second, errors: low, p99: 0.01}}, tenMinutes(high, 0.01)[5:]...)...)},
		{name: "a gap among them counts for nothing", scrapes: append(tenMinutes(high, 0.01), scrape{ago: 10 * time.Second}), raised: []AlertKind{AlertErrors}},
		{name: "cleared by a scrape back under", scrapes: append(tenMinutes(high, 2), scrape{ago: 10 * time.Second, errors: low, p99: 0.01}), open: []AlertKind{AlertErrors, AlertLatency}, cleared: []AlertKind{AlertErrors, AlertLatency}},
		{name: "not cleared by a gap", scrapes: append(tenMinutes(high, 0.01), scrape{ago: 10 * time.Second}), open: []AlertKind{AlertErrors}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			svc := &Service{Pool: testenv.DB(t)}
			_, cluster := storeCluster(t, svc, "alerts@example.com")
			now := time.Now()
			for _, s := range tc.scrapes {
				smp := Sample{At: now.Add(-s.ago)}
				if s.errors != nil {
					smp.Up, smp.ErrorRate, smp.LatencyP99 = true, s.errors, ptr(s.p99)
				}
				require.NoError(t, svc.Record(ctx, cluster, smp))
			}
			for _, k := range tc.open {
				_, err := queries.New(svc.Pool).ClusterMetricAlertOpen(ctx, queries.ClusterMetricAlertOpenParams{ClusterID: cluster, Kind: string(k)})
				require.NoError(t, err)
			}
			var raised, cleared []Alert
			require.NoError(t, pgx.BeginFunc(ctx, svc.Pool, func(tx pgx.Tx) error {
				var err error
				raised, cleared, err = Evaluate(ctx, queries.New(tx), cluster, st, now)
				return err
			}))
			kinds := func(as []Alert) []AlertKind {
				var out []AlertKind
				for _, a := range as {
					out = append(out, a.Kind)
				}
				return out
			}
			require.Equal(t, tc.raised, kinds(raised), "raised")
			require.Equal(t, tc.cleared, kinds(cleared), "cleared")
		})
	}
}
