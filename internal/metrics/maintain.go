package metrics

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/kubebyon/kubebyon/queries"
)

// Resolution names one of the three tables of samples.
type Resolution string

// The resolutions: the scrapes as they are, and the two rollups.
const (
	Raw         Resolution = "raw"
	FiveMinutes Resolution = "5m"
	Hourly      Resolution = "1h"
)

const fiveMinutes = 5 * time.Minute

// table is a resolution's partitioned table and how its partitions cut
// time: by day, or by month for the hourly rows kept a year.
type table struct {
	res     Resolution
	name    string
	monthly bool
}

var tables = []table{
	{Raw, "cluster_metrics", false},
	{FiveMinutes, "cluster_metrics_5m", false},
	{Hourly, "cluster_metrics_1h", true},
}

// start is the beginning of the partition that holds t.
func (tb table) start(t time.Time) time.Time {
	t = t.UTC()
	if tb.monthly {
		return time.Date(t.Year(), t.Month(), 1, 0, 0, 0, 0, time.UTC)
	}
	return time.Date(t.Year(), t.Month(), t.Day(), 0, 0, 0, 0, time.UTC)
}

// next is the beginning of the partition after the one starting at start.
func (tb table) next(start time.Time) time.Time {
	if tb.monthly {
		return start.AddDate(0, 1, 0)
	}
	return start.AddDate(0, 0, 1)
}

// partition is the name of the partition starting at start:
// cluster_metrics_p20261202, cluster_metrics_1h_p202612.
func (tb table) partition(start time.Time) string {
	if tb.monthly {
		return tb.name + "_p" + start.Format("200601")
	}
	return tb.name + "_p" + start.Format("20060102")
}

// parse is the start of a partition of the table by its name.
func (tb table) parse(partition string) (time.Time, bool) {
	suffix, ok := strings.CutPrefix(partition, tb.name+"_p")
	if !ok {
		return time.Time{}, false
	}
	layout := "20060102"
	if tb.monthly {
		layout = "200601"
	}
	t, err := time.ParseInLocation(layout, suffix, time.UTC)
	return t, err == nil && len(suffix) == len(layout)
}

// partitionsLock serialises the making and dropping of partitions between
// processes (a transaction-scoped advisory lock; the number is arbitrary
// and used for nothing else).
const partitionsLock = 7_239_150_015

// ensurePartitions makes the partitions of every table that cover from to
// until, those missing.
func ensurePartitions(ctx context.Context, pool *pgxpool.Pool, from, until time.Time) error {
	return pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, "SELECT pg_advisory_xact_lock($1)", int64(partitionsLock)); err != nil {
			return fmt.Errorf("lock metrics partitions: %w", err)
		}
		for _, tb := range tables {
			for start := tb.start(from); !start.After(until); start = tb.next(start) {
				// Names and bounds are made here from times, never from
				// input; identifiers are still quoted.
				sql := fmt.Sprintf("CREATE TABLE IF NOT EXISTS %s PARTITION OF %s FOR VALUES FROM ('%s') TO ('%s')",
					pgx.Identifier{tb.partition(start)}.Sanitize(), pgx.Identifier{tb.name}.Sanitize(),
					start.Format(time.RFC3339), tb.next(start).Format(time.RFC3339))
				if _, err := tx.Exec(ctx, sql); err != nil {
					return fmt.Errorf("make partition %s: %w", tb.partition(start), err)
				}
			}
		}
		return nil
	})
}

// Partitions are the partitions of each resolution's table, by start.
func (s *Service) Partitions(ctx context.Context) (map[Resolution][]time.Time, error) {
	rows, err := s.Pool.Query(ctx, `
		SELECT parent.relname::text, child.relname::text
		FROM pg_inherits
		JOIN pg_class parent ON parent.oid = pg_inherits.inhparent
		JOIN pg_class child ON child.oid = pg_inherits.inhrelid
		WHERE parent.relname IN ('cluster_metrics', 'cluster_metrics_5m', 'cluster_metrics_1h')
		ORDER BY 2`)
	if err != nil {
		return nil, fmt.Errorf("list metrics partitions: %w", err)
	}
	out := map[Resolution][]time.Time{}
	var parent, child string
	_, err = pgx.ForEachRow(rows, []any{&parent, &child}, func() error {
		for _, tb := range tables {
			if tb.name != parent {
				continue
			}
			if start, ok := tb.parse(child); ok {
				out[tb.res] = append(out[tb.res], start)
			}
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("list metrics partitions: %w", err)
	}
	return out, nil
}

// dropExpired drops the partitions whose every row is older than its
// resolution's retention: whole tables, not rows.
func (s *Service) dropExpired(ctx context.Context, now time.Time, st Settings) ([]string, error) {
	parts, err := s.Partitions(ctx)
	if err != nil {
		return nil, err
	}
	var dropped []string
	err = pgx.BeginFunc(ctx, s.Pool, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, "SELECT pg_advisory_xact_lock($1)", int64(partitionsLock)); err != nil {
			return fmt.Errorf("lock metrics partitions: %w", err)
		}
		for _, tb := range tables {
			keepFrom := now.Add(-st.Retention(tb.res))
			for _, start := range parts[tb.res] {
				if tb.next(start).After(keepFrom) {
					continue
				}
				name := tb.partition(start)
				if _, err := tx.Exec(ctx, "DROP TABLE IF EXISTS "+pgx.Identifier{name}.Sanitize()); err != nil {
					return fmt.Errorf("drop partition %s: %w", name, err)
				}
				dropped = append(dropped, name)
			}
		}
		return nil
	})
	return dropped, err
}

