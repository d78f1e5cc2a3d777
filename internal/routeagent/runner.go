//go:build linux

package routeagent

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"net/netip"
	"time"

	"github.com/kubebyon/kubebyon/internal/edgewire"
)

const (
	// DefaultResync is how often the runner converges without a new
	// version, by default.
	DefaultResync = 5 * time.Minute
	// minBackoff and maxBackoff bound the wait between failed attempts.
	minBackoff = time.Second
	maxBackoff = time.Minute
)

// Runner keeps the host's routes as the platform says: `kubebyon
// route-agent`. It long-polls the platform's route API, converges the
// routing table to every new version, and again every Resync so that
// routes deleted behind its back (by systemd-networkd, an administrator)
// come back. After every poll it reports the last converge, which also
// tells the platform that it is alive. Until the platform first answers it
// leaves the table alone: an agent restarted while the platform is down
// keeps the routes it made.
type Runner struct {
	Platform *Remote
	// Node is the host node's name in the reports.
	Node  string
	Agent *Agent
	// Resync is DefaultResync when zero.
	Resync time.Duration
	// Wait is the long polls' wait: DefaultWait when zero, at most MaxWait.
	Wait   time.Duration
	Logger *slog.Logger

	// retry is the backoff's bounds; zero, 1 second to 1 minute.
	retry backoff
}

// runState is what one Run knows between its steps.
type runState struct {
	// desired is nil until the platform first answers.
	desired *desiredState
	// converged is the version last converged to.
	converged string
	// next is when to converge without a new version.
	next time.Time
	// maxWait is the platform's limit on a poll's wait, once it said so.
	maxWait time.Duration
	// last is the report of the last converge.
	last *edgewire.RouteReport
	// downSince is when requests to the platform began to fail; zero
	// while they succeed.
	downSince time.Time
	// retry spaces out failed steps, convergeRetry failed converges.
	retry, convergeRetry backoff
}

// desiredState is one version of the routes, parsed.
type desiredState struct {
	version string
	routes  []Route
	// failed holds, by destination, the routes that do not parse.
	failed map[string]string
}

// Run keeps the routes until ctx ends. It fails only when the runner
// lacks what it needs.
func (r *Runner) Run(ctx context.Context) error {
	if r.Platform == nil || r.Agent == nil || r.Node == "" {
		return errors.New("route agent: the runner needs a platform, an agent and a node name")
	}
	s := &runState{retry: r.retry, convergeRetry: r.retry}
	for {
		err := r.step(ctx, s)
		if ctx.Err() != nil {
			return nil
		}
		wait := r.track(ctx, s, err)
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(wait):
		}
	}
}

// step converges when it is due, reports, and polls the platform once.
// Its error is the platform's: a converge that fails is in the report.
func (r *Runner) step(ctx context.Context, s *runState) error {
	if s.desired != nil && !time.Now().Before(s.next) {
		r.converge(ctx, s)
	}
	var reportErr error
	if s.last != nil {
		if err := r.Platform.Status(ctx, *s.last); err != nil {
			reportErr = fmt.Errorf("report the routes' status: %w", err)
		}
	}
	// A failed report does not hold the routes back.
	return errors.Join(reportErr, r.poll(ctx, s))
}

// poll waits for a version of the routes other than the one held, until
// the next converge is due at most.
func (r *Runner) poll(ctx context.Context, s *runState) error {
	have := ""
	if s.desired != nil {
		have = s.desired.version
	}
	d, changed, err := r.Platform.Routes(ctx, have, r.pollWait(s))
	var tooLong *WaitTooLongError
	if errors.As(err, &tooLong) && tooLong.Max >= time.Second {
		// Its request timeout is shorter than the wait: poll again, within it.
		s.maxWait = tooLong.Max
		r.logger().InfoContext(ctx, "the platform answers polls sooner than asked; polling within its limit", "wait", tooLong.Max)
		return nil
	}
	if err != nil {
		return fmt.Errorf("poll the routes: %w", err)
	}
	if !changed {
		return nil
	}
	if d.Version == "" {
		return errors.New("poll the routes: the platform sent routes without a version")
	}
	s.desired = parseDesired(d)
	s.next = time.Time{}
	return nil
}

// pollWait is the next poll's wait: until the next converge is due, in
// whole seconds (the API's unit), at least one, and within the platform's
// limit.
func (r *Runner) pollWait(s *runState) time.Duration {
	wait := max(min(cmp.Or(r.Wait, DefaultWait), MaxWait, cmp.Or(s.maxWait, MaxWait)), time.Second)
	if s.desired == nil {
		return wait
	}
	until := (time.Until(s.next) + time.Second - 1).Truncate(time.Second)
	return min(wait, max(until, time.Second))
}

