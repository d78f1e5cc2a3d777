package hostcheck_test

import (
	"context"
	"crypto/rand"
	"errors"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"

	"github.com/kubebyon/kubebyon/internal/hostcheck"
	"github.com/kubebyon/kubebyon/internal/testenv"
)

func TestMain(m *testing.M) { testenv.Main(m) }

// allPermissions counts every verb of every requirement (of those the
// platform edge needs, with edge).
func allPermissions(edge bool) int {
	n := 0
	for _, r := range hostcheck.Required {
		n += len(r.Verbs)
	}
	if edge {
		for _, r := range hostcheck.EdgeRequired {
			n += len(r.Verbs)
		}
	}
	return n
}

// granted is the report as "verb resource" strings that are allowed.
func granted(r hostcheck.Report) []string {
	var out []string
	for _, res := range r.Results {
		for _, v := range res.Verbs {
			if res.Allowed[v] {
				out = append(out, v+" "+res.Name())
			}
		}
	}
	return out
}

func TestCheckAsAdmin(t *testing.T) {
	t.Parallel()
	k := testenv.HostKube(t)
	r, err := hostcheck.Check(context.Background(), k.Config, hostcheck.Features{Edge: true})
	require.NoError(t, err)
	require.Equal(t, "v1.34.2", r.Version)
	require.Equal(t, k.URL, r.Server)
	require.Len(t, r.Results, len(hostcheck.Required)+len(hostcheck.EdgeRequired))
	require.True(t, r.OK())
	require.Zero(t, r.Missing())
	require.Len(t, granted(r), allPermissions(true))
	require.Equal(t, 61, allPermissions(false), "namespaces 3, nine namespaced resources 6 each, escalate and bind on roles, nodes 2")
	require.Equal(t, 61+36, allPermissions(true), "and the edge's six namespaced resources")
}

// TestCheckGrantsExactly: a user without bindings has nothing; cluster-wide
// grants show up verb by verb; a grant in a single namespace is not
// enough, as each cluster gets a namespace of its own.
func TestCheckGrantsExactly(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	k := testenv.HostKube(t)
	admin := k.Client(t)
	user := "hostcheck-" + strings.ToLower(rand.Text()[:10])
	cfg := k.UserConfig(t, user)

	r, err := hostcheck.Check(ctx, cfg, hostcheck.Features{})
	require.NoError(t, err, "anyone may review their own access")
	require.Equal(t, "v1.34.2", r.Version)
	require.False(t, r.OK())
	require.Equal(t, allPermissions(false), r.Missing(), "the edge's permissions are shown, not counted, while it is not offered")
	require.Empty(t, granted(r))
	r, err = hostcheck.Check(ctx, cfg, hostcheck.Features{Edge: true})
	require.NoError(t, err)
	require.Equal(t, allPermissions(true), r.Missing(), "offered: counted")

	ns, err := admin.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "hostcheck-"}}, metav1.CreateOptions{})
	require.NoError(t, err)
	subjects := []rbacv1.Subject{{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: user}}
	_, err = admin.RbacV1().Roles(ns.Name).Create(ctx, &rbacv1.Role{
		ObjectMeta: metav1.ObjectMeta{Name: "everything"},
		Rules:      []rbacv1.PolicyRule{{APIGroups: []string{"*"}, Resources: []string{"*"}, Verbs: []string{"*"}}},
	}, metav1.CreateOptions{})
	require.NoError(t, err)
	_, err = admin.RbacV1().RoleBindings(ns.Name).Create(ctx, &rbacv1.RoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: "everything"},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: "everything"},
		Subjects:   subjects,
	}, metav1.CreateOptions{})
	require.NoError(t, err)
	_, err = admin.RbacV1().ClusterRoles().Create(ctx, &rbacv1.ClusterRole{
		ObjectMeta: metav1.ObjectMeta{Name: user},
		Rules: []rbacv1.PolicyRule{
			{APIGroups: []string{""}, Resources: []string{"namespaces"}, Verbs: []string{"get", "create"}},
			{APIGroups: []string{""}, Resources: []string{"secrets"}, Verbs: []string{"get", "list"}},
			{APIGroups: []string{"apps"}, Resources: []string{"statefulsets"}, Verbs: []string{"delete"}},
			{APIGroups: []string{""}, Resources: []string{"nodes"}, Verbs: []string{"list"}},
		},
	}, metav1.CreateOptions{})
	require.NoError(t, err)
	_, err = admin.RbacV1().ClusterRoleBindings().Create(ctx, &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: user},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: user},
		Subjects:   subjects,
	}, metav1.CreateOptions{})
	require.NoError(t, err)
	t.Cleanup(func() {
		_ = admin.RbacV1().ClusterRoleBindings().Delete(ctx, user, metav1.DeleteOptions{})
		_ = admin.RbacV1().ClusterRoles().Delete(ctx, user, metav1.DeleteOptions{})
	})

	want := []string{
		"create namespaces", "get namespaces", "get secrets", "list secrets",
		"delete statefulsets.apps", "list nodes",
	}
	// The apiserver's RBAC cache takes a moment to see new bindings.
	require.Eventually(t, func() bool {
		r, err = hostcheck.Check(ctx, cfg, hostcheck.Features{})
		require.NoError(t, err)
		return len(granted(r)) == len(want)
	}, 10*time.Second, 100*time.Millisecond)
	require.Equal(t, want, granted(r))
	require.Equal(t, allPermissions(false)-len(want), r.Missing())
	for _, res := range r.Results {
		if res.Resource == "secrets" {
			require.Equal(t, []string{"create", "update", "patch", "delete"}, res.Missing())
		}
	}
}

