package views

import (
	"net/url"
	"strconv"
	"strings"
	"time"
)

// AdminJobs is the jobs page: River's background work.
type AdminJobs struct {
	// State and Kind filter the list (empty: all).
	State, Kind string
	// States are River's job states, the count table's columns; Kinds the
	// kinds of the jobs in the table, its rows.
	States []string
	Kinds  []AdminJobsKind
	Jobs   []AdminJob
	// OlderURL is the next page, of older jobs; empty at the end.
	OlderURL string
	Periodic []AdminJobsPeriodic
	// Leader is nil when no worker process was ever elected.
	Leader    *AdminJobsLeader
	Processes []AdminJobsProcess
	Queues    []AdminJobsQueue
	Now       time.Time
}

// AdminJobsKind is a kind's counts, in the order of AdminJobs.States.
type AdminJobsKind struct {
	Kind   string
	Counts []int64
}

// AdminJob is a job in the list. Its arguments are not shown: some hold
// sealed secrets (an email's one-time code), and the kind says enough.
type AdminJob struct {
	ID                     int64
	Kind, Queue, State     string
	Attempt, MaxAttempts   int
	CreatedAt, ScheduledAt time.Time
	AttemptedAt            time.Time
	Errors                 []AdminJobError
	CanRetry, CanCancel    bool
}

// AdminJobError is the error of one failed attempt.
type AdminJobError struct {
	Attempt int
	At      time.Time
	Error   string
}

// AdminJobsPeriodic is a periodic job and its latest run still kept.
type AdminJobsPeriodic struct {
	Kind     string
	Interval time.Duration
	// LastID is zero when no run is kept.
	LastID                 int64
	LastState              string
	LastCreated, LastEnded time.Time
	Next                   time.Time
}

// AdminJobsLeader is River's elected leader.
type AdminJobsLeader struct {
	ID                   string
	ElectedAt, ExpiresAt time.Time
}

// AdminJobsProcess is a process that runs River workers, as its own row
// tells it.
type AdminJobsProcess struct {
	ID, Hostname, Version string
	PID                   int
	Queues                []string
	StartedAt, LastSeenAt time.Time
	// StoppedAt is when it shut down cleanly; zero while it runs.
	StoppedAt time.Time
	// Leader is River's leader now; Stale a running process not seen
	// lately (killed, or its machine lost).
	Leader, Stale bool
}

// AdminJobsQueue is a queue some worker process works (or did lately).
type AdminJobsQueue struct {
	Name                 string
	CreatedAt, UpdatedAt time.Time
	PausedAt             time.Time
	// Silent is a queue no process has reported working lately.
	Silent bool
}

// AdminJobsURL is the jobs page filtered by state and kind, from before
// (a job ID; zero: the newest).
func AdminJobsURL(state, kind string, before int64) string {
	v := url.Values{}
	if state != "" {
		v.Set("state", state)
	}
	if kind != "" {
		v.Set("kind", kind)
	}
	if before > 0 {
		v.Set("before", strconv.FormatInt(before, 10))
	}
	if len(v) == 0 {
		return "/admin/jobs"
	}
	return "/admin/jobs?" + v.Encode()
}

// adminJobStateMsg is the catalog message of a River job state.
func adminJobStateMsg(state string) string {
	if state == "" {
		return "AdminJobsAll"
	}
	return "AdminJobState" + strings.ToUpper(state[:1]) + state[1:]
}

// lastJobError is a job's latest error, if any.
func lastJobError(j AdminJob) (AdminJobError, bool) {
	if len(j.Errors) == 0 {
		return AdminJobError{}, false
	}
	return j.Errors[len(j.Errors)-1], true
}
