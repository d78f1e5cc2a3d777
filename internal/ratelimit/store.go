package ratelimit

import (
	"context"
	"time"

	"github.com/kubebyon/kubebyon/queries"
)

// Store is Hit and Reset on one database, built once and shared by the
// requests that count against the platform's limits.
type Store struct {
	q *queries.Queries
}

// NewStore counts the hits in db.
func NewStore(db queries.DBTX) *Store {
	return &Store{q: queries.New(db)}
}

// Hit counts one hit of subject against rule at now (see Hit).
func (s *Store) Hit(ctx context.Context, rule Rule, subject string, now time.Time) (Decision, error) {
	return Hit(ctx, s.q, rule, subject, now)
}

// Reset forgets subject's hits against rule (see Reset).
func (s *Store) Reset(ctx context.Context, rule Rule, subject string) error {
	return Reset(ctx, s.q, rule, subject)
}

// Limiter is a Limiter on the store's database, keeping the counts of up
// to subjects subjects (see NewLimiter).
func (s *Store) Limiter(subjects int) *Limiter {
	return NewLimiter(s.q, subjects)
}
