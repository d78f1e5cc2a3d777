package database

import (
	"context"
	"errors"
	"fmt"
	"reflect"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
)

// DBTX is what sqlc's queries run on (queries.DBTX has the same methods).
type DBTX interface {
	Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error)
	Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error)
	QueryRow(ctx context.Context, sql string, args ...any) pgx.Row
}

// A Call makes one query on db, a sqlc query, and keeps its answer (rows
// read are closed before it returns, as sqlc's queries do). It returns an
// error only when the calls after it should not be read.
type Call func(ctx context.Context, db DBTX) error

// Pipeline makes calls that need not wait for one another in one round
// trip to PostgreSQL (a pgx batch): each round trip costs both processes
// a wake-up and PostgreSQL a statement's overhead, more than a small
// query's own work. Each call is made twice: first on a recorder, to learn
// its query and arguments (the query then fails; the call should make no
// other use of that run), then, after the batch ran, on the batch's
// answer to that query, in order. A call that makes no query on its second
// run leaves its answer unread; one that makes another query than it made
// first gets an error for it.
//
// The error is the first a call returned, else the batch's: the first
// query that failed (whose call had it too), or the connection's.
func Pipeline(ctx context.Context, pool *pgxpool.Pool, calls ...Call) error {
	recorded := make([]recorder, len(calls))
	batch := &pgx.Batch{QueuedQueries: make([]*pgx.QueuedQuery, 0, len(calls))}
	for i, call := range calls {
		r := &recorded[i]
		_ = call(ctx, r)
		if r.queries != 1 {
			return fmt.Errorf("pipeline: call %d made %d queries; each makes one", i, r.queries)
		}
		batch.Queue(r.sql, r.args...)
	}
	results := pool.SendBatch(ctx, batch)
	var callErr error
	for i, call := range calls {
		a := &answer{results: results, want: &recorded[i]}
		if err := call(ctx, a); err != nil {
			callErr = err
			break
		}
		if !a.read {
			// Its answer is not wanted: the next call's is next.
			_, _ = results.Exec()
		}
	}
	err := results.Close()
	if callErr != nil {
		return callErr
	}
	if err != nil {
		return fmt.Errorf("pipeline of %d queries: %w", len(calls), err)
	}
	return nil
}

// errRecorded is what a call's first run gets for its query.
var errRecorded = errors.New("pipeline: query recorded, not run")

// recorder is a call's first run: it notes the query.
type recorder struct {
	queries int
	sql     string
	args    []any
}

func (r *recorder) note(sql string, args []any) {
	r.queries++
	r.sql, r.args = sql, args
}

func (r *recorder) Exec(_ context.Context, sql string, args ...any) (pgconn.CommandTag, error) {
	r.note(sql, args)
	return pgconn.CommandTag{}, errRecorded
}

func (r *recorder) Query(_ context.Context, sql string, args ...any) (pgx.Rows, error) {
	r.note(sql, args)
	return nil, errRecorded
}

func (r *recorder) QueryRow(_ context.Context, sql string, args ...any) pgx.Row {
	r.note(sql, args)
	return errRow{errRecorded}
}

// answer is a call's second run: its query reads the batch's next answer.
type answer struct {
	results pgx.BatchResults
	want    *recorder
	read    bool
}

// check is nil for the query the call made first, on its first query.
func (a *answer) check(sql string, args []any) error {
	if a.read {
		return errors.New("pipeline: a call made a second query")
	}
	a.read = true
	if sql != a.want.sql || !reflect.DeepEqual(args, a.want.args) {
		// Its answer is not this query's: skipped, so that the next
		// call reads its own.
		_, _ = a.results.Exec()
		return errors.New("pipeline: a call made another query than the one it made first")
	}
	return nil
}

func (a *answer) Exec(_ context.Context, sql string, args ...any) (pgconn.CommandTag, error) {
	if err := a.check(sql, args); err != nil {
		return pgconn.CommandTag{}, err
	}
	return a.results.Exec()
}

func (a *answer) Query(_ context.Context, sql string, args ...any) (pgx.Rows, error) {
	if err := a.check(sql, args); err != nil {
		return nil, err
	}
	return a.results.Query()
}

func (a *answer) QueryRow(_ context.Context, sql string, args ...any) pgx.Row {
	if err := a.check(sql, args); err != nil {
		return errRow{err}
	}
	return a.results.QueryRow()
}

// errRow is a row that fails to scan with err.
type errRow struct{ err error }

func (r errRow) Scan(...any) error { return r.err }
