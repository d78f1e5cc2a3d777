package billing

import (
	"errors"
	"math/big"
	"time"
)

// Period is how long a paid plan runs before it renews.
type Period string

// Periods.
const (
	Monthly Period = "month"
	Yearly  Period = "year"
)

// ErrPeriod: not a period the platform sells (catalog message ID).
var ErrPeriod = errors.New("ErrBillingPeriod")

// ParsePeriod reads a period's name.
func ParsePeriod(s string) (Period, error) {
	switch p := Period(s); p {
	case Monthly, Yearly:
		return p, nil
	}
	return "", ErrPeriod
}

// Boundary is the n-th period boundary after anchor: anchor plus n months
// (or years), on the anchor's day of the month, or the month's last day
// when it has fewer days (a subscription from 31 January renews on 28 or
// 29 February, then on 31 March), at the anchor's wall-clock time in its
// time zone (across daylight saving changes, the same local time). Every
// boundary is worked out from the anchor, never from the one before, so
// that a short month does not move the later ones.
func (p Period) Boundary(anchor time.Time, n int) time.Time {
	months := n
	if p == Yearly {
		months = 12 * n
	}
	y, m, d := anchor.Date()
	// The first day of the target month, then the day clamped to it.
	first := time.Date(y, m+time.Month(months), 1, 0, 0, 0, 0, anchor.Location())
	last := time.Date(first.Year(), first.Month()+1, 0, 0, 0, 0, 0, anchor.Location()).Day()
	h, mi, s := anchor.Clock()
	return time.Date(first.Year(), first.Month(), min(d, last), h, mi, s, anchor.Nanosecond(), anchor.Location())
}

// Current is the period around at: the boundaries start <= at < end, the
// k-th and k+1-th after anchor. An at before anchor gives the first
// period.
func (p Period) Current(anchor, at time.Time) (start, end time.Time) {
	if at.Before(anchor) {
		return anchor, p.Boundary(anchor, 1)
	}
	// An estimate from the calendar, then corrected by a step or two.
	k := 0
	ay, am, _ := anchor.Date()
	ty, tm, _ := at.In(anchor.Location()).Date()
	months := (ty-ay)*12 + int(tm-am)
	if p == Yearly {
		k = months / 12
	} else {
		k = months
	}
	for k > 0 && p.Boundary(anchor, k).After(at) {
		k--
	}
	for !p.Boundary(anchor, k+1).After(at) {
		k++
	}
	return p.Boundary(anchor, k), p.Boundary(anchor, k+1)
}

// Unused is the credit for the part of a period [start, end) not used at
// now: amount times the time left over the period's length, to the
// second, rounded down (never more than was paid for the time left); all
// of it before start, none at or after end.
func Unused(amount int64, start, end, now time.Time) int64 {
	if amount <= 0 || !end.After(start) || !now.Before(end) {
		return 0
	}
	if !now.After(start) {
		return amount
	}
	left := int64(end.Sub(now) / time.Second)
	total := int64(end.Sub(start) / time.Second)
	if total <= 0 {
		return 0
	}
	// amount*left may pass int64 for large amounts over a year in
	// seconds: multiply exactly.
	q := new(big.Int).Mul(big.NewInt(amount), big.NewInt(left))
	q.Quo(q, big.NewInt(total))
	return q.Int64()
}
