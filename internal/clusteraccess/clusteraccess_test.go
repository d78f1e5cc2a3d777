package clusteraccess_test

import (
	"context"
	"encoding/base64"
	"fmt"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/kubebyon/kubebyon/internal/clusteraccess"
	"github.com/kubebyon/kubebyon/internal/testenv"
)

const ttl = time.Hour

// testBundle is the virtual cluster the subtests of TestClusterAccess
// share; each subtest uses user ids of its own.
type testBundle struct {
	cp    *testenv.ControlPlane
	admin kubernetes.Interface
}

// setup starts a control plane as a virtual cluster runs one, with
// kube-controller-manager. A bare kube-apiserver (testenv.HostKube) is not
// enough: view is an aggregated ClusterRole, which the apiserver's RBAC
// bootstrap makes without rules; kube-controller-manager's
// clusterrole-aggregation controller fills them in from the
// system:aggregate-to-view role and its kind.
func setup(t *testing.T) *testBundle {
	t.Helper()
	cp := testenv.StartControlPlane(t, testenv.ControlPlaneOptions{BindAddress: "127.0.0.1"})
	b := &testBundle{cp: cp, admin: cp.Client(t)}
	eventually(t, 30*time.Second, "the view ClusterRole has rules", func() error {
		view, err := b.admin.RbacV1().ClusterRoles().Get(t.Context(), "view", metav1.GetOptions{})
		if err == nil && len(view.Rules) == 0 {
			err = fmt.Errorf("view has no rules yet (aggregation rule: %v)", view.AggregationRule != nil)
		}
		return err
	})
	return b
}

// memberClient is a client that authenticates with token alone.
func (b *testBundle) memberClient(t *testing.T, token string) kubernetes.Interface {
	t.Helper()
	c, err := kubernetes.NewForConfig(&rest.Config{
		Host:            b.cp.URL,
		BearerToken:     token,
		TLSClientConfig: rest.TLSClientConfig{CAData: b.cp.CA},
	})
	require.NoError(t, err)
	return c
}

// grant is clusteraccess.Grant that must succeed.
func (b *testBundle) grant(t *testing.T, userID int64, level clusteraccess.Level) string {
	t.Helper()
	token, expires, err := clusteraccess.Grant(t.Context(), b.admin, clusteraccess.Member{UserID: userID, Email: fmt.Sprintf("user%d@example.test", userID)}, level, ttl)
	require.NoError(t, err)
	require.NotEmpty(t, token)
	require.WithinDuration(t, time.Now().Add(ttl), expires, time.Minute)
	return token
}

// op is something a member may or may not be allowed to do.
type op struct {
	name string
	do   func(ctx context.Context, c kubernetes.Interface) error
}

func createNamespace(suffix string) op {
	return op{"create namespace", func(ctx context.Context, c kubernetes.Interface) error {
		_, err := c.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "made-by-" + suffix}}, metav1.CreateOptions{})
		if apierrors.IsAlreadyExists(err) {
			return nil
		}
		return err
	}}
}

var (
	listSecrets = op{"list secrets", func(ctx context.Context, c kubernetes.Interface) error {
		_, err := c.CoreV1().Secrets(metav1.NamespaceAll).List(ctx, metav1.ListOptions{Limit: 1})
		return err
	}}
	getSecret = op{"read a secret", func(ctx context.Context, c kubernetes.Interface) error {
		_, err := c.CoreV1().Secrets(metav1.NamespaceDefault).Get(ctx, "any", metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return nil
		}
		return err
	}}
	listPods = op{"list pods", func(ctx context.Context, c kubernetes.Interface) error {
		_, err := c.CoreV1().Pods(metav1.NamespaceAll).List(ctx, metav1.ListOptions{Limit: 1})
		return err
	}}
	listConfigMaps = op{"list configmaps", func(ctx context.Context, c kubernetes.Interface) error {
		_, err := c.CoreV1().ConfigMaps(metav1.NamespaceAll).List(ctx, metav1.ListOptions{Limit: 1})
		return err
	}}
	listNamespaces = op{"list namespaces", func(ctx context.Context, c kubernetes.Interface) error {
		_, err := c.CoreV1().Namespaces().List(ctx, metav1.ListOptions{Limit: 1})
		return err
	}}
)

// rbacDelay bounds how long the apiserver's RBAC authorizer takes to see
// a changed binding (it learns of bindings through a watch).
const rbacDelay = 10 * time.Second

