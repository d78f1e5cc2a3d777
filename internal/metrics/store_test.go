package metrics

import (
	"context"
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/kubebyon/kubebyon/internal/clusters"
	"github.com/kubebyon/kubebyon/internal/orgs"
	"github.com/kubebyon/kubebyon/internal/testenv"
)

// storeCluster makes a user with a ready cluster and returns both ids.
func storeCluster(t *testing.T, svc *Service, email string) (ownerID, clusterID int64) {
	t.Helper()
	// Two statements: the user's personal organization, where the
	// cluster lands, is made at the end of the user's.
	ctx := context.Background()
	require.NoError(t, svc.Pool.QueryRow(ctx, `INSERT INTO users (email, name) VALUES ($1, 'Metrics') RETURNING id`, email).Scan(&ownerID))
	require.NoError(t, svc.Pool.QueryRow(ctx, `
		INSERT INTO clusters (owner_id, name, slug, kubernetes_version, public_access_mode, status)
		VALUES ($1, 'm', $2, 'v1.34.0', 'nodeport', 'ready') RETURNING id`,
		ownerID, email).Scan(&clusterID))
	return ownerID, clusterID
}

func ptr[T any](v T) *T { return &v }

// upSample is a sample that reached its control plane, with read rate r
// and p99 p.
func upSample(at time.Time, r, p float64, objects int64) Sample {
	return Sample{
		At: at, Up: true, ReadRate: ptr(r), WriteRate: ptr(r / 2), WatchRate: ptr(0.0), ErrorRate: ptr(0.0),
		LatencyP50: ptr(p / 4), LatencyP99: ptr(p), Inflight: ptr(1.0), Objects: ptr(objects), Watches: ptr(int64(3)),
		NodesReady: ptr(int32(2)), NodesTotal: ptr(int32(3)), PodsRunning: ptr(int32(5)), PodsTotal: ptr(int32(6)),
		ByResource: map[string]int64{"configmaps": objects},
	}
}

// TestSeriesReadsWhatWasRecorded records an hour of scrapes with an
// unreachable stretch and a stop of the platform, and reads them back as
// the charts get them: gaps as nulls, never zeros; another user's cluster
// is not found.
func TestSeriesReadsWhatWasRecorded(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	svc := &Service{Pool: testenv.DB(t)}
	owner, cluster := storeCluster(t, svc, "series@example.com")
	now := time.Now().UTC().Truncate(time.Minute)
	// 0..9: up; 10, 11: unreachable; 12..19 up; nothing for 20..29 (the
	// platform stopped); 30..39 up.
	var recorded int
	for i := 0; i < 40; i++ {
		at := now.Add(time.Duration(i-40) * time.Minute)
		switch {
		case i == 10 || i == 11:
			require.NoError(t, svc.Record(ctx, cluster, Sample{At: at}))
		case i >= 20 && i < 30:
			continue
		default:
			require.NoError(t, svc.Record(ctx, cluster, upSample(at, float64(i), 0.1, int64(100+i))))
		}
		recorded++
	}
	s, err := svc.OwnSeries(ctx, actingAs(t, svc.Pool, owner), cluster, Range1h, now)
	require.NoError(t, err)
	require.Equal(t, int64(60), s.Step)
	// Every recorded row, and one null where the platform stopped.
	require.Len(t, s.Time, recorded+1)
	for _, col := range [][]*float64{s.ReadRate, s.WriteRate, s.LatencyP99, s.ErrorRate} {
		require.Len(t, col, len(s.Time))
	}
	require.InDelta(t, 0.0, *s.ReadRate[0], 1e-9)
	require.InDelta(t, 0.1, *s.LatencyP99[0], 1e-9, "a stored real reads as it was written")
	require.Nil(t, s.ReadRate[10], "unreachable: a gap")
	require.Nil(t, s.Objects[11])
	require.NotNil(t, s.ReadRate[12])
	gap := recorded - 10 // index of the null after minute 19
	require.Equal(t, now.Add(-20*time.Minute).Unix()-60+60, s.Time[gap], "the null follows the last row before the stop by a step")
	require.Nil(t, s.ReadRate[gap])
	require.Equal(t, int64(130), *s.Objects[gap+1])

	_, err = svc.OwnSeries(ctx, orgs.Acting{OrgID: actingAs(t, svc.Pool, owner).OrgID, UserID: owner + 1000}, cluster, Range1h, now)
	require.ErrorIs(t, err, clusters.ErrNotFound)
	other, _ := storeCluster(t, svc, "other-series@example.com")
	_, err = svc.OwnSeries(ctx, actingAs(t, svc.Pool, other), cluster, Range1h, now)
	require.ErrorIs(t, err, clusters.ErrNotFound)

	// An admin reads any cluster's, a deleted one's too; none of a
	// cluster that does not exist.
	_, err = svc.Pool.Exec(ctx, "UPDATE clusters SET status = 'deleted' WHERE id = $1", cluster)
	require.NoError(t, err)
	_, err = svc.OwnSeries(ctx, actingAs(t, svc.Pool, owner), cluster, Range1h, now)
	require.ErrorIs(t, err, clusters.ErrNotFound)
	admin, err := svc.AdminSeries(ctx, cluster, Range1h, now)
	require.NoError(t, err)
	require.Equal(t, s, admin)
	_, err = svc.AdminSeries(ctx, cluster+1000, Range1h, now)
	require.ErrorIs(t, err, clusters.ErrNotFound)
}

