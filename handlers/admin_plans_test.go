package handlers_test

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/kubebyon/kubebyon/handlers/handlerstest"
)

// TestAdminPlans: an admin lists the plans, creates one (bad fields are
// said at the fields, with 422 and what was typed kept), edits it (a
// lowered limit is saved and the users it puts over are counted),
// archives it, brings it back and makes it the default; the default
// cannot be archived; a user gets 404 on every plan route.
func TestAdminPlans(t *testing.T) {
	t.Parallel()
	b := handlerstest.Setup(t)
	ctx := context.Background()
	admin, _ := b.SignedUpAdmin(t, "plans-admin")
	user, _ := b.SignedUpUser(t, "plans-user")

	code, body := admin.Get("/admin/plans")
	require.Equal(t, http.StatusOK, code)
	require.Contains(t, body, `data-testid="admin-nav-plans" aria-current="page"`)
	require.Contains(t, body, `data-plan="free"`)
	require.Contains(t, body, "3 clusters, 10 nodes per cluster, 10 host names per cluster")

	// Bad fields.
	bad := handlerstest.PlanForm(" ")
	bad.Set("max_nodes_per_cluster", "lots")
	bad.Set("price_monthly", "9.999")
	resp := admin.Post("/admin/plans", "/admin/plans", bad)
	require.Equal(t, http.StatusUnprocessableEntity, resp.StatusCode)
	body = handlerstest.ReadBody(t, resp)
	require.Contains(t, body, "The plan was not saved")
	require.Contains(t, body, `data-testid="error-name">Enter the plan&#39;s name.`)
	require.Contains(t, body, `data-testid="error-max_nodes_per_cluster">Enter a whole number from 0 to 100000.`)
	require.Contains(t, body, `data-testid="error-price_monthly">Enter an amount such as 99 or 99.90`)
	require.Contains(t, body, `value="lots"`, "what was typed is kept")

	// Created.
	resp = admin.Post("/admin/plans", "/admin/plans", handlerstest.PlanForm("Pro"))
	require.Equal(t, http.StatusSeeOther, resp.StatusCode, handlerstest.ReadBody(t, resp))
	page := resp.Header.Get("Location")
	require.True(t, strings.HasPrefix(page, "/admin/plans/"), page)
	var id int64
	require.NoError(t, b.Pool.QueryRow(ctx, `SELECT id FROM plans WHERE name = 'Pro'`).Scan(&id))
	require.Equal(t, fmt.Sprintf("/admin/plans/%d", id), page)
	code, body = admin.Get(page)
	require.Equal(t, http.StatusOK, code)
	require.Contains(t, body, "Plan created.")
	require.Contains(t, body, `value="990.50"`, "prices shown in the currency's units")
	require.Contains(t, body, `<option value="CNY" selected>`)
	require.Contains(t, body, `data-over="0"`)
	resp = admin.Post("/admin/plans", "/admin/plans", handlerstest.PlanForm("Pro"))
	require.Equal(t, http.StatusUnprocessableEntity, resp.StatusCode)
	require.Contains(t, handlerstest.ReadBody(t, resp), "Another plan has this name.")

	// A user of the plan with two clusters; the limit lowered to one.
	var uid int64
	require.NoError(t, b.Pool.QueryRow(ctx, `SELECT id FROM users WHERE email LIKE 'plans-user%'`).Scan(&uid))
	_, err := b.Pool.Exec(ctx, `UPDATE subscriptions SET plan_id = $1 WHERE org_id = (SELECT id FROM organizations WHERE personal_of = $2)`, id, uid)
	require.NoError(t, err)
	_, err = b.Pool.Exec(ctx, `INSERT INTO clusters (owner_id, name, slug, kubernetes_version, public_access_mode, status)
		SELECT $1::bigint, 'c' || i, 'plans-' || $1::bigint || '-' || i, 'v1.34.0', 'nodeport', 'ready' FROM generate_series(1, 2) i`, uid)
	require.NoError(t, err)
	lower := handlerstest.PlanForm("Pro")
	lower.Set("max_clusters", "1")
	resp = admin.Post(page, page, lower)
	require.Equal(t, http.StatusSeeOther, resp.StatusCode, handlerstest.ReadBody(t, resp))
	_, body = admin.Get(page)
	require.Contains(t, body, "Some organizations on it are over its new limits")
	require.Contains(t, body, `data-over="1"`)
	require.Contains(t, body, "1 of the organizations on this plan are over its limits")

	// Archived, back, default; the default cannot be archived.
	resp = admin.Post(page, page+"/archive", nil)
	require.Equal(t, http.StatusSeeOther, resp.StatusCode)
	_, body = admin.Get("/admin/plans")
	require.Contains(t, body, "archived")
	resp = admin.Post(page, page+"/unarchive", nil)
	require.Equal(t, http.StatusSeeOther, resp.StatusCode)
	resp = admin.Post(page, page+"/default", nil)
	require.Equal(t, http.StatusSeeOther, resp.StatusCode)
	_, body = admin.Get(page)
	require.Contains(t, body, "This plan is now the default.")
	require.Contains(t, body, "This is the default plan")
	resp = admin.Post(page, page+"/archive", nil)
	require.Equal(t, http.StatusSeeOther, resp.StatusCode)
	_, body = admin.Get(page)
	require.Contains(t, body, "The default plan cannot be archived")
	var defaults int
	require.NoError(t, b.Pool.QueryRow(ctx, `SELECT count(*) FROM plans WHERE is_default AND archived_at IS NULL`).Scan(&defaults))
	require.Equal(t, 1, defaults)

	// Not for users, and no such plan is 404.
	for _, r := range []struct{ method, path string }{
		{http.MethodGet, "/admin/plans"}, {http.MethodGet, page}, {http.MethodPost, "/admin/plans"},
		{http.MethodPost, page}, {http.MethodPost, page + "/archive"}, {http.MethodPost, page + "/default"},
	} {
		if r.method == http.MethodGet {
			code, _ := user.Get(r.path)
			require.Equal(t, http.StatusNotFound, code, r.path)
			continue
		}
		resp := user.Post("/", r.path, handlerstest.PlanForm("Sneaky"))
		require.Equal(t, http.StatusNotFound, resp.StatusCode, r.path)
	}
	code, _ = admin.Get("/admin/plans/999999")
	require.Equal(t, http.StatusNotFound, code)
	code, _ = admin.Get("/admin/plans/nope")
	require.Equal(t, http.StatusNotFound, code)
	var sneaky int
	require.NoError(t, b.Pool.QueryRow(ctx, `SELECT count(*) FROM plans WHERE name = 'Sneaky'`).Scan(&sneaky))
	require.Zero(t, sneaky)
}