// eventually calls check until it returns nil, failing t after timeout.
func eventually(t *testing.T, timeout time.Duration, what string, check func() error) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		err := check()
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: not within %s: %v", what, timeout, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// allowed waits until c may do o; a fresh binding takes a moment to count.
func allowed(t *testing.T, c kubernetes.Interface, o op) {
	t.Helper()
	eventually(t, rbacDelay, o.name+" allowed", func() error { return o.do(t.Context(), c) })
}

// forbidden waits until c gets 403 doing o, and fails t at once on any
// other answer but success (rights that have yet to go).
func forbidden(t *testing.T, c kubernetes.Interface, o op) {
	t.Helper()
	eventually(t, rbacDelay, o.name+" forbidden", func() error {
		err := o.do(t.Context(), c)
		if err != nil && !apierrors.IsForbidden(err) {
			t.Fatalf("%s: want 403 Forbidden, got %v", o.name, err)
		}
		if err == nil {
			return fmt.Errorf("%s is still allowed", o.name)
		}
		return nil
	})
}

// TestClusterAccess runs every test that needs the virtual cluster on one
// control plane, which takes a few seconds to start.
func TestClusterAccess(t *testing.T) {
	t.Parallel()
	b := setup(t)
	t.Run("level", func(t *testing.T) { t.Parallel(); testLevels(t, b) })
	t.Run("level change", func(t *testing.T) { t.Parallel(); testLevelChange(t, b) })
	t.Run("revoke", func(t *testing.T) { t.Parallel(); testRevoke(t, b) })
	t.Run("kubeconfig", func(t *testing.T) { t.Parallel(); testKubeconfig(t, b) })
	t.Run("idempotent", func(t *testing.T) { t.Parallel(); testIdempotent(t, b) })
	t.Run("concurrent grants", func(t *testing.T) { t.Parallel(); testConcurrentGrants(t, b) })
}

// testLevels: each level's token can do what its ClusterRole allows and
// nothing more.
func testLevels(t *testing.T, b *testBundle) {
	tests := []struct {
		name      string
		userID    int64
		level     clusteraccess.Level
		allowed   []op
		forbidden []op
	}{
		{
			name: "admin", userID: 101, level: clusteraccess.Admin,
			allowed: []op{createNamespace("101"), listSecrets, getSecret, listPods, listConfigMaps},
		},
		{
			name: "view", userID: 102, level: clusteraccess.View,
			allowed: []op{listPods, listConfigMaps},
			// view leaves out Secrets (and namespaces are cluster-scoped:
			// view reads them only through admin's aggregation).
			forbidden: []op{createNamespace("102"), listSecrets, getSecret},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			member := b.memberClient(t, b.grant(t, tt.userID, tt.level))
			for _, o := range tt.allowed {
				allowed(t, member, o)
			}
			for _, o := range tt.forbidden {
				forbidden(t, member, o)
			}
		})
	}
}

// testLevelChange: after Grant(View), a token minted for Admin keeps only
// view's rights, including through bindings the member made while admin.
func testLevelChange(t *testing.T, b *testBundle) {
	const userID = 201
	ctx := t.Context()
	first := b.memberClient(t, b.grant(t, userID, clusteraccess.Admin))
	allowed(t, first, createNamespace("201-a"))

	// While admin, the member binds their own ServiceAccount to
	// cluster-admin on their own, alone and beside someone else.
	self := rbacv1.Subject{Kind: rbacv1.ServiceAccountKind, Namespace: clusteraccess.Namespace, Name: clusteraccess.ServiceAccountName(userID)}
	other := rbacv1.Subject{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: "someone-else"}
	toAdmin := rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "cluster-admin"}
	_, err := first.RbacV1().ClusterRoleBindings().Create(ctx, &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: "kept-admin-201"}, RoleRef: toAdmin, Subjects: []rbacv1.Subject{self},
	}, metav1.CreateOptions{})
	require.NoError(t, err)
	_, err = first.RbacV1().ClusterRoleBindings().Create(ctx, &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: "shared-admin-201"}, RoleRef: toAdmin, Subjects: []rbacv1.Subject{self, other},
	}, metav1.CreateOptions{})
	require.NoError(t, err)
	_, err = first.RbacV1().RoleBindings(metav1.NamespaceDefault).Create(ctx, &rbacv1.RoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: "kept-admin-201"}, RoleRef: toAdmin, Subjects: []rbacv1.Subject{self},
	}, metav1.CreateOptions{})
	require.NoError(t, err)

	second := b.memberClient(t, b.grant(t, userID, clusteraccess.View))
	for _, c := range []kubernetes.Interface{first, second} {
		forbidden(t, c, createNamespace("201-b"))
		forbidden(t, c, getSecret)
		allowed(t, c, listPods)
	}

	_, err = b.admin.RbacV1().ClusterRoleBindings().Get(ctx, "kept-admin-201", metav1.GetOptions{})
	require.True(t, apierrors.IsNotFound(err), "the member's own cluster-admin binding is gone: %v", err)
	_, err = b.admin.RbacV1().RoleBindings(metav1.NamespaceDefault).Get(ctx, "kept-admin-201", metav1.GetOptions{})
	require.True(t, apierrors.IsNotFound(err), "the member's own role binding is gone: %v", err)
	shared, err := b.admin.RbacV1().ClusterRoleBindings().Get(ctx, "shared-admin-201", metav1.GetOptions{})
	require.NoError(t, err)
	require.Equal(t, []rbacv1.Subject{other}, shared.Subjects, "someone else keeps the shared binding")
	requireOneBinding(t, b, userID, clusteraccess.View)
}

