// Package ratelimit counts requests in windows kept in PostgreSQL, so that
// limits hold across every replica of the server. A hit is judged by the
// sliding-window estimate (the current window's count plus the previous
// window's, weighted by how much of it still lies within one window of
// now), so a client cannot double its rate around a window's turn. (The rate-limit
// libraries for Go keep state in memory or Redis; this platform's only
// shared store is PostgreSQL.)
//
// Hit writes to PostgreSQL on every hit. Limiter puts a per-process front
// before it, for the busy endpoints (the join script and its reports): a
// process keeps, for each (rule, subject) it saw lately, the counts of the
// current and the previous window as PostgreSQL last answered them plus its
// own hits since, and lets a hit through without PostgreSQL while
//
//   - PostgreSQL has answered for the subject in this window (a subject new
//     to the process, or one evicted and seen again, asks first),
//   - it would then hold at most batch-1 unsent hits of the subject, batch being
//     a tenth of the limit (rounded up; 12 of the join script's 120), and
//   - the sliding-window estimate from its counts would stay within the
//     limit even with a whole batch more hits.
//
// Every other hit goes to PostgreSQL with the unsent ones (one statement
// adds them, and hits left over from the window before to that window's
// row) and is judged by decide on the counts it answers, as Hit judges.
// So near or over the limit every hit goes to PostgreSQL, and a subject
// well under it costs one write per batch.
//
// A single process refuses exactly the hits Hit would: its counts are
// PostgreSQL's, it refuses only on PostgreSQL's answer, and it lets
// through alone only hits that answer would let through. With several
// replicas, what one cannot see are the unsent hits of the others, at most
// batch-1 each: together they let through at most Slack(rule, replicas) =
// (replicas-1)*(batch-1) hits over the limit (under a tenth of the limit
// per replica beyond the first: 11 for the join script between two). A
// process that stops loses its unsent hits (the clients gain at most
// batch-1). The counts of at most a fixed number of subjects are kept, the
// least recently hit evicted first with their unsent hits sent.
package ratelimit

import (
	"context"
	"fmt"
	"math"
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
	// SignInPerDevice replaces SignInPerAccount for a browser holding a
	// device cookie of the account (accounts.Device).
	SignInPerDevice  = Rule{"signin-device", 10, 15 * time.Minute}
	SignInPerIP      = Rule{"signin-ip", 50, 15 * time.Minute}
	SignUpPerIP      = Rule{"signup-ip", 10, time.Hour}
	VerifyPerIP      = Rule{"verify-ip", 30, 15 * time.Minute}
	ResetPerIP       = Rule{"reset-ip", 10, time.Hour}
	ResetPerAccount  = Rule{"reset-account", 5, time.Hour}
	APIAuthFailPerIP = Rule{"api-auth-fail-ip", 50, 15 * time.Minute}
	// Two-factor codes: six digits are guessed one in a million, so few
	// tries per account, and per address across accounts.
	TwoFactorPerUser = Rule{"two-factor-user", 10, 15 * time.Minute}
	TwoFactorPerIP   = Rule{"two-factor-ip", 50, 15 * time.Minute}
)

// Decision is the outcome of one hit.
type Decision struct {
	Allowed    bool
	RetryAfter time.Duration
}

// Hit counts one hit of subject against rule at now.
func Hit(ctx context.Context, q *queries.Queries, rule Rule, subject string, now time.Time) (Decision, error) {
	start := now.Truncate(rule.Window)
	row, err := q.RateLimitHit(ctx, queries.RateLimitHitParams{
		Key:           rule.Name + ":" + subject,
		WindowStart:   pgtype.Timestamptz{Time: start, Valid: true},
		PreviousStart: pgtype.Timestamptz{Time: start.Add(-rule.Window), Valid: true},
	})
	if err != nil {
		return Decision{}, fmt.Errorf("rate limit %s: %w", rule.Name, err)
	}
	return decide(rule, start, now, row.Count, row.Previous), nil
}

// decide judges a hit that made the current window's count current, with
// previous hits in the window before.
func decide(rule Rule, start, now time.Time, current, previous int32) Decision {
	window := float64(rule.Window)
	elapsed := float64(now.Sub(start)) / window
	limit := float64(rule.Limit)
	if float64(current)+float64(previous)*(1-elapsed) <= limit {
		return Decision{Allowed: true}
	}
	// When one more hit would be let through, if none comes before it:
	// within this window as the previous one slides out, or else within
	// the next as this one does. (The estimate is over the limit, so with
	// current+1 within it, previous is not 0.)
	var at float64
	if float64(current)+1 <= limit {
		at = 1 - (limit-float64(current)-1)/float64(previous)
	} else {
		at = 2 - (limit-1)/float64(current)
	}
	// Whole seconds, rounded up: what Retry-After can say, and never early.
	retry := math.Ceil((time.Duration(at*window) - now.Sub(start)).Seconds())
	return Decision{Allowed: false, RetryAfter: time.Duration(max(retry, 1)) * time.Second}
}

// Reset forgets subject's hits against rule (after a successful sign-in).
func Reset(ctx context.Context, q *queries.Queries, rule Rule, subject string) error {
	if err := q.RateLimitReset(ctx, rule.Name+":"+subject); err != nil {
		return fmt.Errorf("reset rate limit %s: %w", rule.Name, err)
	}
	return nil
}