// checkError runs a check that must fail and returns its *Error.
func checkError(t *testing.T, ctx context.Context, cfg *rest.Config) *hostcheck.Error {
	t.Helper()
	_, err := hostcheck.Check(ctx, cfg, hostcheck.Features{})
	var he *hostcheck.Error
	require.True(t, errors.As(err, &he), "%v", err)
	require.Equal(t, cfg.Host, he.Server)
	return he
}

func TestCheckFailures(t *testing.T) {
	t.Parallel()
	k := testenv.HostKube(t)

	t.Run("closed port", func(t *testing.T) {
		t.Parallel()
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		require.NoError(t, err)
		addr := ln.Addr().String()
		require.NoError(t, ln.Close())
		start := time.Now()
		he := checkError(t, context.Background(), &rest.Config{Host: "https://" + addr})
		require.Equal(t, hostcheck.Unreachable, he.Kind, "%v", he)
		require.Less(t, time.Since(start), 5*time.Second)
	})

	t.Run("no answer", func(t *testing.T) {
		t.Parallel()
		// Accepts connections and never says anything.
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		require.NoError(t, err)
		t.Cleanup(func() { ln.Close() })
		go func() {
			for {
				conn, err := ln.Accept()
				if err != nil {
					return
				}
				t.Cleanup(func() { conn.Close() })
			}
		}()
		ctx, cancel := context.WithTimeout(context.Background(), 500*time.Millisecond)
		defer cancel()
		he := checkError(t, ctx, &rest.Config{Host: "https://" + ln.Addr().String()})
		require.Equal(t, hostcheck.TimedOut, he.Kind, "%v", he)
	})

	t.Run("untrusted certificate", func(t *testing.T) {
		t.Parallel()
		cfg := rest.CopyConfig(k.Config)
		cfg.CAData = nil
		he := checkError(t, context.Background(), cfg)
		require.Equal(t, hostcheck.BadCertificate, he.Kind, "%v", he)
	})

	t.Run("rejected credentials", func(t *testing.T) {
		t.Parallel()
		cfg := &rest.Config{Host: k.URL, BearerToken: "abcdef.0123456789abcdef", TLSClientConfig: rest.TLSClientConfig{CAData: k.CA}}
		he := checkError(t, context.Background(), cfg)
		require.Equal(t, hostcheck.Unauthorized, he.Kind, "%v", he)
	})
}