// converge applies the routes held and keeps the report.
func (r *Runner) converge(ctx context.Context, s *runState) {
	d := s.desired
	res, err := r.Agent.Converge(ctx, d.routes)
	if ctx.Err() != nil {
		return
	}
	st := edgewire.RouteReport{
		Node: r.Node, Version: d.version, InPlace: res.InPlace,
		Added: len(res.Added), Replaced: len(res.Replaced), Removed: len(res.Removed),
		Failed: res.Failed,
	}
	if st.Failed == nil {
		st.Failed = map[string]string{}
	}
	// Converge saw the routes whose via does not parse as routes without
	// one, and never saw those whose destination does not: the parse
	// errors say more.
	for dst, reason := range d.failed {
		st.Failed[dst] = reason
	}
	log := r.logger().With("version", d.version, "routes", len(d.routes), "in_place", st.InPlace, "failed", len(st.Failed))
	if err != nil {
		st.Error = err.Error()
		retry := s.convergeRetry.next()
		s.next = time.Now().Add(retry)
		log.ErrorContext(ctx, "routes not converged", "error", err, "retry_in", retry)
	} else {
		s.convergeRetry.reset()
		s.next = time.Now().Add(cmp.Or(r.Resync, DefaultResync))
		if d.version != s.converged {
			log.InfoContext(ctx, "routes of a new version applied")
		} else {
			log.DebugContext(ctx, "routes resynced")
		}
		s.converged = d.version
	}
	st = bounded(st)
	s.last = &st
}

// track notes whether the platform answered, logging only when that
// changes, and says how long to wait before the next step.
func (r *Runner) track(ctx context.Context, s *runState, err error) time.Duration {
	log := r.logger()
	if err == nil {
		if !s.downSince.IsZero() {
			log.InfoContext(ctx, "platform reached again", "after", time.Since(s.downSince).Round(time.Millisecond))
			s.downSince = time.Time{}
		}
		s.retry.reset()
		return 0
	}
	wait := s.retry.next()
	if s.downSince.IsZero() {
		s.downSince = time.Now()
		log.WarnContext(ctx, "cannot reach the platform; retrying with backoff, the routes stay as they are", "platform", r.Platform.URL, "error", err)
	} else {
		log.DebugContext(ctx, "platform still unreachable", "error", err, "retry_in", wait)
	}
	return wait
}

func (r *Runner) logger() *slog.Logger {
	if r.Logger == nil {
		return slog.New(slog.DiscardHandler)
	}
	return r.Logger
}

// parseDesired reads the platform's routes. A route whose destination
// parses but whose via does not is kept without a via, so that Converge
// leaves the agent's route to that destination as it is.
func parseDesired(d edgewire.TenantRoutes) *desiredState {
	st := &desiredState{version: d.Version, routes: make([]Route, 0, len(d.Routes)), failed: map[string]string{}}
	for _, dr := range d.Routes {
		where := fmt.Sprintf("cluster %d, node %q", dr.ClusterID, dr.Node)
		dst, err := netip.ParsePrefix(dr.Dst)
		if err != nil {
			st.fail(dr.Dst, fmt.Sprintf("%s: the destination %q is not a network such as 10.128.0.0/24", where, dr.Dst))
			continue
		}
		via, err := netip.ParseAddr(dr.Via)
		if err != nil {
			st.fail(dst.String(), fmt.Sprintf("%s: the via %q is not an IP address", where, dr.Via))
			st.routes = append(st.routes, Route{Dst: dst})
			continue
		}
		st.routes = append(st.routes, Route{Dst: dst, Via: via})
	}
	return st
}

func (d *desiredState) fail(dst, reason string) {
	if prev, ok := d.failed[dst]; ok {
		reason = prev + "; " + reason
	}
	d.failed[dst] = reason
}

// backoff spaces out retries: each wait is drawn from the upper half of a
// span that doubles from min to max, so that the agents of many nodes do
// not retry in step.
type backoff struct {
	min, max time.Duration
	span     time.Duration
}

func (b *backoff) next() time.Duration {
	if b.span == 0 {
		b.span = cmp.Or(b.min, minBackoff)
	}
	d := b.span
	b.span = min(2*d, cmp.Or(b.max, maxBackoff))
	return d/2 + rand.N(d/2+1)
}

func (b *backoff) reset() { b.span = 0 }
