package testenv

import (
	"context"
	"sync/atomic"

	"github.com/jackc/pgx/v5"
)

// RoundTrips is a pgx tracer (a pool's ConnConfig.Tracer) that counts
// what the pool sends to PostgreSQL: batches, and queries on their own.
type RoundTrips struct{ batches, queries atomic.Int32 }

// Batches is how many batches were sent since the last Reset.
func (r *RoundTrips) Batches() int { return int(r.batches.Load()) }

// Queries is how many queries were sent on their own since the last Reset.
func (r *RoundTrips) Queries() int { return int(r.queries.Load()) }

// Reset counts from zero again.
func (r *RoundTrips) Reset() { r.batches.Store(0); r.queries.Store(0) }

func (r *RoundTrips) TraceQueryStart(ctx context.Context, _ *pgx.Conn, _ pgx.TraceQueryStartData) context.Context {
	r.queries.Add(1)
	return ctx
}

func (r *RoundTrips) TraceQueryEnd(context.Context, *pgx.Conn, pgx.TraceQueryEndData) {}

func (r *RoundTrips) TraceBatchStart(ctx context.Context, _ *pgx.Conn, _ pgx.TraceBatchStartData) context.Context {
	r.batches.Add(1)
	return ctx
}

func (r *RoundTrips) TraceBatchQuery(context.Context, *pgx.Conn, pgx.TraceBatchQueryData) {}

func (r *RoundTrips) TraceBatchEnd(context.Context, *pgx.Conn, pgx.TraceBatchEndData) {}
