package browsertest_test

import (
	"fmt"
	"testing"

	"github.com/chromedp/chromedp"
	"github.com/riverqueue/river"
	"github.com/riverqueue/river/rivertype"
	"github.com/stretchr/testify/require"

	"github.com/kubebyon/kubebyon/handlers/handlerstest"
	"github.com/kubebyon/kubebyon/internal/testenv"
)

// TestAdminJobsInBrowser: on a phone's screen, an admin goes to Jobs from
// the admin navigation, sees a discarded job's error, and retries it with
// its button; the page is no wider than the screen.
func TestAdminJobsInBrowser(t *testing.T) {
	t.Parallel()
	b := handlerstest.SetupWorking(t)
	_, email := b.SignedUpAdmin(t, "job-watcher")
	id, _ := b.FailingEmail(t, "nobody at all", &river.InsertOpts{MaxAttempts: 1})
	b.WaitJob(t, id, func(j *rivertype.JobRow) bool { return j.State == rivertype.JobStateDiscarded }, "the job is discarded")
	ctx := testenv.Browser(t)
	require.NoError(t, chromedp.Run(ctx, chromedp.EmulateViewport(390, 900)))
	browserSignIn(t, ctx, b.Server.URL, email, "password of job-watcher")

	var out []string
	var lastError, flash string
	require.NoError(t, chromedp.Run(ctx,
		chromedp.Navigate(b.Server.URL+"/admin/users"),
		// On a phone the navigation is a drawer, opened by the top bar\'s button.
		chromedp.Click(`[data-testid="nav-toggle"]`, chromedp.ByQuery),
		chromedp.Click(`[data-testid="admin-nav-jobs"]`, chromedp.ByQuery),
		chromedp.WaitVisible(`[data-testid="jobs-list"]`, chromedp.ByQuery),
		chromedp.Evaluate(overflowing, &out),
		chromedp.Text(fmt.Sprintf(`[data-testid="job-%d"] [data-testid="job-error"] code`, id), &lastError, chromedp.ByQuery),
		chromedp.Click(fmt.Sprintf(`[data-testid="job-retry-%d"]`, id), chromedp.ByQuery),
		chromedp.WaitVisible(`[data-testid="flash"]`, chromedp.ByQuery),
		chromedp.Text(`[data-testid="flash"]`, &flash, chromedp.ByQuery),
	))
	require.Empty(t, out, "the jobs page at 390px")
	require.Contains(t, lastError, `mail to "nobody at all"`)
	require.Contains(t, flash, "The job is queued to run again now.")
	b.WaitJob(t, id, func(j *rivertype.JobRow) bool { return j.Attempt == 2 }, "the retried job runs again")
}
