package handlers_test

import (
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/kubebyon/kubebyon/handlers/handlerstest"
)

// apiCallWith is b.APICall with more request headers.
func apiCallWith(t *testing.T, b *handlerstest.Bundle, method, path, key, body string, header http.Header) handlerstest.APIResponse {
	t.Helper()
	req, err := http.NewRequest(method, b.Server.URL+path, strings.NewReader(body))
	require.NoError(t, err)
	req.Header.Set("Authorization", "Bearer "+key)
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	for k, vs := range header {
		req.Header[k] = vs
	}
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	return handlerstest.APIResponse{Status: resp.StatusCode, Header: resp.Header, Body: handlerstest.ReadBody(t, resp)}
}

// apiOwner is where the API's cluster tests start: a user with a write
// key, and a cluster of theirs (written as the reconcile worker would
// have left it) with its API path.
type apiOwner struct {
	c     *handlerstest.Client
	email string
	key   string
	id    int64
	path  string
}

func newAPIOwner(t *testing.T, b *handlerstest.Bundle, name, status string) apiOwner {
	t.Helper()
	c, email := b.SignedUpUser(t, name)
	o := apiOwner{c: c, email: email, key: c.CreateKey("pipeline")}
	o.id = b.InsertCluster(t, b.UserID(t, email), name, name+"-abc123", "v1.34.0", "nodeport", status)
	o.path = fmt.Sprintf("/api/v1/clusters/%d", o.id)
	return o
}

// clusterSettingsJSON is what a PATCH changes of a cluster, as the API
// answers it.
type clusterSettingsJSON struct {
	Description           string `json:"description"`
	KubernetesVersion     string `json:"kubernetes_version"`
	StaleNodeCleanupHours *int32 `json:"stale_node_cleanup_hours"`
	ManagedIngress        struct {
		Enabled bool `json:"enabled"`
	} `json:"managed_ingress"`
}

// TestAPIClusterETag: GET and PATCH answer the cluster's ETag; a PATCH
// with If-Match made over another state is 412 precondition_failed and
// changes nothing: of two clients that read the same ETag the first
// wins, and a console edit in between (the cluster's settings, its
// managed ingress, its stale-node clean-up) makes the ETag read before
// it fail too. What the platform's jobs write does not. If-Match: * and
// no If-Match change whatever the state.
func TestAPIClusterETag(t *testing.T) {
	t.Parallel()
	b := handlerstest.Setup(t)
	o := newAPIOwner(t, b, "etags", "pending")
	c, email, key, id, path := o.c, o.email, o.key, o.id, o.path
	page := fmt.Sprintf("/clusters/%d", id)
	read := func() (clusterSettingsJSON, string) {
		t.Helper()
		r := b.APICall(t, http.MethodGet, path, key, "")
		require.Equal(t, http.StatusOK, r.Status, r.Body)
		return handlerstest.DecodeAs[clusterSettingsJSON](t, r), r.Header.Get("ETag")
	}
	patch := func(ifMatch, body string) handlerstest.APIResponse {
		t.Helper()
		h := http.Header{}
		if ifMatch != "" {
			h.Set("If-Match", ifMatch)
		}
		return apiCallWith(t, b, http.MethodPatch, path, key, body, h)
	}
	refused := func(r handlerstest.APIResponse) {
		t.Helper()
		require.Equal(t, http.StatusPreconditionFailed, r.Status, r.Body)
		e := handlerstest.DecodeAs[handlerstest.APIErrorJSON](t, r)
		require.Equal(t, "precondition_failed", e.Error.Code)
		require.Contains(t, e.Error.Message, "The cluster changed since you read it")
	}

	first, tag := read()
	require.Regexp(t, `^"[0-9a-f]{32}"$`, tag, "a strong ETag")
	require.Equal(t, int32(0), *first.StaleNodeCleanupHours, "no clean-up")
	_, again := read()
	require.Equal(t, tag, again, "nothing changed, the same ETag")

	// Two clients read the same ETag: the first PATCH wins, the second is
	// refused and changes nothing, the cluster keeping the first's change.
	r := patch(tag, `{"description":"first"}`)
	require.Equal(t, http.StatusOK, r.Status, r.Body)
	won := r.Header.Get("ETag")
	require.NotEqual(t, tag, won)
	require.Equal(t, "first", handlerstest.DecodeAs[clusterSettingsJSON](t, r).Description)
	audits := len(b.Audits(t, b.UserID(t, email)))
	refused(patch(tag, `{"description":"second","stale_node_cleanup_hours":5,"managed_ingress_mode":"direct"}`))
	now, current := read()
	require.Equal(t, "first", now.Description)
	require.Equal(t, int32(0), *now.StaleNodeCleanupHours)
	require.Equal(t, won, current, "the PATCH's answer carries the ETag a GET gives")
	require.Len(t, b.Audits(t, b.UserID(t, email)), audits, "the refused PATCH recorded nothing")
	require.False(t, b.Cluster(t, id).StaleNodeCleanupHours.Valid)

	// A weak tag never matches (strong comparison); one of several does;
	// * matches any state, as does no If-Match at all.
	refused(patch("W/"+current, `{"description":"weak"}`))
	r = patch(`"0123", `+current, `{"description":"listed"}`)
	require.Equal(t, http.StatusOK, r.Status, r.Body)
	r = patch("*", `{"description":"any"}`)
	require.Equal(t, http.StatusOK, r.Status, r.Body)
	r = patch("", `{"description":"unconditional"}`)
	require.Equal(t, http.StatusOK, r.Status, r.Body)

	// A console edit between the read and the PATCH: the ETag read before
	// it fails.
	_, tag = read()
	resp := c.Post(page, page+"/edit", url.Values{"kubernetes_version": {"v1.34.0"}, "public_access_mode": {"nodeport"}, "description": {"from the console"}})
	require.Equal(t, http.StatusSeeOther, resp.StatusCode, handlerstest.ReadBody(t, resp))
	refused(patch(tag, `{"description":"from the API"}`))
	now, tag = read()
	require.Equal(t, "from the console", now.Description)
	// So does the console's managed ingress switch,
	b.SetIngressSettings(t)
	resp = c.Post(page, page+"/ingress", url.Values{"enabled": {"on"}})
	require.Equal(t, http.StatusSeeOther, resp.StatusCode)
	refused(patch(tag, `{"managed_ingress":false}`))
	now, tag = read()
	require.True(t, now.ManagedIngress.Enabled, "the console's switch stands")
	// and its stale-node clean-up.
	resp = c.Post(page, page+"/stale-node-cleanup", url.Values{"hours": {"12"}})
	require.Equal(t, http.StatusSeeOther, resp.StatusCode)
	refused(patch(tag, `{"stale_node_cleanup_hours":0}`))
	now, tag = read()
	require.Equal(t, int32(12), *now.StaleNodeCleanupHours)

	// The platform's progress is not what a PATCH changes: the ETag holds.
	b.Event(t, id, "info", "Provisioning", "")
	_, err := b.Pool.Exec(t.Context(), `UPDATE clusters SET status = 'provisioning', status_message = 'installing', updated_at = now() WHERE id = $1`, id)
	require.NoError(t, err)
	_, err = b.Pool.Exec(t.Context(), `UPDATE cluster_ingress SET status = 'ready', message = 'up', updated_at = now() WHERE cluster_id = $1`, id)
	require.NoError(t, err)
	_, same := read()
	require.Equal(t, tag, same)

	// Two PATCHes at once with the same ETag: one wins, the other is 412.
	var wg sync.WaitGroup
	codes := make([]int, 2)
	for i := range codes {
		wg.Go(func() { codes[i] = patch(tag, fmt.Sprintf(`{"description":"racer %d"}`, i)).Status })
	}
	wg.Wait()
	require.ElementsMatch(t, []int{http.StatusOK, http.StatusPreconditionFailed}, codes)
}

