package metrics

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"net/url"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgtype"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/kubebyon/kubebyon/internal/clusters"
	"github.com/kubebyon/kubebyon/internal/orgs"
	"github.com/kubebyon/kubebyon/queries"
)

// Service stores and reads the control planes' metrics.
type Service struct {
	Pool *pgxpool.Pool
	// Backend keeps the samples; nil is PostgreSQL (PG on Pool). The
	// counters between scrapes, the alerts and the settings stay in
	// PostgreSQL either way.
	Backend Backend
}

// backend is where the samples are kept.
func (s *Service) backend() Backend {
	if s.Backend != nil {
		return s.Backend
	}
	return PG{Pool: s.Pool}
}

// Store is where the samples are kept, for the admin to see: the query
// URL of the Prometheus-compatible database (its password, if any, left
// out), or "" for PostgreSQL.
func (s *Service) Store() string {
	p, ok := s.Backend.(Prom)
	if !ok {
		return ""
	}
	u, err := url.Parse(p.QueryURL)
	if err != nil {
		return p.QueryURL
	}
	return u.Redacted()
}

// Record stores one sample of a cluster.
func (s *Service) Record(ctx context.Context, clusterID int64, smp Sample) error {
	return s.backend().Write(ctx, clusterID, smp)
}

// Top is at most n control planes ranked by by over [since, now], with
// their names, owners and whether an alert is open for them, in order.
func (s *Service) Top(ctx context.Context, by TopOrder, since, now time.Time, n int) ([]TopClusterInfo, error) {
	top, err := s.backend().Top(ctx, by, since, now, n)
	if err != nil || len(top) == 0 {
		return nil, err
	}
	ids := make([]int64, len(top))
	for i, t := range top {
		ids[i] = t.ClusterID
	}
	rows, err := queries.New(s.Pool).MetricsOverviewClusterInfo(ctx, ids)
	if err != nil {
		return nil, fmt.Errorf("load the overview's clusters: %w", err)
	}
	info := make(map[int64]queries.MetricsOverviewClusterInfoRow, len(rows))
	for _, r := range rows {
		info[r.ID] = r
	}
	out := make([]TopClusterInfo, 0, len(top))
	for _, t := range top {
		// A cluster whose row is gone (a test's, or removed by hand) is
		// left out.
		if r, ok := info[t.ClusterID]; ok {
			out = append(out, TopClusterInfo{TopCluster: t, Name: r.Name, OwnerID: r.OwnerID, OwnerEmail: r.OwnerEmail, Alerted: r.Alerted})
		}
	}
	return out, nil
}

// TopClusterInfo is a control plane of Top with what the overview shows of
// its cluster.
type TopClusterInfo struct {
	TopCluster
	Name       string
	OwnerID    int64
	OwnerEmail string
	// Alerted is an alert open for the control plane.
	Alerted bool
}

// PG keeps the samples in PostgreSQL: raw samples in cluster_metrics,
// partitioned by day; 5-minute and hourly rollups (Service.Maintain) in
// cluster_metrics_5m and cluster_metrics_1h.
type PG struct {
	Pool *pgxpool.Pool
}

// Write implements Backend. A sample whose day has no partition yet (the
// maintenance job makes them ahead; this covers its first run and a clock
// far off) makes its own, then is stored.
func (b PG) Write(ctx context.Context, clusterID int64, smp Sample) error {
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
	q := queries.New(b.Pool)
	err := q.ClusterMetricInsert(ctx, p)
	if isNoPartition(err) {
		if err := ensurePartitions(ctx, b.Pool, smp.At, smp.At); err != nil {
			return err
		}
		err = q.ClusterMetricInsert(ctx, p)
	}
	if err != nil {
		return fmt.Errorf("store metrics of cluster %d: %w", clusterID, err)
	}
	return nil
}

// Window implements Backend.
func (b PG) Window(ctx context.Context, clusterID int64, since, now time.Time) ([]WindowPoint, error) {
	rows, err := queries.New(b.Pool).ClusterMetricWindow(ctx, queries.ClusterMetricWindowParams{ClusterID: clusterID, Since: ts(since), Until: ts(now)})
	if err != nil {
		return nil, fmt.Errorf("metrics of cluster %d for alerts: %w", clusterID, err)
	}
	out := make([]WindowPoint, len(rows))
	for i, r := range rows {
		out[i] = WindowPoint{At: r.At.Time, ErrorRate: pf(r.ErrorRate), LatencyP99: pf(r.LatencyP99)}
	}
	return out, nil
}

// Top implements Backend.
func (b PG) Top(ctx context.Context, by TopOrder, since, now time.Time, n int) ([]TopCluster, error) {
	q := queries.New(b.Pool)
	var rows []queries.MetricsTopRequestsRow
	var err error
	if by == TopErrors {
		var rs []queries.MetricsTopErrorsRow
		rs, err = q.MetricsTopErrors(ctx, queries.MetricsTopErrorsParams{Since: ts(since), Until: ts(now), MaxRows: int32(n)})
		for _, r := range rs {
			rows = append(rows, queries.MetricsTopRequestsRow(r))
		}
	} else {
		rows, err = q.MetricsTopRequests(ctx, queries.MetricsTopRequestsParams{Since: ts(since), Until: ts(now), MaxRows: int32(n)})
	}
	if err != nil {
		return nil, fmt.Errorf("rank control planes: %w", err)
	}
	out := make([]TopCluster, len(rows))
	for i, r := range rows {
		out[i] = TopCluster{ClusterID: r.ClusterID, Requests: r.Requests, Errors: r.Errors, P99: r.P99}
	}
	return out, nil
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

// OwnSeries is an organization's cluster's history over r up to now, for
// any member: the raw samples for an hour, the 5-minute rollups for a day,
// the hourly ones beyond. Another organization's cluster, or a deleted one, is
// clusters.ErrNotFound.
func (s *Service) OwnSeries(ctx context.Context, who orgs.Acting, clusterID int64, r Range, now time.Time) (Series, error) {
	q := queries.New(s.Pool)
	status, err := q.ClusterMetricsOwnedStatus(ctx, queries.ClusterMetricsOwnedStatusParams{ID: clusterID, OrgID: who.OrgID, UserID: who.UserID, Roles: who.Roles(orgs.Read)})
	if errors.Is(err, pgx.ErrNoRows) || status == clusters.StatusDeleted {
		return Series{}, clusters.ErrNotFound
	}
	if err != nil {
		return Series{}, fmt.Errorf("load cluster %d: %w", clusterID, err)
	}
	return s.Series(ctx, clusterID, r, now)
}

// AdminSeries is Series of any user's cluster, deleted ones included,
// for admins; a cluster that does not exist is clusters.ErrNotFound.
func (s *Service) AdminSeries(ctx context.Context, clusterID int64, r Range, now time.Time) (Series, error) {
	_, err := queries.New(s.Pool).ClusterGetByID(ctx, clusterID)
	if errors.Is(err, pgx.ErrNoRows) {
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
	st, err := LoadSettings(ctx, queries.New(s.Pool))
	if err != nil {
		return Series{}, err
	}
	return s.backend().Read(ctx, clusterID, r, now, st.Interval())
}

// Read implements Backend: the rows of the range's resolution.
func (b PG) Read(ctx context.Context, clusterID int64, r Range, now time.Time, interval time.Duration) (Series, error) {
	q := queries.New(b.Pool)
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
