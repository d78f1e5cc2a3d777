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

	"github.com/kubebyon/kubebyon/internal/notify"
)

// failingEmail inserts an email to an address the mailer refuses, so the
// job fails with an error of ours on every attempt, and returns its ID.
// Its sealed data must not reach the page.
func (b *testBundle) failingEmail(t *testing.T, to string, opts *river.InsertOpts) (int64, string) {
	t.Helper()
	sealed := b.box.Seal([]byte(`{"Code":"123456"}`))
	res, err := b.river.Insert(context.Background(), notify.EmailArgs{To: to, Lang: "en", Template: notify.EmailSignupCode, Sealed: sealed}, opts)
	require.NoError(t, err)
	return res.Job.ID, sealed
}

// jobRow is a job as River has it now.
func (b *testBundle) jobRow(t *testing.T, id int64) *rivertype.JobRow {
	t.Helper()
	j, err := b.river.JobGet(context.Background(), id)
	require.NoError(t, err)
	return j
}

// waitJob waits until job id is as cond wants.
func (b *testBundle) waitJob(t *testing.T, id int64, cond func(*rivertype.JobRow) bool, what string) {
	t.Helper()
	waitFor(t, func() bool { return cond(b.jobRow(t, id)) }, what)
}

// jobAudited is how many events of action target job id.
func (b *testBundle) jobAudited(t *testing.T, action string, id int64, kind string) int {
	t.Helper()
	var n int
	require.NoError(t, b.pool.QueryRow(context.Background(),
		`SELECT count(*) FROM audit_events WHERE action = $1 AND target_type = 'job' AND target_id = $2 AND details->>'kind' = $3`,
		action, fmt.Sprint(id), kind).Scan(&n))
	return n
}

// TestAdminJobsShowsFailingJobsAndRetries: a failing job shows its error
// and attempts; retry makes it run again; both through the insert-only
// River client an API replica has.
func TestAdminJobsShowsFailingJobsAndRetries(t *testing.T) {
	t.Parallel()
	b := setup(t)
	admin, _ := b.signedUpAdmin(t, "jobs-admin")

	// Fails on every attempt; River backs off between them, so it sits
	// retryable with its error after the first.
	failing, sealed := b.failingEmail(t, "not an address", nil)
	b.waitJob(t, failing, func(j *rivertype.JobRow) bool { return j.State == rivertype.JobStateRetryable && len(j.Errors) > 0 },
		"the email job fails once")
	code, body := admin.get("/admin/jobs?state=retryable&kind=email")
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
	discarded, _ := b.failingEmail(t, "also not an address", &river.InsertOpts{MaxAttempts: 1})
	waitFor(t, func() bool { return b.jobRow(t, discarded).State == rivertype.JobStateDiscarded }, "the job is discarded")
	_, body = admin.get("/admin/jobs?state=discarded")
	row = jobRowHTML(t, body, discarded)
	require.Contains(t, row, "1 / 1")
	require.Contains(t, row, "also not an address")
	require.NotContains(t, row, fmt.Sprintf("job-cancel-%d", discarded), "a finished job cannot be cancelled")

	resp := admin.post("/admin/jobs?state=discarded", fmt.Sprintf("/admin/jobs/%d/retry", discarded), url.Values{"state": {"discarded"}})
	require.Equal(t, http.StatusSeeOther, resp.StatusCode, readBody(t, resp))
	require.Equal(t, "/admin/jobs?state=discarded", resp.Header.Get("Location"))
	_, body = admin.get("/admin/jobs?state=discarded")
	require.Contains(t, body, "The job is queued to run again now.")
	// It runs again and fails a second time.
	b.waitJob(t, discarded, func(j *rivertype.JobRow) bool { return j.Attempt == 2 && j.State == rivertype.JobStateDiscarded },
		"the retried job runs again")
	j := b.jobRow(t, discarded)
	require.Len(t, j.Errors, 2)
	require.Equal(t, 2, j.MaxAttempts)
	require.Equal(t, 1, b.jobAudited(t, "admin.job_retry", discarded, "email"))

	// Cancel the retryable one: it stops for good.
	resp = admin.post("/admin/jobs", fmt.Sprintf("/admin/jobs/%d/cancel", failing), nil)
	require.Equal(t, http.StatusSeeOther, resp.StatusCode, readBody(t, resp))
	// Running at that moment, it is cancelled as its attempt ends.
	waitFor(t, func() bool { return b.jobRow(t, failing).State == rivertype.JobStateCancelled }, "the job is cancelled")
	require.Equal(t, 1, b.jobAudited(t, "admin.job_cancel", failing, "email"))
	// A second cancel no longer applies: said, and nothing written.
	resp = admin.post("/admin/jobs", fmt.Sprintf("/admin/jobs/%d/cancel", failing), nil)
	require.Equal(t, http.StatusSeeOther, resp.StatusCode)
	_, body = admin.get("/admin/jobs")
	require.Contains(t, body, "that action no longer applies")
	require.Equal(t, 1, b.jobAudited(t, "admin.job_cancel", failing, "email"))

	// The worker processes: the test's River client leads and works the
	// email queue; the periodic jobs are listed with their intervals.
	require.Contains(t, body, `data-testid="jobs-queue-email"`)
	require.Contains(t, sectionHTML(t, body, "jobs-leader"), b.river.ID())
	require.Contains(t, sectionHTML(t, body, "jobs-periodic"), `data-testid="jobs-periodic-cleanup"`)
	require.Contains(t, sectionHTML(t, body, "jobs-periodic"), "15m0s")
}

