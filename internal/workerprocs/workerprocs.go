// Package workerprocs keeps a row per process that runs River workers
// (`serve` with workers, `worker`), for the admin's jobs page: River 0.51
// writes none. Each such process names itself (NewProcess), gives that
// name to River as its client ID, so that River's leader row points at it,
// and runs a Heartbeat: its row is written at start, refreshed every
// Interval, and marked stopped on a clean shutdown. The cleanup job
// deletes rows not seen for a day (queries.WorkerProcessDeleteGone).
package workerprocs

import (
	"context"
	"crypto/rand"
	"fmt"
	"log/slog"
	"os"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/jackc/pgx/v5/pgtype"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/kubebyon/kubebyon/queries"
)

// Interval is how often a live process refreshes its row.
const Interval = 15 * time.Second

// StaleAfter is how long a running process's row may go without a
// refresh before the page says the process is not seen: four missed
// heartbeats, so one slow write is not taken for a dead process.
const StaleAfter = time.Minute

// ListLimit bounds the rows the page lists; a day of restarts keeps far
// fewer.
const ListLimit = 200

// maxHostLength keeps the ID within River's hundred characters (its own
// default ID cuts the host name at the same length).
const maxHostLength = 60

// Process is what a worker process says of itself.
type Process struct {
	// ID is the River client ID: "<host>-<pid>-<random>", unique even when
	// a container's host name and PID repeat across restarts.
	ID       string
	Hostname string
	PID      int
	Version  string
	// Queues are the River queues it works, sorted.
	Queues    []string
	StartedAt time.Time
}

// NewProcess is this process, running version and working queues.
func NewProcess(version string, queues []string) Process {
	host, err := os.Hostname()
	if err != nil || host == "" {
		host = "unknown-host"
	}
	idHost := host
	if len(idHost) > maxHostLength {
		idHost = idHost[:maxHostLength]
	}
	pid := os.Getpid()
	// Never nil: the column is NOT NULL.
	qs := append([]string{}, queues...)
	slices.Sort(qs)
	return Process{
		ID:       fmt.Sprintf("%s-%d-%s", idHost, pid, strings.ToLower(rand.Text()[:8])),
		Hostname: host, PID: pid, Version: version, Queues: qs,
		StartedAt: time.Now(),
	}
}

// Heartbeat keeps Process's row alive while the process runs.
type Heartbeat struct {
	Pool    *pgxpool.Pool
	Logger  *slog.Logger
	Process Process
	// Interval between refreshes; zero means Interval.
	Interval time.Duration

	cancel context.CancelFunc
	done   chan struct{}
	once   sync.Once
}

// Start writes the row now, then refreshes it every Interval until ctx
// ends or Stop is called.
func (h *Heartbeat) Start(ctx context.Context) error {
	if err := h.beat(ctx); err != nil {
		return err
	}
	ctx, h.cancel = context.WithCancel(ctx)
	h.done = make(chan struct{})
	go h.run(ctx)
	return nil
}

func (h *Heartbeat) run(ctx context.Context) {
	defer close(h.done)
	every := h.Interval
	if every <= 0 {
		every = Interval
	}
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			// A missed beat is logged and the next one tried: the page
			// shows the process as not seen only after several.
			if err := h.beat(ctx); err != nil && ctx.Err() == nil {
				h.Logger.WarnContext(ctx, "worker process heartbeat", "error", err)
			}
		}
	}
}

// beat upserts the row with last_seen_at now.
func (h *Heartbeat) beat(ctx context.Context) error {
	p := h.Process
	err := queries.New(h.Pool).WorkerProcessBeat(ctx, queries.WorkerProcessBeatParams{
		ID: p.ID, Hostname: p.Hostname, Pid: int32(p.PID), Version: p.Version, Queues: p.Queues,
		StartedAt: pgtype.Timestamptz{Time: p.StartedAt, Valid: true},
	})
	if err != nil {
		return fmt.Errorf("worker process %s heartbeat: %w", p.ID, err)
	}
	return nil
}

// Stop ends the refreshes and marks the row stopped: the shutdown was
// clean. Call it once River has stopped, before the pool closes. Only
// the first call does anything.
func (h *Heartbeat) Stop(ctx context.Context) error {
	var err error
	h.once.Do(func() {
		if h.cancel != nil {
			h.cancel()
			<-h.done
		}
		if _, e := queries.New(h.Pool).WorkerProcessMarkStopped(ctx, h.Process.ID); e != nil {
			err = fmt.Errorf("mark worker process %s stopped: %w", h.Process.ID, e)
		}
	})
	return err
}
