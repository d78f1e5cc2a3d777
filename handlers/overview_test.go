package handlers_test

import (
	"fmt"
	"net/http"
	"net/url"
	"regexp"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"

	"github.com/kubebyon/kubebyon/handlers/handlerstest"
	"github.com/kubebyon/kubebyon/internal/testenv"
)

// checklistDone is how many steps of the checklist testID the page shows
// done, and of how many; -1, -1 when it shows no checklist.
func checklistDone(t *testing.T, body, testID string) (int, int) {
	t.Helper()
	m := regexp.MustCompile(`data-testid="` + testID + `" data-done="(\d+)" data-total="(\d+)"`).FindStringSubmatch(body)
	if m == nil {
		return -1, -1
	}
	done, err := strconv.Atoi(m[1])
	require.NoError(t, err)
	total, err := strconv.Atoi(m[2])
	require.NoError(t, err)
	return done, total
}

// requireStep checks whether the page shows the checklist step testID
// done.
func requireStep(t *testing.T, body, testID string, done bool) {
	t.Helper()
	require.Regexp(t, `data-testid="`+testID+`" data-done="`+strconv.FormatBool(done)+`"`, body)
}

// TestOverviewChecklistFromRealState: the user's overview ticks the
// first-run checklist off from what the platform records (a cluster, a
// join token, a node the health check saw, a kubeconfig download) and
// hides it once all is done; its figures and lists follow the same state,
// and another user sees none of it.
func TestOverviewChecklistFromRealState(t *testing.T) {
	t.Parallel()
	b := handlerstest.SetupWorking(t)
	c, _ := b.SignedUpUser(t, "starter")
	other, _ := b.SignedUpUser(t, "neighbour")

	code, body := c.Get("/")
	require.Equal(t, http.StatusOK, code, body)
	require.Contains(t, body, `data-testid="page-title">Overview<`)
	require.Contains(t, body, `data-testid="dashboard-greeting">Welcome, starter<`)
	require.Contains(t, body, `data-testid="dashboard-create-cluster"`)
	require.Contains(t, body, `data-testid="dashboard-clusters"`)
	require.NotContains(t, body, `data-testid="dashboard-all-clusters"`, "no clusters to list")
	done, total := checklistDone(t, body, "overview-checklist")
	require.Equal(t, []int{0, 4}, []int{done, total})
	requireStep(t, body, "checklist-cluster", false)
	require.Contains(t, body, `href="/clusters/new"`)
	require.Regexp(t, `data-testid="overview-stat-clusters-value"><a href="/clusters">0</a>`, body)

	cl, virt := b.ReadyVirtualCluster(t, c, "first-steps")
	_, body = c.Get("/")
	done, _ = checklistDone(t, body, "overview-checklist")
	require.Equal(t, 1, done, "a cluster")
	requireStep(t, body, "checklist-cluster", true)
	requireStep(t, body, "checklist-token", false)
	tokens := fmt.Sprintf("/clusters/%d/tokens", cl.ID)
	require.Contains(t, body, `href="`+tokens+`"`, "the next step leads to the cluster's tokens")
	require.Regexp(t, `data-testid="overview-stat-clusters-value"><a href="/clusters">1</a>`, body)
	require.Contains(t, body, `data-testid="dashboard-all-clusters">All clusters (1)<`)
	require.Regexp(t, `data-testid="overview-cluster" data-cluster-id="`+strconv.FormatInt(cl.ID, 10)+`"><a href="/clusters/\d+">first-steps</a>`, body)
	require.Contains(t, body, `data-testid="overview-event"`, "its events")

	handlerstest.CreateJoinToken(t, c, cl, url.Values{"description": {"first"}, "lifetime": {"24h"}, "uses": {"unlimited"}})
	_, body = c.Get("/")
	done, _ = checklistDone(t, body, "overview-checklist")
	require.Equal(t, 2, done, "a join token")
	requireStep(t, body, "checklist-token", true)
	requireStep(t, body, "checklist-node", false)

	handlerstest.AddNode(t, virt.Client(t), "worker-1", corev1.ConditionTrue, time.Now().Add(-time.Minute))
	b.RunNodeHealth(t, cl.ID)
	_, body = c.Get("/")
	done, _ = checklistDone(t, body, "overview-checklist")
	require.Equal(t, 3, done, "a node")
	requireStep(t, body, "checklist-node", true)
	requireStep(t, body, "checklist-kubeconfig", false)
	require.Contains(t, body, `data-testid="overview-stat-nodes-value">1<`)
	require.Contains(t, body, "1 / 1 nodes ready")

	resp, err := c.HTTP.Get(b.Server.URL + fmt.Sprintf("/clusters/%d/kubeconfig", cl.ID))
	require.NoError(t, err)
	kubeconfig := handlerstest.ReadBody(t, resp)
	require.Equal(t, http.StatusOK, resp.StatusCode, kubeconfig)
	_, body = c.Get("/")
	done, total = checklistDone(t, body, "overview-checklist")
	require.Equal(t, []int{-1, -1}, []int{done, total}, "all done: the checklist is gone")
	require.Contains(t, body, `data-testid="dashboard-clusters"`)

	// The neighbour sees none of it: no cluster, no event, nothing done.
	_, body = other.Get("/")
	done, _ = checklistDone(t, body, "overview-checklist")
	require.Equal(t, 0, done)
	require.NotContains(t, body, "first-steps")
	require.NotContains(t, body, `data-testid="overview-event"`)
	require.Regexp(t, `data-testid="overview-stat-clusters-value"><a href="/clusters">0</a>`, body)
	require.Contains(t, body, `data-testid="overview-stat-nodes-value">0<`)
}