// TestAdminJobsCancelsScheduledJobs: a job scheduled for later is
// cancelled before it runs.
func TestAdminJobsCancelsScheduledJobs(t *testing.T) {
	t.Parallel()
	b := setup(t)
	admin, _ := b.signedUpAdmin(t, "jobs-cancel-admin")
	id, _ := b.failingEmail(t, "later", &river.InsertOpts{ScheduledAt: time.Now().Add(time.Hour)})
	code, body := admin.get("/admin/jobs?state=scheduled")
	require.Equal(t, http.StatusOK, code)
	row := jobRowHTML(t, body, id)
	require.Contains(t, row, "Scheduled")
	require.NotContains(t, row, fmt.Sprintf("job-retry-%d", id), "a waiting job needs no retry")

	resp := admin.post("/admin/jobs?state=scheduled", fmt.Sprintf("/admin/jobs/%d/cancel", id), url.Values{"state": {"scheduled"}, "kind": {"email"}})
	require.Equal(t, http.StatusSeeOther, resp.StatusCode, readBody(t, resp))
	require.Equal(t, "/admin/jobs?kind=email&state=scheduled", resp.Header.Get("Location"))
	j := b.jobRow(t, id)
	require.Equal(t, rivertype.JobStateCancelled, j.State)
	require.Equal(t, 0, j.Attempt, "it never ran")
	require.Equal(t, 1, b.jobAudited(t, "admin.job_cancel", id, "email"))
	_, body = admin.get("/admin/jobs?state=cancelled&kind=email")
	require.Contains(t, body, "The job is cancelled")
	require.Contains(t, jobRowHTML(t, body, id), fmt.Sprintf("job-retry-%d", id))
	require.NotContains(t, body, "Not seen lately")

	// A queue no process has refreshed for an hour is pointed out.
	_, err := b.pool.Exec(context.Background(), `UPDATE river_queue SET updated_at = now() - interval '1 hour' WHERE name = 'email'`)
	require.NoError(t, err)
	_, body = admin.get("/admin/jobs")
	queue := sectionHTML(t, body, "jobs-queue-email")
	require.Contains(t, queue[:strings.Index(queue, "</tr>")], "Not seen lately")
}

