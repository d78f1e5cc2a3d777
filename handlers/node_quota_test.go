package handlers_test

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/kubebyon/kubebyon/handlers/handlerstest"
	"github.com/kubebyon/kubebyon/internal/nodequota"
	"github.com/kubebyon/kubebyon/queries"
)

func createNode(kc kubernetes.Interface, name string, dryRun bool) error {
	opts := metav1.CreateOptions{}
	if dryRun {
		opts.DryRun = []string{metav1.DryRunAll}
	}
	_, err := kc.CoreV1().Nodes().Create(context.Background(), &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name}}, opts)
	return err
}

// TestNodeQuotaWebhook: the platform switches the node quota on in a
// ready cluster without it; the owner's page says their plan's limit and
// where to change plan, with no switch; the webhook configuration goes
// into the virtual cluster, whose apiserver then refuses the Node beyond
// the limit.
func TestNodeQuotaWebhook(t *testing.T) {
	t.Parallel()
	b := handlerstest.Setup(t, handlerstest.WithTLS)
	c, email := b.SignedUpUser(t, "quota")
	b.SetPlanNodes(t, email, 2)
	cl, virt := b.ReadyVirtualCluster(t, c, "quota")
	kc := virt.Client(t)
	ctx := context.Background()
	page := fmt.Sprintf("/clusters/%d/nodes", cl.ID)
	limit := fmt.Sprintf("Your plan (plan-%s) allows 2 nodes per cluster", email)

	// Ready from before the platform switched quotas on: not yet.
	_, body := c.Get(page)
	require.Contains(t, body, limit+": the platform is switching the node quota on in this cluster.")
	b.RewriteNodeQuotas(t)
	require.True(t, b.Cluster(t, cl.ID).NodeQuotaEnabled)
	require.Equal(t, 1, b.AuditCount(t, "cluster.node_quota"))

	_, body = c.Get(page)
	require.Contains(t, body, limit+": this cluster")
	require.Contains(t, body, `<a href="/billing" data-testid="node-quota-billing">Change plan</a>`)
	require.NotContains(t, body, "node-quota-enable")
	require.NotContains(t, body, "node-quota-disable")
	require.NotContains(t, body, fmt.Sprintf(`action="/clusters/%d/node-quota"`, cl.ID))
	// The owner's switch is gone.
	resp := c.Post(page, fmt.Sprintf("/clusters/%d/node-quota", cl.ID), url.Values{})
	require.Equal(t, http.StatusNotFound, resp.StatusCode, handlerstest.ReadBody(t, resp))
	require.True(t, b.Cluster(t, cl.ID).NodeQuotaEnabled)
	require.Equal(t, 1, b.AuditCount(t, "cluster.node_quota"))

	b.SyncNodeQuota(t, cl.ID)
	cfg, err := kc.AdmissionregistrationV1().ValidatingWebhookConfigurations().Get(ctx, nodequota.WebhookName, metav1.GetOptions{})
	require.NoError(t, err)
	require.Len(t, cfg.Webhooks, 1)
	wh := cfg.Webhooks[0]
	prefix := fmt.Sprintf("%s/webhooks/node-quota/%d/", b.Server.URL, cl.ID)
	require.True(t, strings.HasPrefix(*wh.ClientConfig.URL, prefix), *wh.ClientConfig.URL)
	require.Equal(t, b.ServerCA(), wh.ClientConfig.CABundle)
	require.Equal(t, admissionregistrationv1.Ignore, *wh.FailurePolicy)
	require.Equal(t, admissionregistrationv1.SideEffectClassNone, *wh.SideEffects)
	require.Equal(t, int32(5), *wh.TimeoutSeconds)
	require.Equal(t, []admissionregistrationv1.OperationType{admissionregistrationv1.Create}, wh.Rules[0].Operations)
	require.Equal(t, []string{"nodes"}, wh.Rules[0].Resources)

	require.NoError(t, createNode(kc, "node-1", false))
	require.NoError(t, createNode(kc, "node-2", false))
	// The apiserver picks the configuration up from its watch; a dry run
	// asks the webhook too, without creating anything.
	require.Eventually(t, func() bool { return createNode(kc, "node-3", true) != nil }, 30*time.Second, 200*time.Millisecond)
	err = createNode(kc, "node-3", false)
	require.Error(t, err)
	require.True(t, apierrors.IsForbidden(err), "%v", err)
	require.Contains(t, err.Error(), "node quota exceeded: the plan allows 2 nodes per cluster")

	// Someone who knows the cluster id but not the key is refused.
	review := `{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","request":{"uid":"1","kind":{"group":"","version":"v1","kind":"Node"},"operation":"CREATE"}}`
	for _, key := range []string{"wrong", "-"} {
		resp, err := b.Server.Client().Post(fmt.Sprintf("%s/webhooks/node-quota/%d/%s", b.Server.URL, cl.ID, key), "application/json", strings.NewReader(review))
		require.NoError(t, err)
		require.Equal(t, http.StatusForbidden, resp.StatusCode)
		resp.Body.Close()
	}
	// The right key allows what is not a Node creation.
	resp2, err := b.Server.Client().Post(*wh.ClientConfig.URL, "application/json",
		strings.NewReader(strings.Replace(review, `"CREATE"`, `"UPDATE"`, 1)))
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, resp2.StatusCode)
	require.Contains(t, handlerstest.ReadBody(t, resp2), `"allowed":true`)
	resp2.Body.Close()

	// A bigger plan lets the next Node in, with the same configuration.
	_, err = b.Pool.Exec(ctx, `UPDATE plans SET max_nodes_per_cluster = 3 WHERE name = $1`, "plan-"+email)
	require.NoError(t, err)
	require.NoError(t, createNode(kc, "node-3", false))
	_, body = c.Get(page)
	require.Contains(t, body, fmt.Sprintf("Your plan (plan-%s) allows 3 nodes per cluster", email))
}

