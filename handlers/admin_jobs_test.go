package handlers_test

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/riverqueue/river"
	"github.com/riverqueue/river/rivertype"
	"github.com/stretchr/testify/require"

	"github.com/kubebyon/kubebyon/handlers/handlerstest"
)

// TestAdminJobsShowsFailingJobsAndRetries: a failing job shows its error
// and attempts; retry makes it run again; both through the insert-only
// River client an API replica has.
func TestAdminJobsShowsFailingJobsAndRetries(t *testing.T) {
	t.Parallel()
	b := handlerstest.SetupWorking(t)
	admin, _ := b.SignedUpAdmin(t, "jobs-admin")

	// Fails on every attempt; River backs off between them, so it sits
	// retryable with its error after the first.
	failing, sealed := b.FailingEmail(t, "not an address", nil)
	b.WaitJob(t, failing, func(j *rivertype.JobRow) bool { return j.State == rivertype.JobStateRetryable && len(j.Errors) > 0 },
		"the email job fails once")
	code, body := admin.Get("/admin/jobs?state=retryable&kind=email")
	require.Equal(t, http.StatusOK, code)
	require.Contains(t, body, `data-testid="admin-nav-jobs" aria-current="page"`)
	row := jobRowHTML(t, body, failing)
	require.Contains(t, row, `mail to &#34;not an address&#34;`)
	require.Contains(t, row, "Retryable")
	require.Contains(t, row, fmt.Sprintf("job-retry-%d", failing))
	require.Contains(t, row, fmt.Sprintf("job-cancel-%d", failing))
	require.NotContains(t, body, sealed, "job arguments stay off the page")
	require.Contains(t, body, `data-testid="jobs-count-email-retryable"`)
	// The filter holds: the list has none of the completed sign-up emails.
	require.NotContains(t, body, `data-testid="job-state">Completed<`)

	// One attempt only: discarded at once, and not run again by itself.
	discarded, _ := b.FailingEmail(t, "also not an address", &river.InsertOpts{MaxAttempts: 1})
	handlerstest.WaitFor(t, func() bool { return b.JobRow(t, discarded).State == rivertype.JobStateDiscarded }, "the job is discarded")
	_, body = admin.Get("/admin/jobs?state=discarded")
	row = jobRowHTML(t, body, discarded)
	require.Contains(t, row, "1 / 1")
	require.Contains(t, row, "also not an address")
	require.NotContains(t, row, fmt.Sprintf("job-cancel-%d", discarded), "a finished job cannot be cancelled")

	resp := admin.Post("/admin/jobs?state=discarded", fmt.Sprintf("/admin/jobs/%d/retry", discarded), url.Values{"state": {"discarded"}})
	require.Equal(t, http.StatusSeeOther, resp.StatusCode, handlerstest.ReadBody(t, resp))
	require.Equal(t, "/admin/jobs?state=discarded", resp.Header.Get("Location"))
	_, body = admin.Get("/admin/jobs?state=discarded")
	require.Contains(t, body, "The job is queued to run again now.")
	// It runs again and fails a second time.
	b.WaitJob(t, discarded, func(j *rivertype.JobRow) bool { return j.Attempt == 2 && j.State == rivertype.JobStateDiscarded },
		"the retried job runs again")
	j := b.JobRow(t, discarded)
	require.Len(t, j.Errors, 2)
	require.Equal(t, 2, j.MaxAttempts)
	require.Equal(t, 1, b.JobAudited(t, "admin.job_retry", discarded, "email"))

	// Cancel the retryable one: it stops for good.
	resp = admin.Post("/admin/jobs", fmt.Sprintf("/admin/jobs/%d/cancel", failing), nil)
	require.Equal(t, http.StatusSeeOther, resp.StatusCode, handlerstest.ReadBody(t, resp))
	// Running at that moment, it is cancelled as its attempt ends.
	handlerstest.WaitFor(t, func() bool { return b.JobRow(t, failing).State == rivertype.JobStateCancelled }, "the job is cancelled")
	require.Equal(t, 1, b.JobAudited(t, "admin.job_cancel", failing, "email"))
	// A second cancel no longer applies: said, and nothing written.
	resp = admin.Post("/admin/jobs", fmt.Sprintf("/admin/jobs/%d/cancel", failing), nil)
	require.Equal(t, http.StatusSeeOther, resp.StatusCode)
	_, body = admin.Get("/admin/jobs")
	require.Contains(t, body, "that action no longer applies")
	require.Equal(t, 1, b.JobAudited(t, "admin.job_cancel", failing, "email"))

	// The worker processes: the test's River client leads and works the
	// email queue; the periodic jobs are listed with their intervals.
	require.Contains(t, body, `data-testid="jobs-queue-email"`)
	require.Contains(t, handlerstest.SectionHTML(t, body, "jobs-leader"), b.River.ID())
	require.Contains(t, handlerstest.SectionHTML(t, body, "jobs-periodic"), `data-testid="jobs-periodic-cleanup"`)
	require.Contains(t, handlerstest.SectionHTML(t, body, "jobs-periodic"), "15m0s")
}

