package metrics

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgtype"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/kubebyon/kubebyon/internal/clusters"
	"github.com/kubebyon/kubebyon/queries"
)

// Service stores and reads the control planes' metrics.
type Service struct {
	Pool *pgxpool.Pool
}

// Record stores one sample of a cluster. A sample whose day has no
// partition yet (the maintenance job makes them ahead; this covers its
// first run and a clock far off) makes its own, then is stored.
func (s *Service) Record(ctx context.Context, clusterID int64, smp Sample) error {
	p := queries.ClusterMetricInsertParams{
		ClusterID: clusterID, At: ts(smp.At), Up: smp.Up,
		ReadRate: f4(smp.ReadRate), WriteRate: f4(smp.WriteRate), WatchRate: f4(smp.WatchRate),
		ErrorRate: f4(smp.ErrorRate), LatencyP50: f4(smp.LatencyP50), LatencyP99: f4(smp.LatencyP99),
		Inflight: f4(smp.Inflight), Objects: i8(smp.Objects), Watches: i8(smp.Watches),
		NodesReady: i4(smp.NodesReady), NodesTotal: i4(smp.NodesTotal),
		PodsRunning: i4(smp.PodsRunning), PodsTotal: i4(smp.PodsTotal),
	}
	if smp.ByResource != nil {
		b, err := json.Marshal(smp.ByResource)
		if err != nil {
			return fmt.Errorf("encode objects of cluster %d: %w", clusterID, err)
		}
		p.ByResource = b
	}
	q := queries.New(s.Pool)
	err := q.ClusterMetricInsert(ctx, p)
	if isNoPartition(err) {
		if err := s.ensurePartitions(ctx, smp.At, smp.At); err != nil {
			return err
		}
		err = q.ClusterMetricInsert(ctx, p)
	}
	if err != nil {
		return fmt.Errorf("store metrics of cluster %d: %w", clusterID, err)
	}
	return nil
}

// isNoPartition reports whether err is PostgreSQL's "no partition of
// relation found for row".
func isNoPartition(err error) bool {
	var pgErr *pgconn.PgError
	return errors.As(err, &pgErr) && pgErr.Code == "23514" && pgErr.ConstraintName == ""
}

// LastCounters are the cumulative counters a cluster's last scrape kept
// (JSON, which the scrape decodes) and when; ok false before the first.
func (s *Service) LastCounters(ctx context.Context, clusterID int64) (counters []byte, at time.Time, ok bool, err error) {
	row, err := queries.New(s.Pool).ClusterMetricCountersGet(ctx, clusterID)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, time.Time{}, false, nil
	}
	if err != nil {
		return nil, time.Time{}, false, fmt.Errorf("load last counters of cluster %d: %w", clusterID, err)
	}
	return row.Counters, row.ScrapedAt.Time, true, nil
}

// KeepCounters keeps a scrape's cumulative counters for the next one.
func (s *Service) KeepCounters(ctx context.Context, clusterID int64, counters []byte, at time.Time) error {
	if err := queries.New(s.Pool).ClusterMetricCountersPut(ctx, queries.ClusterMetricCountersPutParams{
		ClusterID: clusterID, ScrapedAt: ts(at), Counters: counters,
	}); err != nil {
		return fmt.Errorf("keep counters of cluster %d: %w", clusterID, err)
	}
	return nil
}

// OwnSeries is a user's cluster's history over r up to now: the raw
// samples for an hour, the 5-minute rollups for a day, the hourly ones
// beyond. Another user's cluster, or a deleted one, is
// clusters.ErrNotFound.
func (s *Service) OwnSeries(ctx context.Context, ownerID, clusterID int64, r Range, now time.Time) (Series, error) {
	q := queries.New(s.Pool)
	status, err := q.ClusterMetricsOwnedStatus(ctx, queries.ClusterMetricsOwnedStatusParams{ID: clusterID, OwnerID: ownerID})
	if errors.Is(err, pgx.ErrNoRows) || status == clusters.StatusDeleted {
		return Series{}, clusters.ErrNotFound
	}
	if err != nil {
		return Series{}, fmt.Errorf("load cluster %d: %w", clusterID, err)
	}
	return s.Series(ctx, clusterID, r, now)
}

// Series is any cluster's history over r up to now, for admins (users
// read theirs through OwnSeries).
func (s *Service) Series(ctx context.Context, clusterID int64, r Range, now time.Time) (Series, error) {
	q := queries.New(s.Pool)
	st, err := LoadSettings(ctx, q)
	if err != nil {
		return Series{}, err
	}
	return s.series(ctx, q, clusterID, r, now, st.Interval())
}