// TestNodeQuotaAPI: the API shows the quota the platform switched on and
// refuses to switch it off; asking for it on changes nothing.
func TestNodeQuotaAPI(t *testing.T) {
	t.Parallel()
	b := handlerstest.Setup(t)
	ctx := context.Background()
	c, email := b.SignedUpUser(t, "quota-api")
	key := c.CreateKey("ci")
	q := queries.New(b.Pool)
	u, err := q.UserGetByEmail(ctx, email)
	require.NoError(t, err)
	cl, err := q.ClusterCreate(ctx, queries.ClusterCreateParams{
		OwnerID: u.ID, Name: "quota-api", Slug: "quota-api-abc123", KubernetesVersion: "v1.34.0", PublicAccessMode: "loadbalancer",
	})
	require.NoError(t, err)
	b.MarkReady(t, cl)
	b.RewriteNodeQuotas(t)
	on := b.Cluster(t, cl.ID)
	require.True(t, on.NodeQuotaEnabled)
	path := fmt.Sprintf("/api/v1/clusters/%d", cl.ID)

	r := b.APICall(t, http.MethodGet, path, key, "")
	require.Equal(t, http.StatusOK, r.Status, r.Body)
	require.Contains(t, r.Body, `"node_quota_enabled":true`)

	r = b.APICall(t, http.MethodPatch, path, key, `{"node_quota_enabled":true}`)
	require.Equal(t, http.StatusOK, r.Status, r.Body)
	require.Contains(t, r.Body, `"node_quota_enabled":true`)

	// Refused before anything else in the request changes.
	r = b.APICall(t, http.MethodPatch, path, key, `{"node_quota_enabled":false,"description":"no quota"}`)
	require.Equal(t, http.StatusUnprocessableEntity, r.Status, r.Body)
	require.Contains(t, r.Body, `"node_quota_enabled":"The node quota enforces your plan in every cluster and cannot be switched off; change plan to change its limit."`)
	after := b.Cluster(t, cl.ID)
	require.True(t, after.NodeQuotaEnabled)
	require.Equal(t, on.NodeQuotaSecret, after.NodeQuotaSecret)
	require.Empty(t, after.Description)
	require.Equal(t, 1, b.AuditCount(t, "cluster.node_quota"), "the platform's only")
}
