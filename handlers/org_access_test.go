package handlers_test

import (
	"context"
	"fmt"
	"net/http"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/riverqueue/river"
	"github.com/riverqueue/river/riverdriver/riverpgxv5"
	"github.com/riverqueue/river/rivertest"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/kubebyon/kubebyon/handlers/handlerstest"
	"github.com/kubebyon/kubebyon/internal/clusteraccess"
	"github.com/kubebyon/kubebyon/internal/clusters"
	"github.com/kubebyon/kubebyon/jobs"
)

// TestOrgMemberKubeconfigs: in a team organization every member downloads
// a kubeconfig of their own, a token of their ServiceAccount in the
// virtual cluster bound to their role's ClusterRole; viewers only when the
// organization allows it, and then read-only. Removing a member ends what
// they had: their API key gets 401 and the virtual cluster's real
// kube-apiserver refuses their kubeconfig, while a remaining member's
// still works. The audit log says who downloaded which.
func TestOrgMemberKubeconfigs(t *testing.T) {
	t.Parallel()
	b := handlerstest.Setup(t)
	b.ConnectHost(t)
	ctx := context.Background()
	tm := newOrgTeam(t, b, "access")
	// A ready cluster of the team, its control plane a real apiserver.
	cl, virt := b.ReadyVirtualCluster(t, tm.clients["owner"], "shared")
	require.Equal(t, tm.orgID, cl.OrgID)
	admin := virt.Client(t)

	download := func(role string) (int, []byte) {
		resp, err := tm.clients[role].HTTP.Get(fmt.Sprintf("%s/clusters/%d/kubeconfig", tm.clients[role].Base, cl.ID))
		require.NoError(t, err)
		defer resp.Body.Close()
		return resp.StatusCode, []byte(handlerstest.ReadBody(t, resp))
	}
	// asMember is a client of the virtual cluster with the kubeconfig's
	// token alone, at the apiserver's real address (the kubeconfig names
	// the public endpoint, which this test has no DNS for).
	asMember := func(kubeconfig []byte) kubernetes.Interface {
		cfg, err := clientcmd.Load(kubeconfig)
		require.NoError(t, err)
		require.Len(t, cfg.AuthInfos, 1)
		for _, ai := range cfg.AuthInfos {
			require.NotEmpty(t, ai.Token)
			require.Empty(t, ai.ClientCertificateData, "no admin credential")
			rc := *virt.Config
			rc.TLSClientConfig.CertData, rc.TLSClientConfig.KeyData = nil, nil
			rc.BearerToken = ai.Token
			c, err := kubernetes.NewForConfig(&rc)
			require.NoError(t, err)
			return c
		}
		return nil
	}
	cfgs := map[string]kubernetes.Interface{}
	for _, role := range []string{"owner", "admin", "member"} {
		code, body := download(role)
		require.Equal(t, http.StatusOK, code, string(body))
		cfgs[role] = asMember(body)
		_, err := cfgs[role].CoreV1().Namespaces().List(ctx, metav1.ListOptions{})
		require.NoError(t, err, "%s: cluster-admin", role)
	}
	code, _ := download("viewer")
	require.Equal(t, http.StatusForbidden, code, "viewers only where the organization allows it")
	code, _ = download("other")
	require.Equal(t, http.StatusNotFound, code)

	_, err := b.Pool.Exec(ctx, "UPDATE organizations SET viewer_kubeconfig = TRUE WHERE id = $1", tm.orgID)
	require.NoError(t, err)
	code, body := download("viewer")
	require.Equal(t, http.StatusOK, code, string(body))
	viewer := asMember(body)
	_, err = viewer.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "viewer-made"}}, metav1.CreateOptions{})
	require.True(t, apierrors.IsForbidden(err), "view is read-only: %v", err)

	// Who downloaded which.
	var audited int
	require.NoError(t, b.Pool.QueryRow(ctx, `SELECT count(*) FROM audit_events
		WHERE action = 'cluster.kubeconfig_download' AND target_id = $1 AND details->>'credential' = 'member_token'`, fmt.Sprint(cl.ID)).Scan(&audited))
	require.Equal(t, 4, audited)

	// The owner removes the member.
	memberID := b.UserID(t, tm.emails["member"])
	resp := tm.clients["owner"].Post(fmt.Sprintf("/orgs/%d", tm.orgID), fmt.Sprintf("/orgs/%d/members/%d/remove", tm.orgID, memberID), nil)
	require.Equal(t, http.StatusSeeOther, resp.StatusCode)
	require.Equal(t, http.StatusUnauthorized, b.APICall(t, http.MethodGet, "/api/v1/clusters", tm.keys["member"], "").Status)
	workRevocations(t, b, cl.ID)

	_, err = cfgs["member"].CoreV1().Namespaces().List(ctx, metav1.ListOptions{})
	require.True(t, apierrors.IsUnauthorized(err) || apierrors.IsForbidden(err), "the removed member's kubeconfig is refused: %v", err)
	t.Logf("removed member %s, GET /api/v1/namespaces with their kubeconfig: %v", tm.emails["member"], err)
	_, err = admin.CoreV1().ServiceAccounts(clusteraccess.Namespace).Get(ctx, clusteraccess.ServiceAccountName(memberID), metav1.GetOptions{})
	require.True(t, apierrors.IsNotFound(err), "their ServiceAccount is gone: %v", err)
	list, err := cfgs["admin"].CoreV1().Namespaces().List(ctx, metav1.ListOptions{})
	require.NoError(t, err, "a remaining member's still works")
	t.Logf("remaining admin %s, GET /api/v1/namespaces with their kubeconfig: 200, %d namespaces", tm.emails["admin"], len(list.Items))
	require.Equal(t, http.StatusOK, b.APICall(t, http.MethodGet, "/api/v1/clusters", tm.keys["admin"], "").Status)
}

// workRevocations works the queued revocations of a cluster, as the
// worker would (handler tests only insert jobs).
func workRevocations(t *testing.T, b *handlerstest.Bundle, clusterID int64) {
	t.Helper()
	ctx := context.Background()
	rows, err := b.Pool.Query(ctx, `SELECT args FROM river_job WHERE kind = $1 AND (args->>'cluster_id')::bigint = $2`,
		clusteraccess.RevokeArgs{}.Kind(), clusterID)
	require.NoError(t, err)
	queued, err := pgx.CollectRows(rows, pgx.RowTo[clusteraccess.RevokeArgs])
	require.NoError(t, err)
	require.NotEmpty(t, queued, "removal queues a revocation per cluster")
	w := rivertest.NewWorker(t, riverpgxv5.New(b.Pool), &river.Config{}, &jobs.ClusterAccessRevokeWorker{
		Pool: b.Pool, VirtualConfig: (&clusters.Service{Pool: b.Pool, Box: b.Box, KubeconfigPath: b.HostKubeconfig}).VirtualConfig,
	})
	for _, args := range queued {
		tx, err := b.Pool.Begin(ctx)
		require.NoError(t, err)
		_, err = w.Work(ctx, t, tx, args, nil)
		require.NoError(t, err)
		require.NoError(t, tx.Rollback(ctx))
	}
}
