package handlers

import (
	"context"
	"errors"
	"net/http"
	"strconv"
	"time"

	"github.com/labstack/echo/v4"
	"github.com/riverqueue/river/rivertype"

	"github.com/kubebyon/kubebyon/internal/adminauth"
	"github.com/kubebyon/kubebyon/internal/adminjobs"
	"github.com/kubebyon/kubebyon/internal/audit"
	"github.com/kubebyon/kubebyon/internal/input"
)

// errAdminJobNotFound answers a job that does not exist.
var errAdminJobNotFound = echo.NewHTTPError(http.StatusNotFound, "ErrorAdminJobNotFound")

// apiAdminJob is a background job as the admin API shows it: never its
// arguments, which may hold secrets (see views.AdminJob).
type apiAdminJob struct {
	ID          int64              `json:"id"`
	Kind        string             `json:"kind"`
	Queue       string             `json:"queue"`
	State       string             `json:"state"`
	Attempt     int                `json:"attempt"`
	MaxAttempts int                `json:"max_attempts"`
	CreatedAt   time.Time          `json:"created_at"`
	ScheduledAt time.Time          `json:"scheduled_at"`
	AttemptedAt *time.Time         `json:"attempted_at"`
	FinalizedAt *time.Time         `json:"finalized_at"`
	Errors      []apiAdminJobError `json:"errors"`
}

// apiAdminJobError is what an attempt of a job failed with.
type apiAdminJobError struct {
	Attempt int       `json:"attempt"`
	At      time.Time `json:"at"`
	Error   string    `json:"error"`
}

type apiAdminJobList struct {
	Jobs []apiAdminJob `json:"jobs"`
	Next string        `json:"next,omitempty"`
}

func apiAdminJobOf(j *rivertype.JobRow) apiAdminJob {
	out := apiAdminJob{
		ID: j.ID, Kind: j.Kind, Queue: j.Queue, State: string(j.State), Attempt: j.Attempt, MaxAttempts: j.MaxAttempts,
		CreatedAt: j.CreatedAt.UTC(), ScheduledAt: j.ScheduledAt.UTC(), Errors: make([]apiAdminJobError, len(j.Errors)),
	}
	if j.AttemptedAt != nil {
		t := j.AttemptedAt.UTC()
		out.AttemptedAt = &t
	}
	if j.FinalizedAt != nil {
		t := j.FinalizedAt.UTC()
		out.FinalizedAt = &t
	}
	for i, e := range j.Errors {
		out.Errors[i] = apiAdminJobError{Attempt: e.Attempt, At: e.At.UTC(), Error: e.Error}
	}
	return out
}

// listAPIAdminJobs is GET /api/v1/admin/jobs: River's jobs, newest first,
// of a ?state= and a ?kind= (all when absent), a page at a time; a state
// River does not have is 422.
func (h *Handlers) listAPIAdminJobs(c echo.Context) error {
	p, before, err := apiIDPageOf(c)
	if err != nil {
		return err
	}
	f := adminjobs.Filter{Kind: c.QueryParam("kind"), Before: before}
	if s := c.QueryParam("state"); s != "" {
		if !adminjobs.ValidState(s) {
			return input.Errors{"state": "ErrAdminJobFilterState"}
		}
		f.State = rivertype.JobState(s)
	}
	jobs, more, err := h.AdminJobs.List(c.Request().Context(), f, p.Limit)
	if err != nil {
		return err
	}
	out := apiAdminJobList{Jobs: make([]apiAdminJob, len(jobs))}
	for i, j := range jobs {
		out.Jobs[i] = apiAdminJobOf(j)
	}
	if more {
		out.Next = idCursor(jobs[len(jobs)-1].ID)
	}
	return c.JSON(http.StatusOK, out)
}

// changeAPIAdminJob is POST /api/v1/admin/jobs/{id}/retry or /cancel:
// change, as the back office's, answered with the job as it is now; a job
// whose state the change does not apply to is 409.
func (h *Handlers) changeAPIAdminJob(change func(*adminjobs.Service, context.Context, int64, audit.Actor) (*rivertype.JobRow, error)) echo.HandlerFunc {
	return func(c echo.Context) error {
		id, err := strconv.ParseInt(c.Param("id"), 10, 64)
		if err != nil || id <= 0 {
			return errAdminJobNotFound
		}
		j, err := change(h.AdminJobs, c.Request().Context(), id, actor(c))
		switch {
		case errors.Is(err, adminjobs.ErrNotAllowed):
			return echo.NewHTTPError(http.StatusConflict, err.Error())
		case errors.Is(err, adminauth.ErrNotAdmin), errors.Is(err, adminjobs.ErrNotFound):
			return errAdminJobNotFound
		case err != nil:
			return err
		}
		return c.JSON(http.StatusOK, apiAdminJobOf(j))
	}
}