// requireOneBinding checks that the member has exactly one binding, to
// level's ClusterRole.
func requireOneBinding(t *testing.T, b *testBundle, userID int64, level clusteraccess.Level) {
	t.Helper()
	list, err := b.admin.RbacV1().ClusterRoleBindings().List(t.Context(), metav1.ListOptions{
		LabelSelector: clusteraccess.UserIDLabel + "=" + strconv.FormatInt(userID, 10),
	})
	require.NoError(t, err)
	require.Len(t, list.Items, 1)
	require.Equal(t, clusteraccess.BindingName(userID), list.Items[0].Name)
	require.Equal(t, string(level), list.Items[0].RoleRef.Name)
}

// testRevoke: Revoke ends every token of the member at the real apiserver
// (401), not another member's; a new Grant does not revive the old tokens.
func testRevoke(t *testing.T, b *testBundle) {
	const removed, remaining = 301, 302
	removedTokens := []string{b.grant(t, removed, clusteraccess.Admin), b.grant(t, removed, clusteraccess.Admin)}
	other := b.memberClient(t, b.grant(t, remaining, clusteraccess.View))
	var removedClients []kubernetes.Interface
	for _, token := range removedTokens {
		c := b.memberClient(t, token)
		// Used before the revocation, so that the apiserver has their
		// authentication in its cache: the case that takes longest.
		allowed(t, c, listNamespaces)
		removedClients = append(removedClients, c)
	}
	allowed(t, other, listPods)

	require.NoError(t, clusteraccess.Revoke(t.Context(), b.admin, removed))
	revoked := time.Now()
	// The bindings go first: while the apiserver still authenticates the
	// tokens from its cache, they carry no rights already.
	for i, c := range removedClients {
		eventually(t, rbacDelay, fmt.Sprintf("token %d without rights", i+1), func() error {
			err := createNamespace("301").do(t.Context(), c)
			if apierrors.IsForbidden(err) || apierrors.IsUnauthorized(err) {
				t.Logf("token %d: %s %s after Revoke", i+1, apierrors.ReasonForError(err), time.Since(revoked).Round(time.Millisecond))
				return nil
			}
			return fmt.Errorf("want 403 or 401, got %v", err)
		})
	}
	for i, c := range removedClients {
		// kube-apiserver keeps a token's successful authentication for 10s
		// (TokenSuccessCacheTTL, not a flag); then the ServiceAccount's
		// absence shows.
		eventually(t, 20*time.Second, fmt.Sprintf("token %d refused", i+1), func() error {
			err := listNamespaces.do(t.Context(), c)
			if apierrors.IsUnauthorized(err) {
				return nil
			}
			return fmt.Errorf("want 401 Unauthorized, got %v", err)
		})
		t.Logf("token %d: 401 Unauthorized %s after Revoke", i+1, time.Since(revoked).Round(100*time.Millisecond))
	}
	require.NoError(t, listPods.do(t.Context(), other), "the remaining member's token still works")

	// The member comes back: a new ServiceAccount (a new UID) under the
	// same name; the old tokens stay refused.
	back := b.memberClient(t, b.grant(t, removed, clusteraccess.View))
	allowed(t, back, listPods)
	for _, c := range removedClients {
		err := listNamespaces.do(t.Context(), c)
		require.True(t, apierrors.IsUnauthorized(err), "an old token after a new grant: want 401, got %v", err)
	}
}

