package handlers_test

import (
	"fmt"
	"net/http"
	"regexp"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/kubebyon/kubebyon/handlers/handlerstest"
	"github.com/kubebyon/kubebyon/queries"
)

var progressStep = regexp.MustCompile(`class="progress-step progress-step-[a-z]+" data-state="([a-z]+)"`)

// TestClusterProgress: a cluster being made shows its provisioning steps,
// from its events, on its page and in the live updates; a failed one shows
// the step it failed at; another user's cluster shows nothing.
func TestClusterProgress(t *testing.T) {
	t.Parallel()
	b := handlerstest.Setup(t)
	c, email := b.SignedUpUser(t, "progress")
	other, _ := b.SignedUpUser(t, "progress-other")
	cl := b.Cluster(t, b.InsertCluster(t, b.UserID(t, email), "being-made", "being-made-x1", "v1.34.0", "nodeport", "pending"))
	q := queries.New(b.Pool)
	ctx := t.Context()

	steps := func(page string) []string {
		var out []string
		for _, m := range progressStep.FindAllStringSubmatch(page, -1) {
			out = append(out, m[1])
		}
		return out
	}
	path := fmt.Sprintf("/clusters/%d", cl.ID)
	status, page := c.Get(path)
	require.Equal(t, http.StatusOK, status)
	require.Equal(t, []string{"done", "current", "todo", "todo"}, steps(page), "requested: the control plane's install is next")

	_, err := q.ClusterEventCreate(ctx, queries.ClusterEventCreateParams{ClusterID: cl.ID, Level: "info", Reason: "Installing", Message: "vcluster 0.30.0"})
	require.NoError(t, err)
	_, err = q.ClusterEventCreate(ctx, queries.ClusterEventCreateParams{ClusterID: cl.ID, Level: "info", Reason: "WaitingForControlPlane", Message: "not ready"})
	require.NoError(t, err)
	_, frag := c.HTMXGet(path + "/events?after=0")
	require.Equal(t, []string{"done", "done", "current", "todo"}, steps(frag), "installed: waiting for the control plane, in the live update")
	require.Contains(t, frag, `id="cluster-progress"`)

	require.NoError(t, q.ClusterMarkFailed(ctx, queries.ClusterMarkFailedParams{ID: cl.ID, StatusMessage: "the control plane did not become ready within 10m0s"}))
	_, page = c.Get(path)
	require.Equal(t, []string{"done", "done", "failed", "todo"}, steps(page), "failed while waiting for the control plane")

	status, page = other.Get(path)
	require.Equal(t, http.StatusNotFound, status)
	require.Empty(t, steps(page))
}