// TestOverviewChecklistInChinese: the overview is translated.
func TestOverviewChecklistInChinese(t *testing.T) {
	t.Parallel()
	b := handlerstest.Setup(t)
	c, _ := b.SignedUpUser(t, "zh")
	req, err := http.NewRequest(http.MethodGet, b.Server.URL+"/", nil)
	require.NoError(t, err)
	req.Header.Set("Accept-Language", "zh-CN")
	resp, err := c.HTTP.Do(req)
	require.NoError(t, err)
	body := handlerstest.ReadBody(t, resp)
	require.Equal(t, http.StatusOK, resp.StatusCode)
	require.Contains(t, body, "开始使用")
	require.Contains(t, body, "已完成 0 / 4")
}

// TestAdminOverviewChecklist: GET /admin is the platform at a glance; on
// a fresh platform the operator's checklist has nothing done; saving a
// host kubeconfig ticks its step, a test email that went out the mail
// step. Users get the same refusal as on the
// other admin pages.
func TestAdminOverviewChecklist(t *testing.T) {
	t.Parallel()
	b := handlerstest.Setup(t)
	admin, _ := b.SignedUpAdmin(t, "operator")
	user, _ := b.SignedUpUser(t, "tenant")

	code, body := admin.Get("/admin")
	require.Equal(t, http.StatusOK, code, body)
	require.Contains(t, body, `data-testid="page-title">Platform overview<`)
	done, total := checklistDone(t, body, "admin-checklist")
	require.Equal(t, []int{0, 6}, []int{done, total}, "a fresh platform")
	for _, step := range []string{"checklist-host", "checklist-base-url", "checklist-edge", "checklist-dns", "checklist-mail", "checklist-platform"} {
		requireStep(t, body, step, false)
	}
	require.Contains(t, body, `data-testid="admin-stat-users-value"><a href="/admin/users">2</a>`)
	require.Contains(t, body, `data-testid="admin-stat-edges-value"><a href="/admin/edge">0</a>`)

	form := handlerstest.FormWith(handlerstest.FullSettings(t), "password", "password of operator")
	resp, body := admin.PostSettings(handlerstest.SettingsPage, form, handlerstest.KubeconfigOf(t, testenv.HostKube(t).Config), false)
	require.Equal(t, http.StatusSeeOther, resp.StatusCode, body)
	_, body = admin.Get("/admin")
	done, _ = checklistDone(t, body, "admin-checklist")
	require.Equal(t, 1, done)
	requireStep(t, body, "checklist-host", true)
	requireStep(t, body, "checklist-platform", false)

	// A test email through the platform's mail server (KUBEBYON_SMTP_URL)
	// that went out ticks the mail step.
	resp = admin.Post("/admin/mail", "/admin/mail/test", url.Values{"tls": {"starttls"}, "testTo": {handlerstest.UniqueEmail("overview-mail")}})
	body = handlerstest.ReadBody(t, resp)
	require.Equal(t, http.StatusOK, resp.StatusCode, body)
	_, body = admin.Get("/admin")
	done, _ = checklistDone(t, body, "admin-checklist")
	require.Equal(t, 2, done)
	requireStep(t, body, "checklist-mail", true)

	code, body = user.Get("/admin")
	require.Equal(t, http.StatusNotFound, code)
	require.Contains(t, body, "Page not found")
}