// TestAdminJobsCancelsScheduledJobs: a job scheduled for later is
// cancelled before it runs.
func TestAdminJobsCancelsScheduledJobs(t *testing.T) {
	t.Parallel()
	b := handlerstest.SetupWorking(t)
	admin, _ := b.SignedUpAdmin(t, "jobs-cancel-admin")
	id, _ := b.FailingEmail(t, "later", &river.InsertOpts{ScheduledAt: time.Now().Add(time.Hour)})
	code, body := admin.Get("/admin/jobs?state=scheduled")
	require.Equal(t, http.StatusOK, code)
	row := jobRowHTML(t, body, id)
	require.Contains(t, row, "Scheduled")
	require.NotContains(t, row, fmt.Sprintf("job-retry-%d", id), "a waiting job needs no retry")

	resp := admin.Post("/admin/jobs?state=scheduled", fmt.Sprintf("/admin/jobs/%d/cancel", id), url.Values{"state": {"scheduled"}, "kind": {"email"}})
	require.Equal(t, http.StatusSeeOther, resp.StatusCode, handlerstest.ReadBody(t, resp))
	require.Equal(t, "/admin/jobs?kind=email&state=scheduled", resp.Header.Get("Location"))
	j := b.JobRow(t, id)
	require.Equal(t, rivertype.JobStateCancelled, j.State)
	require.Equal(t, 0, j.Attempt, "it never ran")
	require.Equal(t, 1, b.JobAudited(t, "admin.job_cancel", id, "email"))
	_, body = admin.Get("/admin/jobs?state=cancelled&kind=email")
	require.Contains(t, body, "The job is cancelled")
	require.Contains(t, jobRowHTML(t, body, id), fmt.Sprintf("job-retry-%d", id))
	require.NotContains(t, body, "Not seen lately")

	// A queue no process has refreshed for an hour is pointed out.
	_, err := b.Pool.Exec(context.Background(), `UPDATE river_queue SET updated_at = now() - interval '1 hour' WHERE name = 'email'`)
	require.NoError(t, err)
	_, body = admin.Get("/admin/jobs")
	queue := handlerstest.SectionHTML(t, body, "jobs-queue-email")
	require.Contains(t, queue[:strings.Index(queue, "</tr>")], "Not seen lately")
}

// TestAdminJobsPages: keyset pages, newest first, and filters that refuse
// what is not a state.
func TestAdminJobsPages(t *testing.T) {
	t.Parallel()
	b := handlerstest.Setup(t)
	admin, _ := b.SignedUpAdmin(t, "jobs-pages-admin")
	var ids []int64
	for range 55 {
		id, _ := b.FailingEmail(t, "page", &river.InsertOpts{ScheduledAt: time.Now().Add(time.Hour)})
		ids = append(ids, id)
	}
	_, body := admin.Get("/admin/jobs?state=scheduled&kind=email")
	require.Contains(t, body, fmt.Sprintf(`data-testid="job-%d"`, ids[54]))
	require.NotContains(t, body, fmt.Sprintf(`data-testid="job-%d"`, ids[4]))
	older := handlerstest.LinkOf(t, body, "jobs-older")
	require.Equal(t, fmt.Sprintf("/admin/jobs?before=%d&kind=email&state=scheduled", ids[5]), older)
	_, body = admin.Get(older)
	for _, id := range ids[:5] {
		require.Contains(t, body, fmt.Sprintf(`data-testid="job-%d"`, id))
	}
	require.NotContains(t, body, fmt.Sprintf(`data-testid="job-%d"`, ids[5]))
	require.NotContains(t, body, `data-testid="jobs-older"`)
	count := handlerstest.SectionHTML(t, body, "jobs-count-email-scheduled")
	require.Contains(t, count[:strings.Index(count, "</td>")], ">55</a>")

	for _, path := range []string{"/admin/jobs?state=stuck", "/admin/jobs?before=x", "/admin/jobs?before=-1"} {
		code, _ := admin.Get(path)
		require.Equal(t, http.StatusNotFound, code, path)
	}
	resp := admin.Post("/admin/jobs", "/admin/jobs/999999999/retry", nil)
	require.Equal(t, http.StatusNotFound, resp.StatusCode)
	resp = admin.Post("/admin/jobs", "/admin/jobs/nope/cancel", nil)
	require.Equal(t, http.StatusNotFound, resp.StatusCode)
}

// TestAdminJobsRefuseNonAdmins: every route is a 404 for a user and for
// a visitor, and changes nothing.
func TestAdminJobsRefuseNonAdmins(t *testing.T) {
	t.Parallel()
	b := handlerstest.Setup(t)
	user, _ := b.SignedUpUser(t, "jobs-user")
	id, _ := b.FailingEmail(t, "later", &river.InsertOpts{ScheduledAt: time.Now().Add(time.Hour)})
	for _, who := range []struct {
		name     string
		c        *handlerstest.Client
		formPage string // a page with a CSRF token
	}{{"user", user, "/"}, {"visitor", b.Client(t), "/login"}} {
		for _, path := range []string{"/admin/jobs", "/admin/jobs?state=scheduled&kind=email"} {
			code, _ := who.c.Get(path)
			require.Equal(t, http.StatusNotFound, code, who.name+" "+path)
		}
		for _, action := range []string{"retry", "cancel"} {
			resp := who.c.Post(who.formPage, fmt.Sprintf("/admin/jobs/%d/%s", id, action), nil)
			require.Equal(t, http.StatusNotFound, resp.StatusCode, who.name+" "+action)
		}
	}
	require.Equal(t, rivertype.JobStateScheduled, b.JobRow(t, id).State)
	var n int
	require.NoError(t, b.Pool.QueryRow(context.Background(), `SELECT count(*) FROM audit_events WHERE target_type = 'job'`).Scan(&n))
	require.Zero(t, n)
}

// jobRowHTML is the list's row of job id.
func jobRowHTML(t *testing.T, body string, id int64) string {
	t.Helper()
	start := strings.Index(body, fmt.Sprintf(`<tr data-testid="job-%d"`, id))
	require.GreaterOrEqual(t, start, 0, "no row of job %d", id)
	end := strings.Index(body[start:], "</tr>")
	require.Greater(t, end, 0)
	return body[start : start+end]
}
