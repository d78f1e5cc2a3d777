package handlers

import (
	"context"
	"errors"
	"net/http"
	"strconv"

	"github.com/labstack/echo/v4"
	"github.com/riverqueue/river/rivertype"

	"github.com/kubebyon/kubebyon/internal/adminauth"
	"github.com/kubebyon/kubebyon/internal/adminjobs"
	"github.com/kubebyon/kubebyon/internal/audit"
	"github.com/kubebyon/kubebyon/internal/workerprocs"
	"github.com/kubebyon/kubebyon/queries"
	"github.com/kubebyon/kubebyon/views"
)

// adminJobsFilter reads ?state=, ?kind= and ?before= (or the same form
// fields); an unknown state or a bad ID is a 404, as for any unknown page.
func adminJobsFilter(c echo.Context) (adminjobs.Filter, error) {
	f := adminjobs.Filter{Kind: c.FormValue("kind")}
	if s := c.FormValue("state"); s != "" {
		if !adminjobs.ValidState(s) {
			return f, echo.ErrNotFound
		}
		f.State = rivertype.JobState(s)
	}
	if b := c.QueryParam("before"); b != "" {
		n, err := strconv.ParseInt(b, 10, 64)
		if err != nil || n <= 0 {
			return f, echo.ErrNotFound
		}
		f.Before = n
	}
	return f, nil
}

// showAdminJobsPage is GET /admin/jobs.
func (h *Handlers) showAdminJobsPage(c echo.Context) error {
	f, err := adminJobsFilter(c)
	if err != nil {
		return err
	}
	o, err := h.AdminJobs.Overview(c.Request().Context(), f)
	if err != nil {
		return err
	}
	m := views.AdminJobs{State: string(f.State), Kind: f.Kind, Now: o.Now}
	states := rivertype.JobStates()
	column := map[rivertype.JobState]int{}
	for i, s := range states {
		m.States = append(m.States, string(s))
		column[s] = i
	}
	// Counts come ordered by kind.
	for _, n := range o.Counts {
		if len(m.Kinds) == 0 || m.Kinds[len(m.Kinds)-1].Kind != n.Kind {
			m.Kinds = append(m.Kinds, views.AdminJobsKind{Kind: n.Kind, Counts: make([]int64, len(states))})
		}
		m.Kinds[len(m.Kinds)-1].Counts[column[n.State]] = n.Jobs
	}
	for _, j := range o.Jobs {
		m.Jobs = append(m.Jobs, adminJobView(j))
	}
	if o.More {
		m.OlderURL = views.AdminJobsURL(m.State, m.Kind, o.Jobs[len(o.Jobs)-1].ID)
	}
	for _, p := range o.Periodic {
		v := views.AdminJobsPeriodic{Kind: p.Kind, Interval: p.Interval, Next: p.Next}
		if p.Last != nil {
			v.LastID, v.LastState, v.LastCreated, v.LastEnded = p.Last.ID, string(p.Last.State), p.Last.CreatedAt, p.Last.FinalizedAt
		}
		m.Periodic = append(m.Periodic, v)
	}
	if l := o.Leader; l != nil {
		m.Leader = &views.AdminJobsLeader{ID: l.ID, ElectedAt: l.ElectedAt, ExpiresAt: l.ExpiresAt}
	}
	for _, p := range o.Processes {
		m.Processes = append(m.Processes, adminJobsProcessView(p, o))
	}
	for _, q := range o.Queues {
		v := views.AdminJobsQueue{
			Name: q.Name, CreatedAt: q.CreatedAt, UpdatedAt: q.UpdatedAt,
			Silent: o.Now.Sub(q.UpdatedAt) > adminjobs.QueueSilentAfter,
		}
		if q.PausedAt != nil {
			v.PausedAt = *q.PausedAt
		}
		m.Queues = append(m.Queues, v)
	}
	c.Response().Header().Set("Cache-Control", "no-store")
	h.viewAsAPICall(c, "adminListJobs", nil)
	return render(c, http.StatusOK, views.AdminJobsPage(m))
}

// adminJobsProcessView is a worker process as the page shows it: the
// leader is the process whose River client holds an unexpired term.
func adminJobsProcessView(p queries.WorkerProcess, o adminjobs.Overview) views.AdminJobsProcess {
	v := views.AdminJobsProcess{
		ID: p.ID, Hostname: p.Hostname, Version: p.Version, PID: int(p.Pid), Queues: p.Queues,
		StartedAt: p.StartedAt.Time, LastSeenAt: p.LastSeenAt.Time, StoppedAt: p.StoppedAt.Time,
	}
	running := !p.StoppedAt.Valid
	v.Leader = running && o.Leader != nil && o.Leader.ID == p.ID && o.Leader.ExpiresAt.After(o.Now)
	v.Stale = running && o.Now.Sub(v.LastSeenAt) > workerprocs.StaleAfter
	return v
}

// adminJobView is a job as the list shows it: never its arguments (see
// views.AdminJob).
func adminJobView(j *rivertype.JobRow) views.AdminJob {
	v := views.AdminJob{
		ID: j.ID, Kind: j.Kind, Queue: j.Queue, State: string(j.State),
		Attempt: j.Attempt, MaxAttempts: j.MaxAttempts,
		CreatedAt: j.CreatedAt, ScheduledAt: j.ScheduledAt,
		CanRetry: adminjobs.CanRetry(j.State), CanCancel: adminjobs.CanCancel(j.State),
	}
	if j.AttemptedAt != nil {
		v.AttemptedAt = *j.AttemptedAt
	}
	for _, e := range j.Errors {
		v.Errors = append(v.Errors, views.AdminJobError{Attempt: e.Attempt, At: e.At, Error: e.Error})
	}
	return v
}

// changeAdminJob is POST /admin/jobs/:id/retry or /cancel: it applies
// change, then goes back to the list the admin was on.
func (h *Handlers) changeAdminJob(change func(*adminjobs.Service, context.Context, int64, audit.Actor) (*rivertype.JobRow, error), flash string) echo.HandlerFunc {
	return func(c echo.Context) error {
		id, err := strconv.ParseInt(c.Param("id"), 10, 64)
		if err != nil || id <= 0 {
			return echo.ErrNotFound
		}
		f, err := adminJobsFilter(c)
		if err != nil {
			return err
		}
		_, err = change(h.AdminJobs, c.Request().Context(), id, actor(c))
		switch {
		case errors.Is(err, adminjobs.ErrNotAllowed):
			h.flashError(c, err.Error())
		case errors.Is(err, adminauth.ErrNotAdmin), errors.Is(err, adminjobs.ErrNotFound):
			return echo.ErrNotFound
		case err != nil:
			return err
		default:
			h.flash(c, flash)
		}
		return redirect(c, views.AdminJobsURL(string(f.State), f.Kind, 0))
	}
}
