package handlers_test

import (
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/riverqueue/river"
	"github.com/stretchr/testify/require"

	"github.com/kubebyon/kubebyon/handlers/handlerstest"
)

// apiAdminJob is a job of the admin API, as far as the tests read it.
type apiAdminJob struct {
	ID          int64   `json:"id"`
	Kind        string  `json:"kind"`
	State       string  `json:"state"`
	FinalizedAt *string `json:"finalized_at"`
}

// TestAPIAdminJobs: an admin key lists the background jobs under a state
// and a kind, a page at a time and never with their arguments, and
// cancels and retries one as the back office does (audited as the
// admin's); an action the job's state refuses is 409, an unknown job 404,
// an unknown state 422.
func TestAPIAdminJobs(t *testing.T) {
	t.Parallel()
	b := handlerstest.Setup(t)
	admin, adminEmail := b.SignedUpAdmin(t, "api-jobs-admin")
	key := admin.CreateScopedKey("ops", "admin")
	later := &river.InsertOpts{ScheduledAt: time.Now().Add(time.Hour)}
	first, sealed := b.FailingEmail(t, "first", later)
	second, _ := b.FailingEmail(t, "second", later)
	third, _ := b.FailingEmail(t, "third", later)

	var ids []int64
	for _, j := range allPages[apiAdminJob](t, b, key, "/api/v1/admin/jobs?state=scheduled&kind=email&limit=1", "jobs", 1) {
		require.Equal(t, "email", j.Kind)
		require.Equal(t, "scheduled", j.State)
		ids = append(ids, j.ID)
	}
	r := b.APICall(t, http.MethodGet, "/api/v1/admin/jobs?state=scheduled&kind=email", key, "")
	require.NotContains(t, r.Body, sealed, "never a job's arguments")
	require.Equal(t, []int64{third, second, first}, ids, "newest first")
	r = b.APICall(t, http.MethodGet, "/api/v1/admin/jobs?kind=nothing-of-this-kind", key, "")
	require.Equal(t, http.StatusOK, r.Status)
	require.JSONEq(t, `{"jobs": []}`, r.Body)
	r = b.APICall(t, http.MethodGet, "/api/v1/admin/jobs?state=stuck", key, "")
	require.Equal(t, http.StatusUnprocessableEntity, r.Status, r.Body)
	require.Contains(t, handlerstest.DecodeAs[handlerstest.APIErrorJSON](t, r).Error.Fields, "state")

	// Cancel a job still to run: it never runs; a second cancel is 409.
	r = b.APICall(t, http.MethodPost, fmt.Sprintf("/api/v1/admin/jobs/%d/cancel", first), key, "")
	require.Equal(t, http.StatusOK, r.Status, r.Body)
	cancelled := handlerstest.DecodeAs[apiAdminJob](t, r)
	require.Equal(t, "cancelled", cancelled.State)
	require.NotNil(t, cancelled.FinalizedAt)
	require.Equal(t, "cancelled", string(b.JobRow(t, first).State))
	require.Equal(t, 1, b.JobAudited(t, "admin.job_cancel", first, "email"))
	require.Contains(t, b.Audits(t, b.UserID(t, adminEmail)), "admin.job_cancel")
	r = b.APICall(t, http.MethodPost, fmt.Sprintf("/api/v1/admin/jobs/%d/cancel", first), key, "")
	require.Equal(t, http.StatusConflict, r.Status, r.Body)
	require.Equal(t, 1, b.JobAudited(t, "admin.job_cancel", first, "email"))

	// Retry it: it is to run now, as the list and the back office show.
	r = b.APICall(t, http.MethodPost, fmt.Sprintf("/api/v1/admin/jobs/%d/retry", first), key, "")
	require.Equal(t, http.StatusOK, r.Status, r.Body)
	require.Equal(t, "available", handlerstest.DecodeAs[apiAdminJob](t, r).State)
	require.Equal(t, 1, b.JobAudited(t, "admin.job_retry", first, "email"))
	require.Contains(t, allPages[apiAdminJob](t, b, key, "/api/v1/admin/jobs?state=available&kind=email&limit=100", "jobs", 100),
		apiAdminJob{ID: first, Kind: "email", State: "available", FinalizedAt: nil})
	_, body := admin.Get("/admin/jobs?state=available&kind=email")
	require.Contains(t, jobRowHTML(t, body, first), fmt.Sprintf("job-cancel-%d", first))

	// A job still waiting needs no retry.
	r = b.APICall(t, http.MethodPost, fmt.Sprintf("/api/v1/admin/jobs/%d/retry", second), key, "")
	require.Equal(t, http.StatusConflict, r.Status, r.Body)
	require.Equal(t, "scheduled", string(b.JobRow(t, second).State))

	for _, action := range []string{"retry", "cancel"} {
		r := b.APICall(t, http.MethodPost, "/api/v1/admin/jobs/999999999/"+action, key, "")
		require.Equal(t, http.StatusNotFound, r.Status, action)
		require.Equal(t, "Job not found", handlerstest.DecodeAs[handlerstest.APIErrorJSON](t, r).Error.Message)
	}
}
