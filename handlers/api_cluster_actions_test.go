package handlers_test

import (
	"context"
	"net/http"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/kubebyon/kubebyon/handlers/handlerstest"
	"github.com/kubebyon/kubebyon/internal/ingress"
	"github.com/kubebyon/kubebyon/queries"
)

type apiEventJSON struct {
	ID         int64   `json:"id"`
	Level      string  `json:"level"`
	Reason     string  `json:"reason"`
	Text       string  `json:"text"`
	Message    string  `json:"message"`
	Count      int     `json:"count"`
	LastSeenAt *string `json:"last_seen_at"`
}

type apiEventPage struct {
	Events []apiEventJSON `json:"events"`
	Next   string         `json:"next"`
}

// TestAPIClusterRetryAndEvents: a failed cluster is retried (202 with
// its Location; 409 once it has not failed), audited as the console's
// retry; its timeline reads newest first, a page at a time, each event's
// reason with its text in the key owner's language and its repeats.
func TestAPIClusterRetryAndEvents(t *testing.T) {
	t.Parallel()
	b := handlerstest.Setup(t)
	o := newAPIOwner(t, b, "retrier", "failed")
	email, key, id, base := o.email, o.key, o.id, o.path
	b.Event(t, id, "info", "Created", "")
	b.Event(t, id, "error", "Failed", "the chart would not install")
	b.Event(t, id, "error", "Failed", "the chart would not install")
	// Counted on the row, as the reconcile worker's repeats are.
	_, err := b.Pool.Exec(context.Background(), `UPDATE cluster_events SET count = 3, last_seen_at = now() WHERE cluster_id = $1 AND reason = 'Failed' AND id = (SELECT max(id) FROM cluster_events WHERE cluster_id = $1)`, id)
	require.NoError(t, err)

	r := b.APICall(t, http.MethodPost, base+"/retry", key, "")
	require.Equal(t, http.StatusAccepted, r.Status, r.Body)
	require.Equal(t, base, r.Header.Get("Location"))
	require.Equal(t, "pending", handlerstest.DecodeAs[apiClusterJSON](t, r).Status)
	require.Equal(t, 1, b.ReconcileJobs(t, id))
	require.Contains(t, b.Audits(t, b.UserID(t, email)), "cluster.retry")
	r = b.APICall(t, http.MethodPost, base+"/retry", key, "")
	require.Equal(t, http.StatusConflict, r.Status, r.Body)
	require.Equal(t, "Only a failed cluster can be retried.", handlerstest.DecodeAs[handlerstest.APIErrorJSON](t, r).Error.Message)

	r = b.APICall(t, http.MethodGet, base+"/events?limit=2", key, "")
	require.Equal(t, http.StatusOK, r.Status, r.Body)
	page := handlerstest.DecodeAs[apiEventPage](t, r)
	require.Len(t, page.Events, 2)
	require.Equal(t, "RetryRequested", page.Events[0].Reason, "newest first")
	require.Equal(t, "Retry requested.", page.Events[0].Text)
	require.Nil(t, page.Events[0].LastSeenAt)
	require.Equal(t, apiEventJSON{ID: page.Events[1].ID, Level: "error", Reason: "Failed", Text: page.Events[1].Text, Message: "the chart would not install",
		Count: 3, LastSeenAt: page.Events[1].LastSeenAt}, page.Events[1])
	require.NotNil(t, page.Events[1].LastSeenAt)
	require.NotEmpty(t, page.Next)
	r = b.APICall(t, http.MethodGet, base+"/events?limit=2&cursor="+page.Next, key, "")
	require.Equal(t, http.StatusOK, r.Status, r.Body)
	rest := handlerstest.DecodeAs[apiEventPage](t, r)
	require.Len(t, rest.Events, 2)
	require.Equal(t, []string{"Failed", "Created"}, []string{rest.Events[0].Reason, rest.Events[1].Reason})
	require.Empty(t, rest.Next, "the last page")
	r = b.APICall(t, http.MethodGet, base+"/events?cursor=yesterday", key, "")
	require.Equal(t, http.StatusBadRequest, r.Status, r.Body)

	// In Chinese, for a Chinese reader.
	r = apiCallWith(t, b, http.MethodGet, base+"/events?limit=1", key, "", http.Header{"Accept-Language": {"zh-CN"}})
	require.Equal(t, http.StatusOK, r.Status, r.Body)
	zh := handlerstest.DecodeAs[apiEventPage](t, r).Events[0]
	require.Equal(t, "RetryRequested", zh.Reason)
	require.NotEqual(t, "Retry requested.", zh.Text)
}