// rollupWindows bounds what one maintenance run rolls up of each
// resolution, so that a run after a long stop stays short: the next runs
// take the rest.
const rollupWindows = 48

// rollupLateness is how long after a 5-minute window ends its last
// scrapes may still be written (a scrape records the time it started).
const rollupLateness = time.Minute

// rollup is one rollup: the rows of from into windows of size.
type rollup struct {
	res    Resolution
	window time.Duration
	// first is the oldest row of the source, where a first run starts.
	first func(context.Context, *queries.Queries) (time.Time, error)
	// run rolls [from, until) up.
	run func(context.Context, *queries.Queries, time.Time, time.Time) (int64, error)
}

var rollups = []rollup{
	{
		res: FiveMinutes, window: fiveMinutes,
		first: func(ctx context.Context, q *queries.Queries) (time.Time, error) {
			t, err := q.ClusterMetricFirstRaw(ctx)
			return t.Time, err
		},
		run: func(ctx context.Context, q *queries.Queries, from, until time.Time) (int64, error) {
			return q.ClusterMetricRollup5m(ctx, queries.ClusterMetricRollup5mParams{FromAt: ts(from), UntilAt: ts(until)})
		},
	},
	{
		res: Hourly, window: time.Hour,
		first: func(ctx context.Context, q *queries.Queries) (time.Time, error) {
			t, err := q.ClusterMetricFirst5m(ctx)
			return t.Time, err
		},
		run: func(ctx context.Context, q *queries.Queries, from, until time.Time) (int64, error) {
			return q.ClusterMetricRollup1h(ctx, queries.ClusterMetricRollup1hParams{FromAt: ts(from), UntilAt: ts(until)})
		},
	},
}

// rollUp rolls up to rollupWindows complete windows of r, each in a
// transaction with the mark of how far it has got, and returns the rows
// written. A window is complete once its source is: the raw rows a
// minute after it ends, the 5-minute rows once their rollup passed it.
func (s *Service) rollUp(ctx context.Context, r rollup, complete time.Time) (int64, error) {
	var written int64
	for range rollupWindows {
		var done bool
		err := pgx.BeginFunc(ctx, s.Pool, func(tx pgx.Tx) error {
			q := queries.New(tx)
			mark, err := q.ClusterMetricRollupDoneUntil(ctx, string(r.res))
			from := mark.Time
			if errors.Is(err, pgx.ErrNoRows) {
				first, err := r.first(ctx, q)
				if err != nil {
					return fmt.Errorf("oldest row before the %s rollup: %w", r.res, err)
				}
				if first.IsZero() || first.Year() > 9999 || first.After(complete) {
					done = true
					return nil
				}
				from = first.Truncate(r.window)
			} else if err != nil {
				return fmt.Errorf("where the %s rollup got: %w", r.res, err)
			}
			until := from.Add(r.window)
			if until.After(complete) {
				done = true
				return nil
			}
			n, err := r.run(ctx, q, from, until)
			if err != nil {
				return fmt.Errorf("roll up %s from %s: %w", r.res, from.Format(time.RFC3339), err)
			}
			written += n
			if err := q.ClusterMetricRollupSet(ctx, queries.ClusterMetricRollupSetParams{Resolution: string(r.res), DoneUntil: ts(until)}); err != nil {
				return fmt.Errorf("mark the %s rollup: %w", r.res, err)
			}
			return nil
		})
		if err != nil || done {
			return written, err
		}
	}
	return written, nil
}

// Maintain makes the partitions of today and the next two days (months,
// for the hourly rows) ahead, rolls up what is complete, and drops the
// partitions past their retention. now is a parameter, so that tests
// move the clock.
func (s *Service) Maintain(ctx context.Context, now time.Time, st Settings, logger *slog.Logger) error {
	if err := ensurePartitions(ctx, s.Pool, now, now.Add(48*time.Hour)); err != nil {
		return err
	}
	fiveDone, err := s.rollUp(ctx, rollups[0], now.Add(-rollupLateness))
	if err != nil {
		return err
	}
	// The hourly windows are complete once the 5-minute rollup passed
	// them (none before its first run).
	var hourlyUntil time.Time
	err = s.Pool.QueryRow(ctx, "SELECT done_until FROM cluster_metric_rollups WHERE resolution = $1", string(FiveMinutes)).Scan(&hourlyUntil)
	if err != nil && !errors.Is(err, pgx.ErrNoRows) {
		return fmt.Errorf("where the 5m rollup got: %w", err)
	}
	hourlyDone, err := s.rollUp(ctx, rollups[1], hourlyUntil)
	if err != nil {
		return err
	}
	dropped, err := s.dropExpired(ctx, now, st)
	if err != nil {
		return err
	}
	if len(dropped) > 0 || fiveDone > 0 || hourlyDone > 0 {
		logger.DebugContext(ctx, "metrics maintained", "rows_5m", fiveDone, "rows_1h", hourlyDone, "partitions_dropped", dropped)
	}
	return nil
}
