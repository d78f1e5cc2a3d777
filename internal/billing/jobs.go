package billing

import (
	"time"

	"github.com/riverqueue/river"

	"github.com/kubebyon/kubebyon/internal/checks"
)

// PeriodsInterval is how often subscriptions' periods and unpaid orders
// are looked at: an ended period is past due, and an order expires,
// within a minute.
const PeriodsInterval = time.Minute

// PeriodsArgs asks for what is due on subscriptions and orders: periods
// that ended, grace periods that ran out, notices of periods ending soon,
// unpaid orders past their deadline (Service.RunPeriods, ExpireOrders).
// One job for the platform, in bounded batches: the work is per user, a
// few rows each, not a call to a cluster.
type PeriodsArgs struct{}

// Kind implements river.JobArgs.
func (PeriodsArgs) Kind() string { return "billing_periods" }

// InsertOpts implements river.JobArgsWithInsertOpts: one waiting at a
// time, tried a few times.
func (PeriodsArgs) InsertOpts() river.InsertOpts {
	return river.InsertOpts{MaxAttempts: 3, UniqueOpts: checks.UniqueWhileWaiting()}
}