// TestAPIIngressRetries: a failed managed ingress install is retried
// (202, installing; 409 once it has not failed); routes through the edge
// that could not be written are tried again at once and the answer says
// how they stand (still error here: no host cluster), recorded in the
// timeline and audited; 409 when they had not failed.
func TestAPIIngressRetries(t *testing.T) {
	t.Parallel()
	b := handlerstest.Setup(t)
	ctx := context.Background()
	q := queries.New(b.Pool)
	o := newAPIOwner(t, b, "ingressretry", "ready")
	key, id, base := o.key, o.id, o.path
	b.SetIngressSettings(t)
	st, err := ingress.LoadSettings(ctx, q)
	require.NoError(t, err)
	st.GatewayClass = "eg"
	require.NoError(t, ingress.SaveSettings(ctx, q, st))

	r := b.APICall(t, http.MethodPost, base+"/ingress/retry", key, "")
	require.Equal(t, http.StatusConflict, r.Status, "never switched on: %s", r.Body)
	r = b.APICall(t, http.MethodPatch, base, key, `{"managed_ingress":true}`)
	require.Equal(t, http.StatusOK, r.Status, r.Body)
	_, err = b.Pool.Exec(ctx, `UPDATE cluster_ingress SET status = 'error', message = 'the chart is gone' WHERE cluster_id = $1`, id)
	require.NoError(t, err)
	r = b.APICall(t, http.MethodPost, base+"/ingress/retry", key, "")
	require.Equal(t, http.StatusAccepted, r.Status, r.Body)
	require.Equal(t, base, r.Header.Get("Location"))
	require.Contains(t, r.Body, `"managed_ingress":{"enabled":true,"status":"installing"`)
	row, err := q.IngressGet(ctx, id)
	require.NoError(t, err)
	require.EqualValues(t, 2, row.Generation, "a new attempt")
	require.Equal(t, 1, b.AuditCount(t, "cluster.managed_ingress_retry"))
	r = b.APICall(t, http.MethodPost, base+"/ingress/retry", key, "")
	require.Equal(t, http.StatusConflict, r.Status, r.Body)
	require.Equal(t, "Only a managed ingress that failed can be retried.", handlerstest.DecodeAs[handlerstest.APIErrorJSON](t, r).Error.Message)

	// Through the platform edge: routes not written are tried again now.
	r = b.APICall(t, http.MethodPost, base+"/ingress/edge/retry", key, "")
	require.Equal(t, http.StatusConflict, r.Status, "direct: no routes to retry: %s", r.Body)
	r = b.APICall(t, http.MethodPatch, base, key, `{"managed_ingress_mode":"edge"}`)
	require.Equal(t, http.StatusOK, r.Status, r.Body)
	_, err = b.Pool.Exec(ctx, `UPDATE cluster_ingress SET edge_state = 'error', edge_message = 'an old error' WHERE cluster_id = $1`, id)
	require.NoError(t, err)
	r = b.APICall(t, http.MethodPost, base+"/ingress/edge/retry", key, "")
	require.Equal(t, http.StatusOK, r.Status, r.Body)
	edge := handlerstest.DecodeAs[struct {
		ManagedIngress struct {
			Edge struct {
				State   string `json:"state"`
				Message string `json:"message"`
			} `json:"edge"`
		} `json:"managed_ingress"`
	}](t, r).ManagedIngress.Edge
	require.Equal(t, "error", edge.State, "no host cluster to write them to")
	require.NotEqual(t, "an old error", edge.Message, "the check ran again")
	require.Equal(t, 1, b.AuditCount(t, "cluster.managed_ingress_edge_retry"))
	r = b.APICall(t, http.MethodGet, base+"/events?limit=1", key, "")
	require.Equal(t, "IngressEdgeRetried", handlerstest.DecodeAs[apiEventPage](t, r).Events[0].Reason)
}

// TestAPIHostnameListAndCheck: the host names bound to a cluster read by
// name, a page at a time; Check now checks them at once (204), as the
// console's does.
func TestAPIHostnameListAndCheck(t *testing.T) {
	t.Parallel()
	b := handlerstest.Setup(t)
	ctx := context.Background()
	o := newAPIOwner(t, b, "hostlist", "ready")
	key, id, base := o.key, o.id, o.path
	b.SetIngressSettings(t)

	r := b.APICall(t, http.MethodGet, base+"/hostnames", key, "")
	require.Equal(t, http.StatusOK, r.Status, r.Body)
	require.JSONEq(t, `{"hostnames":[]}`, r.Body)
	r = b.APICall(t, http.MethodPatch, base, key, `{"managed_ingress":true}`)
	require.Equal(t, http.StatusOK, r.Status, r.Body)
	for _, name := range []string{"www.example.org", "api.example.org", "shop.apps.test"} {
		r = b.APICall(t, http.MethodPost, base+"/hostnames", key, `{"name":"`+name+`"}`)
		require.Equal(t, http.StatusCreated, r.Status, r.Body)
	}
	type hostnamePage struct {
		Hostnames []struct {
			Name    string `json:"name"`
			Managed bool   `json:"managed"`
			State   string `json:"state"`
		} `json:"hostnames"`
		Next string `json:"next"`
	}
	r = b.APICall(t, http.MethodGet, base+"/hostnames?limit=2", key, "")
	require.Equal(t, http.StatusOK, r.Status, r.Body)
	page := handlerstest.DecodeAs[hostnamePage](t, r)
	require.Len(t, page.Hostnames, 2)
	require.Equal(t, "api.example.org", page.Hostnames[0].Name, "by name")
	require.Equal(t, "shop.apps.test", page.Hostnames[1].Name)
	require.True(t, page.Hostnames[1].Managed)
	require.Equal(t, "pending", page.Hostnames[0].State)
	require.NotEmpty(t, page.Next)
	r = b.APICall(t, http.MethodGet, base+"/hostnames?limit=2&cursor="+page.Next, key, "")
	page = handlerstest.DecodeAs[hostnamePage](t, r)
	require.Len(t, page.Hostnames, 1)
	require.Equal(t, "www.example.org", page.Hostnames[0].Name)
	require.Empty(t, page.Next)
	r = b.APICall(t, http.MethodGet, base+"/hostnames?cursor=Not%20a%20name", key, "")
	require.Equal(t, http.StatusBadRequest, r.Status, r.Body)

	r = b.APICall(t, http.MethodPost, base+"/hostnames/check", key, "")
	require.Equal(t, http.StatusNoContent, r.Status, r.Body)
	var unchecked int
	require.NoError(t, b.Pool.QueryRow(ctx, `SELECT count(*) FROM cluster_hostnames WHERE cluster_id = $1 AND checked_at IS NULL`, id).Scan(&unchecked))
	require.Zero(t, unchecked, "every name was checked")
}