// TestAdminJobsPages: keyset pages, newest first, and filters that refuse
// what is not a state.
func TestAdminJobsPages(t *testing.T) {
	t.Parallel()
	b := setup(t)
	admin, _ := b.signedUpAdmin(t, "jobs-pages-admin")
	var ids []int64
	for range 55 {
		id, _ := b.failingEmail(t, "page", &river.InsertOpts{ScheduledAt: time.Now().Add(time.Hour)})
		ids = append(ids, id)
	}
	_, body := admin.get("/admin/jobs?state=scheduled&kind=email")
	require.Contains(t, body, fmt.Sprintf(`data-testid="job-%d"`, ids[54]))
	require.NotContains(t, body, fmt.Sprintf(`data-testid="job-%d"`, ids[4]))
	older := linkOf(t, body, "jobs-older")
	require.Equal(t, fmt.Sprintf("/admin/jobs?before=%d&kind=email&state=scheduled", ids[5]), older)
	_, body = admin.get(older)
	for _, id := range ids[:5] {
		require.Contains(t, body, fmt.Sprintf(`data-testid="job-%d"`, id))
	}
	require.NotContains(t, body, fmt.Sprintf(`data-testid="job-%d"`, ids[5]))
	require.NotContains(t, body, `data-testid="jobs-older"`)
	count := sectionHTML(t, body, "jobs-count-email-scheduled")
	require.Contains(t, count[:strings.Index(count, "</td>")], ">55</a>")

	for _, path := range []string{"/admin/jobs?state=stuck", "/admin/jobs?before=x", "/admin/jobs?before=-1"} {
		code, _ := admin.get(path)
		require.Equal(t, http.StatusNotFound, code, path)
	}
	resp := admin.post("/admin/jobs", "/admin/jobs/999999999/retry", nil)
	require.Equal(t, http.StatusNotFound, resp.StatusCode)
	resp = admin.post("/admin/jobs", "/admin/jobs/nope/cancel", nil)
	require.Equal(t, http.StatusNotFound, resp.StatusCode)
}

// TestAdminJobsRefuseNonAdmins: every route is a 404 for a user and for
// a visitor, and changes nothing.
func TestAdminJobsRefuseNonAdmins(t *testing.T) {
	t.Parallel()
	b := setup(t)
	user, _ := b.signedUpUser(t, "jobs-user")
	id, _ := b.failingEmail(t, "later", &river.InsertOpts{ScheduledAt: time.Now().Add(time.Hour)})
	for _, who := range []struct {
		name     string
		c        *client
		formPage string // a page with a CSRF token
	}{{"user", user, "/"}, {"visitor", b.client(t), "/login"}} {
		for _, path := range []string{"/admin/jobs", "/admin/jobs?state=scheduled&kind=email"} {
			code, _ := who.c.get(path)
			require.Equal(t, http.StatusNotFound, code, who.name+" "+path)
		}
		for _, action := range []string{"retry", "cancel"} {
			resp := who.c.post(who.formPage, fmt.Sprintf("/admin/jobs/%d/%s", id, action), nil)
			require.Equal(t, http.StatusNotFound, resp.StatusCode, who.name+" "+action)
		}
	}
	require.Equal(t, rivertype.JobStateScheduled, b.jobRow(t, id).State)
	var n int
	require.NoError(t, b.pool.QueryRow(context.Background(), `SELECT count(*) FROM audit_events WHERE target_type = 'job'`).Scan(&n))
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

// sectionHTML is body from the element with testID to the next section's
// start (or the end).
func sectionHTML(t *testing.T, body, testID string) string {
	t.Helper()
	start := strings.Index(body, `data-testid="`+testID+`"`)
	require.GreaterOrEqual(t, start, 0, "no %s", testID)
	rest := body[start:]
	if end := strings.Index(rest[1:], "<section"); end >= 0 {
		return rest[:end+1]
	}
	return rest
}
