package webhooks

import (
	"context"
	"fmt"
	"log/slog"
	"maps"
	"strconv"
	"sync"
	"time"

	"github.com/kubebyon/kubebyon/internal/input"
	"github.com/kubebyon/kubebyon/queries"
)

// The database's own outage cannot be queued in it: Standby tells the
// platform's webhook channels about it from the memory of the process.

const (
	// StandbyInterval is how often Standby pings the database.
	StandbyInterval = 30 * time.Second
	// StandbyDownAfter is how long the database must fail every ping
	// before the platform's channels are told.
	StandbyDownAfter = 3 * time.Minute
	// standbyPingTimeout bounds one ping.
	standbyPingTimeout = 5 * time.Second
	// standbyRefresh is how often the channels in memory are read again
	// while the database answers.
	standbyRefresh = 5 * time.Minute
	// Templates of the two messages (Mail<T>Subject and Notify<T>Body in
	// the locale).
	TemplateDatabaseUnreachable = "DatabaseUnreachable"
	TemplateDatabaseReachable   = "DatabaseReachable"
	// EventDatabase is the event kind of both.
	EventDatabase = "platform_health"
)

// standbyTarget is a platform channel as kept in memory.
type standbyTarget struct {
	Target
	ID   int64
	Lang string
}

// Standby watches the database from one process: while it answers, it
// keeps the platform's webhook channels (opened) and the network setting
// in memory; once every ping has failed for StandbyDownAfter it sends the
// outage to those channels straight from memory, once, and once more
// when the database answers again. Each process that runs one tells on
// its own (the workers run it, so a platform of two worker processes
// sends each message twice). Sends are not written to the channels'
// delivery logs: the database is what failed.
type Standby struct {
	// Queries reads the channels; Ping asks the database watched
	// (pgxpool.Pool.Ping).
	Queries  *queries.Queries
	Ping     func(context.Context) error
	Webhooks *Service
	Logger   *slog.Logger
	// Now is the clock; nil means time.Now.
	Now func() time.Time

	mu        sync.Mutex
	targets   []standbyTarget
	guard     Guard
	loadedAt  time.Time
	downSince time.Time
	told      bool
}

func (s *Standby) now() time.Time {
	if s.Now != nil {
		return s.Now()
	}
	return time.Now()
}

// Run pings every StandbyInterval until ctx ends.
func (s *Standby) Run(ctx context.Context) {
	t := time.NewTicker(StandbyInterval)
	defer t.Stop()
	for {
		s.Step(ctx)
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// Step pings the database once and acts on the answer.
func (s *Standby) Step(ctx context.Context) {
	s.mu.Lock()
	defer s.mu.Unlock()
	pctx, cancel := context.WithTimeout(ctx, standbyPingTimeout)
	err := s.Ping(pctx)
	cancel()
	now := s.now()
	if err != nil {
		if s.downSince.IsZero() {
			s.downSince = now
			s.Logger.WarnContext(ctx, "database unreachable", "error", err)
		}
		if !s.told && now.Sub(s.downSince) >= StandbyDownAfter {
			s.told = true
			s.send(ctx, TemplateDatabaseUnreachable, now, map[string]any{
				"Since": s.downSince.UTC().Format(time.RFC3339), "Minutes": minutesOf(now.Sub(s.downSince)), "Error": input.Truncate(err.Error(), 300),
			})
		}
		return
	}
	if !s.downSince.IsZero() {
		s.Logger.InfoContext(ctx, "database reachable again", "down_for", now.Sub(s.downSince).Round(time.Second))
		if s.told {
			s.send(ctx, TemplateDatabaseReachable, now, map[string]any{
				"Since": s.downSince.UTC().Format(time.RFC3339), "Minutes": minutesOf(now.Sub(s.downSince)),
			})
		}
		s.downSince, s.told = time.Time{}, false
	}
	if s.loadedAt.IsZero() || now.Sub(s.loadedAt) >= standbyRefresh {
		if err := s.load(ctx); err != nil {
			s.Logger.WarnContext(ctx, "read the platform's webhook channels", "error", err)
			return
		}
		s.loadedAt = now
	}
}

// load reads the platform's channels and the network setting into memory.
func (s *Standby) load(ctx context.Context) error {
	rows, err := s.Queries.WebhookChannelListPlatform(ctx)
	if err != nil {
		return fmt.Errorf("list platform webhook channels: %w", err)
	}
	network, err := LoadNetwork(ctx, s.Queries)
	if err != nil {
		return err
	}
	targets := make([]standbyTarget, 0, len(rows))
	for _, c := range rows {
		t, err := s.Webhooks.target(c)
		if err != nil {
			s.Logger.WarnContext(ctx, "a platform webhook channel cannot be opened", "channel", c.ID, "error", err)
			continue
		}
		targets = append(targets, standbyTarget{Target: t, ID: c.ID, Lang: c.Lang})
	}
	s.targets, s.guard = targets, network.Guard()
	return nil
}

// send tells every channel in memory, once each, logging what came of it.
func (s *Standby) send(ctx context.Context, template string, now time.Time, data map[string]any) {
	client := s.guard.Client()
	id := template + "-" + strconv.FormatInt(now.Unix(), 10)
	for _, t := range s.targets {
		e := s.Webhooks.event(id, EventDatabase, template, t.Lang, now, maps.Clone(data)) // event adds to its map
		sctx, cancel := context.WithTimeout(ctx, AttemptTimeout)
		o := Send(sctx, client, t.Target, e, now)
		cancel()
		if o.Err != nil {
			s.Logger.ErrorContext(ctx, "tell a platform webhook channel about the database", "channel", t.ID, "template", template, "code", o.Code, "error", o.Err)
			continue
		}
		s.Logger.InfoContext(ctx, "told a platform webhook channel about the database", "channel", t.ID, "template", template)
	}
}

func minutesOf(d time.Duration) int { return int(d.Round(time.Minute) / time.Minute) }