// TestMaintainRollsUpAndDropsPartitions moves a clock over the samples of
// one cluster: the 5-minute and hourly rollups appear once their windows
// are complete, and the partitions past their retention go whole.
func TestMaintainRollsUpAndDropsPartitions(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	svc := &Service{Pool: testenv.DB(t)}
	owner, cluster := storeCluster(t, svc, "rollup@example.com")
	logger := slog.New(slog.NewTextHandler(io.Discard, nil))
	st := DefaultSettings()
	// Two hours of a scrape a minute, starting on an hour, ten days ago.
	t0 := time.Now().UTC().Add(-10 * 24 * time.Hour).Truncate(time.Hour)
	for i := range 120 {
		require.NoError(t, svc.Record(ctx, cluster, upSample(t0.Add(time.Duration(i)*time.Minute), float64(i%5), float64(i)/100, int64(i))))
	}
	// Half past the first hour: 5-minute windows up to 00:29 are done,
	// no hour yet.
	require.NoError(t, svc.Maintain(ctx, t0.Add(31*time.Minute), st, logger))
	var fives, hours int
	count := func() {
		require.NoError(t, svc.Pool.QueryRow(ctx, "SELECT count(*) FROM cluster_metrics_5m WHERE cluster_id = $1", cluster).Scan(&fives))
		require.NoError(t, svc.Pool.QueryRow(ctx, "SELECT count(*) FROM cluster_metrics_1h WHERE cluster_id = $1", cluster).Scan(&hours))
	}
	count()
	require.Equal(t, 6, fives)
	require.Equal(t, 0, hours)
	var samples int
	var readAvg, p99Max float64
	var objects int64
	require.NoError(t, svc.Pool.QueryRow(ctx, `SELECT samples, read_rate, latency_p99, objects FROM cluster_metrics_5m
		WHERE cluster_id = $1 AND at = $2`, cluster, t0.Add(5*time.Minute)).Scan(&samples, &readAvg, &p99Max, &objects))
	require.Equal(t, 5, samples)
	require.InDelta(t, 2.0, readAvg, 1e-6, "rates averaged: (0+1+2+3+4)/5")
	require.InDelta(t, 0.09, p99Max, 1e-6, "p99: the window's worst")
	require.Equal(t, int64(9), objects, "counts: the last seen")

	// Runs a minute apart catch up window by window (each run is bounded),
	// then the hours follow.
	for m := 32; m < 200; m++ {
		require.NoError(t, svc.Maintain(ctx, t0.Add(time.Duration(m)*time.Minute), st, logger))
	}
	count()
	require.Equal(t, 24, fives)
	require.Equal(t, 2, hours)
	var hourSamples int
	require.NoError(t, svc.Pool.QueryRow(ctx, "SELECT samples FROM cluster_metrics_1h WHERE cluster_id = $1 AND at = $2", cluster, t0).Scan(&hourSamples))
	require.Equal(t, 60, hourSamples)

	// Read back through the ranges: ten days ago is in the 30-day range.
	s, err := svc.OwnSeries(ctx, actingAs(t, svc.Pool, owner), cluster, Range30d, t0.Add(3*time.Hour))
	require.NoError(t, err)
	require.Len(t, s.Time, 2)
	require.Equal(t, int64(3600), s.Step)
	s, err = svc.OwnSeries(ctx, actingAs(t, svc.Pool, owner), cluster, Range24h, t0.Add(3*time.Hour))
	require.NoError(t, err)
	require.Len(t, s.Time, 24)

	// Three days later the raw partition of that day is past its 48
	// hours and dropped whole; the rollups stay.
	day := t0.Format("20060102")
	parts, err := svc.Partitions(ctx)
	require.NoError(t, err)
	require.Contains(t, parts[Raw], tableStart(t, day))
	require.NoError(t, svc.Maintain(ctx, t0.Add(3*24*time.Hour+time.Hour), st, logger))
	parts, err = svc.Partitions(ctx)
	require.NoError(t, err)
	require.NotContains(t, parts[Raw], tableStart(t, day))
	require.Contains(t, parts[FiveMinutes], tableStart(t, day))
	var raw int
	require.NoError(t, svc.Pool.QueryRow(ctx, "SELECT count(*) FROM cluster_metrics WHERE cluster_id = $1", cluster).Scan(&raw))
	require.Zero(t, raw)
	// The partitions ahead were made.
	require.Contains(t, parts[Raw], tableStart(t, t0.Add(3*24*time.Hour+time.Hour+48*time.Hour).Format("20060102")))

	// A month on, the 5-minute rows go too; the hourly ones stay a year.
	require.NoError(t, svc.Maintain(ctx, t0.Add(32*24*time.Hour), st, logger))
	count()
	require.Zero(t, fives)
	require.Equal(t, 2, hours)
	require.NoError(t, svc.Maintain(ctx, t0.Add(400*24*time.Hour), st, logger))
	count()
	require.Zero(t, hours)
}

func tableStart(t *testing.T, day string) time.Time {
	t.Helper()
	d, err := time.ParseInLocation("20060102", day, time.UTC)
	require.NoError(t, err)
	return d
}

func TestSettingsValidate(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name  string
		edit  func(*Settings)
		field string
	}{
		{"defaults", func(*Settings) {}, ""},
		{"interval too short", func(s *Settings) { s.IntervalSeconds = 5 }, FieldInterval},
		{"raw under a day", func(s *Settings) { s.RawRetentionHours = 12 }, FieldRawRetention},
		{"5m shorter than raw", func(s *Settings) { s.RawRetentionHours = 96; s.FiveMinuteRetentionDays = 2 }, FieldFiveMinRetention},
		{"hourly shorter than 5m", func(s *Settings) { s.HourlyRetentionDays = 7 }, FieldHourlyRetention},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			st := DefaultSettings()
			tc.edit(&st)
			err := st.Validate()
			if tc.field == "" {
				require.NoError(t, err)
				return
			}
			require.ErrorContains(t, err, tc.field)
		})
	}
}