// series reads the rows of the range's resolution.
func (s *Service) series(ctx context.Context, q *queries.Queries, clusterID int64, r Range, now time.Time, interval time.Duration) (Series, error) {
	since := ts(now.Add(-r.Duration()))
	var rows []queries.ClusterMetricsRawRow
	step := interval
	switch r {
	case Range1h:
		raw, err := q.ClusterMetricsRaw(ctx, queries.ClusterMetricsRawParams{ClusterID: clusterID, Since: since})
		if err != nil {
			return Series{}, fmt.Errorf("read metrics of cluster %d: %w", clusterID, err)
		}
		rows = raw
	case Range24h:
		step = fiveMinutes
		rs, err := q.ClusterMetrics5m(ctx, queries.ClusterMetrics5mParams{ClusterID: clusterID, Since: since})
		if err != nil {
			return Series{}, fmt.Errorf("read metrics of cluster %d: %w", clusterID, err)
		}
		rows = make([]queries.ClusterMetricsRawRow, len(rs))
		for i, r := range rs {
			rows[i] = queries.ClusterMetricsRawRow(r)
		}
	default:
		step = time.Hour
		rs, err := q.ClusterMetrics1h(ctx, queries.ClusterMetrics1hParams{ClusterID: clusterID, Since: since})
		if err != nil {
			return Series{}, fmt.Errorf("read metrics of cluster %d: %w", clusterID, err)
		}
		rows = make([]queries.ClusterMetricsRawRow, len(rs))
		for i, r := range rs {
			rows[i] = queries.ClusterMetricsRawRow(r)
		}
	}
	return toSeries(r, step, rows), nil
}

// toSeries lays the rows out as columns. Where two rows are more than two
// steps apart (the platform was not scraping, or the rollup has no row
// for a window without a successful scrape), a null row between them
// makes the chart draw a gap rather than a line across it.
func toSeries(r Range, step time.Duration, rows []queries.ClusterMetricsRawRow) Series {
	s := Series{Range: r, Step: int64(step / time.Second)}
	var last time.Time
	for _, row := range rows {
		at := row.At.Time
		if !last.IsZero() && at.Sub(last) > 2*step {
			s.add(last.Add(step), queries.ClusterMetricsRawRow{})
		}
		s.add(at, row)
		last = at
	}
	return s
}

func (s *Series) add(at time.Time, r queries.ClusterMetricsRawRow) {
	s.Time = append(s.Time, at.Unix())
	s.ReadRate = append(s.ReadRate, pf(r.ReadRate))
	s.WriteRate = append(s.WriteRate, pf(r.WriteRate))
	s.WatchRate = append(s.WatchRate, pf(r.WatchRate))
	s.ErrorRate = append(s.ErrorRate, pf(r.ErrorRate))
	s.LatencyP50 = append(s.LatencyP50, pf(r.LatencyP50))
	s.LatencyP99 = append(s.LatencyP99, pf(r.LatencyP99))
	s.Inflight = append(s.Inflight, pf(r.Inflight))
	s.Objects = append(s.Objects, pi8(r.Objects))
	s.Watches = append(s.Watches, pi8(r.Watches))
	s.NodesReady = append(s.NodesReady, pi4(r.NodesReady))
	s.NodesTotal = append(s.NodesTotal, pi4(r.NodesTotal))
	s.PodsRunning = append(s.PodsRunning, pi4(r.PodsRunning))
	s.PodsTotal = append(s.PodsTotal, pi4(r.PodsTotal))
}

func ts(t time.Time) pgtype.Timestamptz { return pgtype.Timestamptz{Time: t, Valid: true} }

func f4(v *float64) pgtype.Float4 {
	if v == nil || math.IsNaN(*v) || math.IsInf(*v, 0) {
		return pgtype.Float4{}
	}
	return pgtype.Float4{Float32: float32(*v), Valid: true}
}

func i8(v *int64) pgtype.Int8 {
	if v == nil {
		return pgtype.Int8{}
	}
	return pgtype.Int8{Int64: *v, Valid: true}
}

func i4(v *int32) pgtype.Int4 {
	if v == nil {
		return pgtype.Int4{}
	}
	return pgtype.Int4{Int32: *v, Valid: true}
}

// pf is a stored real as the charts get it: rounded to what a float32
// holds (so that 0.1 reads 0.1, not 0.10000000149).
func pf(v pgtype.Float4) *float64 {
	if !v.Valid {
		return nil
	}
	f := roundSignificant(float64(v.Float32), 6)
	return &f
}

func roundSignificant(f float64, digits int) float64 {
	if f == 0 || math.IsNaN(f) || math.IsInf(f, 0) {
		return f
	}
	scale := math.Pow(10, float64(digits)-math.Ceil(math.Log10(math.Abs(f))))
	return math.Round(f*scale) / scale
}

func pi8(v pgtype.Int8) *int64 {
	if !v.Valid {
		return nil
	}
	return &v.Int64
}

func pi4(v pgtype.Int4) *int32 {
	if !v.Valid {
		return nil
	}
	return &v.Int32
}
