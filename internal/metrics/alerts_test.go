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
	high, low := ptr(5.0), ptr(0.0)
	tenMinutes := func(errs *float64, p99 float64) []alertScrape {
		var out []alertScrape
		for i := 10; i >= 1; i-- {
			out = append(out, alertScrape{ago: time.Duration(i)*time.Minute - 30*time.Second, errors: errs, p99: p99})
		}
		return out
	}
	for _, tc := range []struct {
		name    string
		scrapes []alertScrape
		open    []AlertKind // open before
		// latest is the 5xx rate of the scrape just made, which the
		// database may not show yet (nil: none).
		latest  *float64
		raised  []AlertKind
		cleared []AlertKind
	}{
		{name: "errors for ten minutes", scrapes: tenMinutes(high, 0.01), raised: []AlertKind{AlertErrors}},
		{name: "slow for ten minutes", scrapes: tenMinutes(low, 2), raised: []AlertKind{AlertLatency}},
		{name: "both", scrapes: tenMinutes(high, 2), raised: []AlertKind{AlertErrors, AlertLatency}},
		{name: "raised already", scrapes: tenMinutes(high, 0.01), open: []AlertKind{AlertErrors}},
		{name: "only five minutes of errors", scrapes: tenMinutes(high, 0.01)[5:]},
		{name: "one good scrape among them", scrapes: append(tenMinutes(high, 0.01)[:5], append([]alertScrape{{ago: 4*time.Minute + 45*time.Second, errors: low, p99: 0.01}}, tenMinutes(high, 0.01)[5:]...)...)},
		{name: "a gap among them counts for nothing", scrapes: append(tenMinutes(high, 0.01), alertScrape{ago: 10 * time.Second}), raised: []AlertKind{AlertErrors}},
		{name: "cleared by a scrape back under", scrapes: append(tenMinutes(high, 2), alertScrape{ago: 10 * time.Second, errors: low, p99: 0.01}), open: []AlertKind{AlertErrors, AlertLatency}, cleared: []AlertKind{AlertErrors, AlertLatency}},
		{name: "cleared by the scrape just made, not stored yet", scrapes: tenMinutes(high, 0.01), latest: low, open: []AlertKind{AlertErrors}, cleared: []AlertKind{AlertErrors}},
		{name: "not cleared by a gap", scrapes: append(tenMinutes(high, 0.01), alertScrape{ago: 10 * time.Second}), open: []AlertKind{AlertErrors}},
	} {
		for _, vm := range []bool{false, true} {
			name := tc.name + "/postgres"
			if vm {
				name = tc.name + "/victoriametrics"
			}
			t.Run(name, func(t *testing.T) {
				t.Parallel()
				testEvaluateAlerts(t, vm, st, tc.scrapes, tc.latest, tc.open, tc.raised, tc.cleared)
			})
		}
	}
}

// alertScrape is a scrape of TestEvaluateAlerts: ago before now, with a
// 5xx rate (nil: unreachable) and p99.
type alertScrape struct {
	ago    time.Duration
	errors *float64
	p99    float64
}

// testEvaluateAlerts records the scrapes of a cluster in PostgreSQL or
// (vm) a VictoriaMetrics of the test's own, opens the alerts open, and
// checks what Evaluate raises and clears, told of a latest scrape not
// stored.
func testEvaluateAlerts(t *testing.T, vm bool, st Settings, scrapes []alertScrape, latest *float64, open, wantRaised, wantCleared []AlertKind) {
	ctx := context.Background()
	svc := &Service{Pool: testenv.DB(t)}
	var vmURL string
	if vm {
		vmURL = testenv.VictoriaMetrics(t)
		svc.Backend = Prom{WriteURL: vmURL + "/api/v1/write", QueryURL: vmURL}
	}
	_, cluster := storeCluster(t, svc, "alerts@example.com")
	now := time.Now()
	for _, s := range scrapes {
		smp := Sample{At: now.Add(-s.ago)}
		if s.errors != nil {
			smp.Up, smp.ErrorRate, smp.LatencyP99 = true, s.errors, ptr(s.p99)
		}
		require.NoError(t, svc.Record(ctx, cluster, smp))
	}
	if vm {
		testenv.FlushVictoriaMetrics(t, vmURL)
	}
	for _, k := range open {
		_, err := queries.New(svc.Pool).ClusterMetricAlertOpen(ctx, queries.ClusterMetricAlertOpenParams{ClusterID: cluster, Kind: string(k)})
		require.NoError(t, err)
	}
	last := Sample{At: now}
	if latest != nil {
		last.Up, last.ErrorRate, last.LatencyP99 = true, latest, ptr(0.01)
	}
	var raised, cleared []Alert
	require.NoError(t, pgx.BeginFunc(ctx, svc.Pool, func(tx pgx.Tx) error {
		var err error
		raised, cleared, err = svc.Evaluate(ctx, queries.New(tx), cluster, st, last)
		return err
	}))
	kinds := func(as []Alert) []AlertKind {
		var out []AlertKind
		for _, a := range as {
			out = append(out, a.Kind)
		}
		return out
	}
	require.Equal(t, wantRaised, kinds(raised), "raised")
	require.Equal(t, wantCleared, kinds(cleared), "cleared")
}