// TestAPIClusterPatchIsOneChange: a PATCH changes all its fields or none,
// the stale-node clean-up among them, each audited as the console's.
func TestAPIClusterPatchIsOneChange(t *testing.T) {
	t.Parallel()
	b := handlerstest.Setup(t)
	o := newAPIOwner(t, b, "oneshot", "ready")
	c, email, key, id, path := o.c, o.email, o.key, o.id, o.path

	r := b.APICall(t, http.MethodPatch, path, key, `{"stale_node_cleanup_hours":7,"kubernetes_version":"v0.0.1"}`)
	require.Equal(t, http.StatusUnprocessableEntity, r.Status, r.Body)
	require.Contains(t, handlerstest.DecodeAs[handlerstest.APIErrorJSON](t, r).Error.Fields, "kubernetes_version")
	require.False(t, b.Cluster(t, id).StaleNodeCleanupHours.Valid, "the clean-up did not change either")

	for _, hours := range []string{"-1", "8761"} {
		r = b.APICall(t, http.MethodPatch, path, key, `{"stale_node_cleanup_hours":`+hours+`}`)
		require.Equal(t, http.StatusUnprocessableEntity, r.Status, r.Body)
		require.Equal(t, map[string]string{"stale_node_cleanup_hours": "Give a number of hours from 1 to 8760, or 0 to turn the clean-up off."},
			handlerstest.DecodeAs[handlerstest.APIErrorJSON](t, r).Error.Fields)
	}

	r = b.APICall(t, http.MethodPatch, path, key, `{"stale_node_cleanup_hours":24,"description":"nightly"}`)
	require.Equal(t, http.StatusOK, r.Status, r.Body)
	got := handlerstest.DecodeAs[clusterSettingsJSON](t, r)
	require.Equal(t, int32(24), *got.StaleNodeCleanupHours)
	require.Equal(t, "nightly", got.Description)
	require.Equal(t, int32(24), b.Cluster(t, id).StaleNodeCleanupHours.Int32)
	_, body := c.Get(fmt.Sprintf("/clusters/%d", id))
	require.Contains(t, body, "nightly", "the console shows the API's change")

	r = b.APICall(t, http.MethodPatch, path, key, `{"stale_node_cleanup_hours":0}`)
	require.Equal(t, http.StatusOK, r.Status, r.Body)
	require.Equal(t, int32(0), *handlerstest.DecodeAs[clusterSettingsJSON](t, r).StaleNodeCleanupHours)
	require.False(t, b.Cluster(t, id).StaleNodeCleanupHours.Valid)
	var actions []string
	for _, a := range b.Audits(t, b.UserID(t, email)) {
		if strings.HasPrefix(a, "cluster.") {
			actions = append(actions, a)
		}
	}
	require.Equal(t, []string{"cluster.stale_node_cleanup", "cluster.update", "cluster.stale_node_cleanup"},
		actions, "audited as the user, as the console's actions are")
}
