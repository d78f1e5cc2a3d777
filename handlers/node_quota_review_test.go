package handlers_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/kubebyon/kubebyon/handlers/handlerstest"
	"github.com/kubebyon/kubebyon/internal/clusters"
	"github.com/kubebyon/kubebyon/internal/nodequota"
	"github.com/kubebyon/kubebyon/internal/ratelimit"
	"github.com/kubebyon/kubebyon/internal/testenv"
	"github.com/kubebyon/kubebyon/queries"
)

// setKubeconfigSecret replaces the kubeconfig vcluster keeps for cl on
// the host; nil deletes the Secret.
func setKubeconfigSecret(t *testing.T, cl queries.Cluster, kubeconfig []byte) {
	t.Helper()
	ctx := context.Background()
	secrets := testenv.HostKube(t).Client(t).CoreV1().Secrets(clusters.Namespace(cl))
	if err := secrets.Delete(ctx, clusters.KubeconfigSecretName(cl), metav1.DeleteOptions{}); !apierrors.IsNotFound(err) {
		require.NoError(t, err)
	}
	if kubeconfig == nil {
		return
	}
	_, err := secrets.Create(ctx, &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: clusters.KubeconfigSecretName(cl)},
		Data:       map[string][]byte{"config": kubeconfig},
	}, metav1.CreateOptions{})
	require.NoError(t, err)
}

// nodeCounter is the kubeconfig of a user who may list the Nodes of virt,
// until revoke takes that right away.
func nodeCounter(t *testing.T, virt *testenv.Kube, user string) (kubeconfig []byte, revoke func()) {
	t.Helper()
	handlerstest.GrantClusterWide(t, virt, user, rbacv1.PolicyRule{APIGroups: []string{""}, Resources: []string{"nodes"}, Verbs: []string{"list"}})
	cfg := virt.UserConfig(t, user)
	return []byte(handlerstest.KubeconfigOf(t, cfg)), func() {
		ctx := context.Background()
		require.NoError(t, virt.Client(t).RbacV1().ClusterRoleBindings().Delete(ctx, user, metav1.DeleteOptions{}))
		kc, err := kubernetes.NewForConfig(cfg)
		require.NoError(t, err)
		require.Eventually(t, func() bool {
			_, err := kc.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
			return apierrors.IsForbidden(err)
		}, 15*time.Second, 50*time.Millisecond, "RBAC refuses %s", user)
	}
}

// TestNodeQuotaReviewKeepsClient: the webhook reads the cluster's
// kubeconfig Secret on the host once, not per review; a kept client that
// fails is dropped, and the review tried once more with the Secret.
func TestNodeQuotaReviewKeepsClient(t *testing.T) {
	t.Parallel()
	b := handlerstest.Setup(t)
	c, _ := b.SignedUpUser(t, "quota-kept")
	cl, virt := b.ReadyVirtualCluster(t, c, "quota-kept")
	b.RewriteNodeQuotas(t)
	key, err := b.Box.Open(b.Cluster(t, cl.ID).NodeQuotaSecret)
	require.NoError(t, err)
	hook := nodequota.WebhookURL(b.Server.URL, cl.ID, string(key))
	allowed := func(msg string) {
		t.Helper()
		status, body := b.Review(t, hook)
		require.Equal(t, http.StatusOK, status, "%s: %s", msg, body)
		require.Contains(t, body, `"allowed":true`, msg)
	}

	first, revokeFirst := nodeCounter(t, virt, "node-counter-1")
	setKubeconfigSecret(t, cl, first)
	allowed("first review")
	setKubeconfigSecret(t, cl, nil)
	allowed("the kept client answers without the Secret")

	// Refused, the kept client is dropped and the Secret read again, which
	// is gone.
	revokeFirst()
	status, body := b.Review(t, hook)
	require.Equal(t, http.StatusInternalServerError, status, body)

	// Refused with a good Secret there, the review reads it and answers.
	second, revokeSecond := nodeCounter(t, virt, "node-counter-2")
	setKubeconfigSecret(t, cl, second)
	allowed("a new client from the Secret")
	setKubeconfigSecret(t, cl, virt.Kubeconfig(t))
	revokeSecond()
	allowed("the kept client refused, a new one from the Secret")
}

// TestNodeQuotaReviewRateLimit: past the per-cluster limit the webhook
// answers 429 with a JSON error, and counts each cluster apart.
func TestNodeQuotaReviewRateLimit(t *testing.T) {
	t.Parallel()
	b := handlerstest.Setup(t)
	ctx := context.Background()
	rule := ratelimit.NodeQuotaReviewsPerCluster
	// Cluster 1 is one call below its limit, cluster 2 at it, with the
	// answers the same wherever the minute turns: cluster 1's calls are
	// all in this window (the next one only weighs them), cluster 2's in
	// this window and the next.
	window := time.Now().Truncate(rule.Window)
	for id, starts := range map[int64][]time.Time{1: {window}, 2: {window, window.Add(rule.Window)}} {
		count := rule.Limit - 1
		if id == 2 {
			count = rule.Limit
		}
		for _, start := range starts {
			_, err := b.Pool.Exec(ctx, `INSERT INTO rate_limits (key, window_start, count) VALUES ($1, $2, $3)`,
				fmt.Sprintf("%s:%d", rule.Name, id), start, count)
			require.NoError(t, err)
		}
	}

	// Below the limit the call goes on, to be refused for its key.
	status, body := b.Review(t, b.Server.URL+nodequota.WebhookPath+"1/guess")
	require.Equal(t, http.StatusForbidden, status, body)

	resp, err := b.Server.Client().Post(b.Server.URL+nodequota.WebhookPath+"2/guess", "application/json", strings.NewReader(handlerstest.NodeCreateReview))
	require.NoError(t, err)
	defer resp.Body.Close()
	require.Equal(t, http.StatusTooManyRequests, resp.StatusCode)
	require.NotEmpty(t, resp.Header.Get("Retry-After"))
	var got struct {
		Error struct{ Code, Message string } `json:"error"`
	}
	require.NoError(t, json.NewDecoder(resp.Body).Decode(&got))
	require.Equal(t, "too_many_requests", got.Error.Code)
	require.Contains(t, got.Error.Message, "Too many node admission reviews")
}
