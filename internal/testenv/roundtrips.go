package testenv

import (
	"context"
	"sync"

	"github.com/jackc/pgx/v5"
)

// RoundTrips is a pgx tracer (a pool's ConnConfig.Tracer) that keeps what
// the pool sends to PostgreSQL: batches, and queries on their own.
type RoundTrips struct {
	mu      sync.Mutex
	batches int
	queries []string
}

// Batches is how many batches were sent since the last Reset.
func (r *RoundTrips) Batches() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.batches
}

// Queries is how many queries were sent on their own since the last Reset.
func (r *RoundTrips) Queries() int { return len(r.Statements()) }

// Statements are the queries sent on their own since the last Reset, in
// order.
func (r *RoundTrips) Statements() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]string(nil), r.queries...)
}

// Reset counts from zero again.
func (r *RoundTrips) Reset() {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.batches, r.queries = 0, nil
}

func (r *RoundTrips) TraceQueryStart(ctx context.Context, _ *pgx.Conn, d pgx.TraceQueryStartData) context.Context {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.queries = append(r.queries, d.SQL)
	return ctx
}

func (r *RoundTrips) TraceQueryEnd(context.Context, *pgx.Conn, pgx.TraceQueryEndData) {}

func (r *RoundTrips) TraceBatchStart(ctx context.Context, _ *pgx.Conn, _ pgx.TraceBatchStartData) context.Context {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.batches++
	return ctx
}

func (r *RoundTrips) TraceBatchQuery(context.Context, *pgx.Conn, pgx.TraceBatchQueryData) {}

func (r *RoundTrips) TraceBatchEnd(context.Context, *pgx.Conn, pgx.TraceBatchEndData) {}
