// Package ratelimit counts requests in fixed windows kept in PostgreSQL, so
// that limits hold across every replica of the server. (The rate-limit
// libraries for Go keep state in memory or Redis; this platform's only
// shared store is PostgreSQL.)
package ratelimit

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5/pgtype"

	"github.com/kubebyon/kubebyon/queries"
)

// Rule is a limit: at most Limit hits per Window.
type Rule struct {
	Name   string
	Limit  int32
	Window time.Duration
}

// The platform's limits.
var (
	SignInPerAccount = Rule{"signin-account", 10, 15 * time.Minute}
	SignInPerIP      = Rule{"signin-ip", 50, 15 * time.Minute}
	SignUpPerIP      = Rule{"signup-ip", 10, time.Hour}
	VerifyPerIP      = Rule{"verify-ip", 30, 15 * time.Minute}
	ResetPerIP       = Rule{"reset-ip", 10, time.Hour}
	ResetPerAccount  = Rule{"reset-account", 5, time.Hour}
	APIAuthFailPerIP = Rule{"api-auth-fail-ip", 50, 15 * time.Minute}
)

// Decision is the outcome of one hit.
type Decision struct {
	Allowed    bool
	RetryAfter time.Duration
}

// Hit counts one hit of subject against rule at now.
func Hit(ctx context.Context, q *queries.Queries, rule Rule, subject string, now time.Time) (Decision, error) {
	start := now.Truncate(rule.Window)
	n, err := q.RateLimitHit(ctx, queries.RateLimitHitParams{
		Key:         rule.Name + ":" + subject,
		WindowStart: pgtype.Timestamptz{Time: start, Valid: true},
	})
	if err != nil {
		return Decision{}, fmt.Errorf("rate limit %s: %w", rule.Name, err)
	}
	if n > rule.Limit {
		return Decision{Allowed: false, RetryAfter: start.Add(rule.Window).Sub(now)}, nil
	}
	return Decision{Allowed: true}, nil
}

// Reset forgets subject's hits against rule (after a successful sign-in).
func Reset(ctx context.Context, q *queries.Queries, rule Rule, subject string) error {
	if err := q.RateLimitReset(ctx, rule.Name+":"+subject); err != nil {
		return fmt.Errorf("reset rate limit %s: %w", rule.Name, err)
	}
	return nil
}
