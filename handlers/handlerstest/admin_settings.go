package handlerstest

import (
	"context"
	"errors"
	"net"
	"net/url"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

	"github.com/kubebyon/kubebyon/internal/settings"
	"github.com/kubebyon/kubebyon/internal/testenv"
	"github.com/kubebyon/kubebyon/queries"
)

// SettingsPage is the admin settings page.
const SettingsPage = "/admin/settings"

// KubeconfigOf renders a client configuration with embedded credentials
// as a kubeconfig.
func KubeconfigOf(t *testing.T, cfg *rest.Config) string {
	t.Helper()
	kc := clientcmdapi.NewConfig()
	kc.Clusters["host"] = &clientcmdapi.Cluster{Server: cfg.Host, CertificateAuthorityData: cfg.CAData}
	kc.AuthInfos["user"] = &clientcmdapi.AuthInfo{ClientCertificateData: cfg.CertData, ClientKeyData: cfg.KeyData, Token: cfg.BearerToken}
	kc.Contexts["host"] = &clientcmdapi.Context{Cluster: "host", AuthInfo: "user"}
	kc.CurrentContext = "host"
	b, err := clientcmd.Write(*kc)
	require.NoError(t, err)
	return string(b)
}

// ClosedPort is an address nothing listens on.
func ClosedPort(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := ln.Addr().String()
	require.NoError(t, ln.Close())
	return addr
}

// FullSettings is a valid form with every plain field set away from its
// default.
func FullSettings(t *testing.T) url.Values {
	return url.Values{
		"chartRepo":         {"oci://registry.example.com/charts"},
		"chartVersion":      {"0.29.1"},
		"chartPath":         {t.TempDir()},
		"platformHost":      {"platform.example.com:8443"},
		"platformProject":   {"kubebyon"},
		"platformInsecure":  {"on"},
		"defaultAccessMode": {"loadbalancer"},
		"edgeAddressType":   {"ExternalIP"},
		"apiBaseDomain":     {"K8s.Example.com"},
		"podCIDR":           {"10.100.0.0/16"},
		"serviceCIDR":       {"10.101.0.0/16"},
		"podCIDRPool":       {"10.160.0.0/12"},
		"podCIDRBlock":      {"22"},
		"allowedVersions":   {"v1.34.1, v1.33.5\r\nv1.32.9"},
		"nodePortMin":       {"31000"},
		"nodePortMax":       {"31999"},
		"backend":           {"kamaji"},
		"kamajiDataStore":   {"postgres-ha"},
		"publicAPIPort":     {"6443"},
		"packageMirror":     {"https://mirror.example.com/k8s"},
	}
}

// FormWith is form with some fields replaced.
func FormWith(form url.Values, kv ...string) url.Values {
	out := url.Values{}
	for k, v := range form {
		out[k] = append([]string(nil), v...)
	}
	for i := 0; i < len(kv); i += 2 {
		out.Set(kv[i], kv[i+1])
	}
	return out
}

// LoadSettings reads the stored settings.
func (b *Bundle) LoadSettings(t *testing.T) settings.Runtime {
	t.Helper()
	rt, err := settings.Load(context.Background(), queries.New(b.Pool), b.Box)
	require.NoError(t, err)
	return rt
}

// SettingsRow is the stored settings row as text; "" when there is none.
func (b *Bundle) SettingsRow(t *testing.T) string {
	t.Helper()
	var v string
	err := b.Pool.QueryRow(context.Background(), "SELECT value::text FROM settings WHERE key = 'runtime'").Scan(&v)
	if errors.Is(err, pgx.ErrNoRows) {
		return ""
	}
	require.NoError(t, err)
	return v
}

// GrantClusterWide gives user the verbs on resources in every namespace.
func GrantClusterWide(t *testing.T, k *testenv.Kube, user string, rules ...rbacv1.PolicyRule) {
	t.Helper()
	ctx := context.Background()
	admin := k.Client(t)
	_, err := admin.RbacV1().ClusterRoles().Create(ctx, &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: user}, Rules: rules}, metav1.CreateOptions{})
	require.NoError(t, err)
	_, err = admin.RbacV1().ClusterRoleBindings().Create(ctx, &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: user},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: user},
		Subjects:   []rbacv1.Subject{{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: user}},
	}, metav1.CreateOptions{})
	require.NoError(t, err)
	t.Cleanup(func() {
		_ = admin.RbacV1().ClusterRoleBindings().Delete(ctx, user, metav1.DeleteOptions{})
		_ = admin.RbacV1().ClusterRoles().Delete(ctx, user, metav1.DeleteOptions{})
	})
}
