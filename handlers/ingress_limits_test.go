package handlers_test

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/kubebyon/kubebyon/handlers/handlerstest"
)

// TestIngressPlanLimits: a plan without managed ingress refuses to
// switch it on (console and API) with a message naming the plan and the
// way up; a plan's host name limit refuses one more name per cluster
// (console and API); a plan lowered under what is bound deletes nothing.
func TestIngressPlanLimits(t *testing.T) {
	t.Parallel()
	b := handlerstest.Setup(t)
	ctx := context.Background()
	c, email := b.SignedUpUser(t, "ingress-limits")
	cl, _ := b.ReadyVirtualCluster(t, c, "limited")
	b.SetIngressSettings(t)
	var plan int64
	require.NoError(t, b.Pool.QueryRow(ctx, `INSERT INTO plans (name, max_clusters, max_nodes_per_cluster, max_hostnames_per_cluster, ingress_allowed)
		VALUES ('basic', 3, 3, 1, false) RETURNING id`).Scan(&plan))
	_, err := b.Pool.Exec(ctx, `UPDATE subscriptions SET plan_id = $1 WHERE org_id = (SELECT id FROM organizations WHERE personal_of = $2)`, plan, b.UserID(t, email))
	require.NoError(t, err)
	page := fmt.Sprintf("/clusters/%d", cl.ID)
	key := c.CreateKey("limits")

	resp := c.Post(page, page+"/ingress", url.Values{"enabled": {"on"}})
	require.Equal(t, http.StatusSeeOther, resp.StatusCode)
	_, body := c.Get(page)
	require.Contains(t, body, "Your plan (basic) does not include managed ingress.")
	r := b.APICall(t, http.MethodPatch, "/api/v1/clusters/"+fmt.Sprint(cl.ID), key, `{"managed_ingress":true}`)
	require.Equal(t, http.StatusUnprocessableEntity, r.Status, r.Body)
	require.Contains(t, r.Body, `"code":"plan_limit"`)
	var rows int
	require.NoError(t, b.Pool.QueryRow(ctx, `SELECT count(*) FROM cluster_ingress WHERE cluster_id = $1`, cl.ID).Scan(&rows))
	require.Zero(t, rows, "nothing written")

	_, err = b.Pool.Exec(ctx, `UPDATE plans SET ingress_allowed = true WHERE id = $1`, plan)
	require.NoError(t, err)
	resp = c.Post(page, page+"/ingress", url.Values{"enabled": {"on"}})
	require.Equal(t, http.StatusSeeOther, resp.StatusCode)
	r = b.APICall(t, http.MethodPost, fmt.Sprintf("/api/v1/clusters/%d/hostnames", cl.ID), key, `{"name":"one.example.com"}`)
	require.Equal(t, http.StatusCreated, r.Status, r.Body)
	r = b.APICall(t, http.MethodPost, fmt.Sprintf("/api/v1/clusters/%d/hostnames", cl.ID), key, `{"name":"two.example.com"}`)
	require.Equal(t, http.StatusUnprocessableEntity, r.Status, r.Body)
	require.Contains(t, r.Body, `"code":"plan_limit"`)
	require.Contains(t, r.Body, "allows 1 host names per cluster")
	resp = c.Post(page, page+"/ingress/hostnames", url.Values{"name": {"two.example.com"}})
	require.Equal(t, http.StatusSeeOther, resp.StatusCode)
	_, body = c.Get(page)
	require.Contains(t, body, "Your plan (basic) allows 1 host names per cluster")

	// The plan loses ingress: what is on stays on, and its name stays.
	_, err = b.Pool.Exec(ctx, `UPDATE plans SET ingress_allowed = false WHERE id = $1`, plan)
	require.NoError(t, err)
	r = b.APICall(t, http.MethodPatch, "/api/v1/clusters/"+fmt.Sprint(cl.ID), key, `{"managed_ingress":true}`)
	require.Equal(t, http.StatusOK, r.Status, r.Body)
	require.NoError(t, b.Pool.QueryRow(ctx, `SELECT count(*) FROM cluster_hostnames WHERE cluster_id = $1 AND deleted_at IS NULL`, cl.ID).Scan(&rows))
	require.Equal(t, 1, rows)
}