// testKubeconfig: a member's kubeconfig built from the admin one carries
// the token and none of the admin's credentials, and works.
func testKubeconfig(t *testing.T, b *testBundle) {
	const userID = 401
	token := b.grant(t, userID, clusteraccess.View)
	admin, err := clientcmd.Load(b.cp.AdminKubeconfig)
	require.NoError(t, err)
	var adminKey []byte
	for _, a := range admin.AuthInfos {
		adminKey = a.ClientKeyData
	}
	require.NotEmpty(t, adminKey, "the admin kubeconfig has a client key to leave out")

	out, err := clusteraccess.Kubeconfig(b.cp.AdminKubeconfig, b.cp.URL, "c401", "member-401", token)
	require.NoError(t, err)
	require.NotContains(t, string(out), "client-certificate")
	require.NotContains(t, string(out), "client-key")
	require.NotContains(t, string(out), base64.StdEncoding.EncodeToString(adminKey))
	require.Contains(t, string(out), token)

	cfg, err := clientcmd.RESTConfigFromKubeConfig(out)
	require.NoError(t, err)
	require.Empty(t, cfg.CertData)
	require.Empty(t, cfg.KeyData)
	require.Equal(t, token, cfg.BearerToken)
	c, err := kubernetes.NewForConfig(cfg)
	require.NoError(t, err)
	allowed(t, c, listPods)
	forbidden(t, c, getSecret)
}

// testIdempotent: Grant twice leaves one ServiceAccount (with the latest
// email) and one binding, both tokens working; Revoke twice, or of someone
// never granted, succeeds.
func testIdempotent(t *testing.T, b *testBundle) {
	const userID, never = 501, 502
	ctx := t.Context()
	var tokens []string
	for _, email := range []string{"old@example.test", "new@example.test"} {
		token, _, err := clusteraccess.Grant(ctx, b.admin, clusteraccess.Member{UserID: userID, Email: email}, clusteraccess.Admin, ttl)
		require.NoError(t, err)
		tokens = append(tokens, token)
	}
	sa, err := b.admin.CoreV1().ServiceAccounts(clusteraccess.Namespace).Get(ctx, clusteraccess.ServiceAccountName(userID), metav1.GetOptions{})
	require.NoError(t, err)
	require.Equal(t, "new@example.test", sa.Annotations[clusteraccess.EmailAnnotation])
	require.Equal(t, "kubebyon", sa.Labels[clusteraccess.ManagedByLabel])
	requireOneBinding(t, b, userID, clusteraccess.Admin)
	for _, token := range tokens {
		allowed(t, b.memberClient(t, token), createNamespace("501"))
	}

	for range 2 {
		require.NoError(t, clusteraccess.Revoke(ctx, b.admin, userID))
	}
	require.NoError(t, clusteraccess.Revoke(ctx, b.admin, never))
	_, err = b.admin.CoreV1().ServiceAccounts(clusteraccess.Namespace).Get(ctx, clusteraccess.ServiceAccountName(userID), metav1.GetOptions{})
	require.True(t, apierrors.IsNotFound(err), "service account deleted: %v", err)
	_, err = b.admin.RbacV1().ClusterRoleBindings().Get(ctx, clusteraccess.BindingName(userID), metav1.GetOptions{})
	require.True(t, apierrors.IsNotFound(err), "binding deleted: %v", err)
}

// testConcurrentGrants: Grants of both levels at once for one member (two
// browser tabs, two platform replicas) all succeed and leave one binding.
func testConcurrentGrants(t *testing.T, b *testBundle) {
	const userID = 601
	errs := make(chan error, 8)
	for i := range cap(errs) {
		level := clusteraccess.Admin
		if i%2 == 1 {
			level = clusteraccess.View
		}
		go func() {
			_, _, err := clusteraccess.Grant(t.Context(), b.admin, clusteraccess.Member{UserID: userID}, level, ttl)
			errs <- err
		}()
	}
	for range cap(errs) {
		require.NoError(t, <-errs)
	}
	b.grant(t, userID, clusteraccess.View)
	requireOneBinding(t, b, userID, clusteraccess.View)
}

// TestGrantRefuses checks the arguments Grant refuses before it calls the
// cluster at all.
func TestGrantRefuses(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		member clusteraccess.Member
		level  clusteraccess.Level
		ttl    time.Duration
		want   string
	}{
		{"no user", clusteraccess.Member{}, clusteraccess.Admin, time.Hour, "invalid user id 0"},
		{"unknown level", clusteraccess.Member{UserID: 1}, "edit", time.Hour, `unknown level "edit"`},
		{"short ttl", clusteraccess.Member{UserID: 1}, clusteraccess.View, 5 * time.Minute, "shorter than the TokenRequest API's minimum of 10m0s"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			client := fake.NewClientset()
			_, _, err := clusteraccess.Grant(t.Context(), client, tt.member, tt.level, tt.ttl)
			require.ErrorContains(t, err, tt.want)
			require.Empty(t, client.Actions())
		})
	}
}