// TestPlanBackends: an admin lets a plan's clusters run on both
// control-plane backends; its users then choose in the create form (the
// first is the default), a cluster made there keeps the one chosen, and a
// user whose plan names none gets the platform's default with no choice;
// a backend the plan does not allow is refused at its field.
func TestPlanBackends(t *testing.T) {
	t.Parallel()
	b := handlerstest.Setup(t)
	ctx := context.Background()
	b.ConnectHost(t)
	admin, _ := b.SignedUpAdmin(t, "backends-admin")
	chooser, chooserEmail := b.SignedUpUser(t, "backends-chooser")
	plain, _ := b.SignedUpUser(t, "backends-plain")

	form := handlerstest.PlanForm("Both")
	form.Set("backend_kamaji", "on")
	form.Set("backend_vcluster", "on")
	resp := admin.Post("/admin/plans", "/admin/plans", form)
	require.Equal(t, http.StatusSeeOther, resp.StatusCode, handlerstest.ReadBody(t, resp))
	page := resp.Header.Get("Location")
	_, body := admin.Get(page)
	require.Regexp(t, `name="backend_vcluster" type="checkbox" value="on" checked`, body)
	require.Regexp(t, `name="backend_kamaji" type="checkbox" value="on" checked`, body)
	var planID int64
	var backends []string
	require.NoError(t, b.Pool.QueryRow(ctx, `SELECT id, backends FROM plans WHERE name = 'Both'`).Scan(&planID, &backends))
	require.Equal(t, []string{"vcluster", "kamaji"}, backends, "in the platform's order")
	_, err := b.Pool.Exec(ctx, `UPDATE subscriptions SET plan_id = $1
		WHERE org_id = (SELECT o.id FROM organizations o JOIN users u ON u.id = o.personal_of WHERE u.email = $2)`, planID, chooserEmail)
	require.NoError(t, err)

	// The plan's user chooses.
	_, body = chooser.Get("/clusters/new")
	require.Contains(t, body, `<select id="backend" name="backend"`)
	require.Contains(t, body, "Kamaji (kubeadm nodes)")
	cl := b.NewClusterWith(t, chooser, url.Values{"name": {"on-kamaji"}, "backend": {"kamaji"}})
	require.Equal(t, "kamaji", cl.Backend)
	_, body = chooser.Get(fmt.Sprintf("/clusters/%d", cl.ID))
	require.Contains(t, body, `data-backend="kamaji">Kamaji (kubeadm nodes)<`, "the cluster page names its backend")
	cl = b.NewClusterWith(t, chooser, url.Values{"name": {"on-default"}})
	require.Equal(t, "vcluster", cl.Backend, "the plan's first")

	// The default plan names none: no choice, the platform's default, and
	// another backend asked for is refused.
	_, body = plain.Get("/clusters/new")
	require.NotContains(t, body, `name="backend"`)
	cl = b.NewClusterWith(t, plain, url.Values{"name": {"plain"}})
	require.Equal(t, "vcluster", cl.Backend)
	resp = plain.CreateCluster(url.Values{"name": {"sneaky"}, "kubernetes_version": {"v1.34.0"}, "public_access_mode": {"nodeport"}, "backend": {"kamaji"}})
	require.Equal(t, http.StatusUnprocessableEntity, resp.StatusCode)
	require.Contains(t, handlerstest.ReadBody(t, resp), "Your plan does not offer this control plane.")
}
