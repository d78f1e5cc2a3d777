package clusteraccess_test

import (
	"testing"

	"github.com/stretchr/testify/require"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

	"github.com/kubebyon/kubebyon/internal/clusteraccess"
)

// adminKubeconfig is an admin kubeconfig as a backend writes it, with a
// client certificate and key, and a second cluster when other is set.
func adminKubeconfig(t *testing.T, current string, other bool) []byte {
	t.Helper()
	cfg := clientcmdapi.NewConfig()
	cfg.Clusters["vc"] = &clientcmdapi.Cluster{Server: "https://vc.internal:443", CertificateAuthorityData: []byte("vc-ca"), TLSServerName: "internal"}
	if other {
		cfg.Clusters["other"] = &clientcmdapi.Cluster{Server: "https://other:443", CertificateAuthorityData: []byte("other-ca")}
	}
	cfg.AuthInfos["admin"] = &clientcmdapi.AuthInfo{ClientCertificateData: []byte("admin-cert"), ClientKeyData: []byte("admin-key"), Token: "admin-token"}
	cfg.Contexts["vc"] = &clientcmdapi.Context{Cluster: "vc", AuthInfo: "admin"}
	cfg.CurrentContext = current
	b, err := clientcmd.Write(*cfg)
	require.NoError(t, err)
	return b
}

func TestKubeconfig(t *testing.T) {
	t.Parallel()
	noCA := clientcmdapi.NewConfig()
	noCA.Clusters["vc"] = &clientcmdapi.Cluster{Server: "https://vc", CertificateAuthority: "/etc/ca.crt"}
	noCABytes, err := clientcmd.Write(*noCA)
	require.NoError(t, err)

	tests := []struct {
		name                               string
		admin                              []byte
		server, context, user, token, want string
	}{
		{name: "current context's cluster", admin: adminKubeconfig(t, "vc", true), server: "https://c1.example.test", context: "c1", user: "ann", token: "tok"},
		{name: "only cluster", admin: adminKubeconfig(t, "", false), server: "https://c1.example.test", context: "c1", user: "ann", token: "tok"},
		{name: "two clusters, none current", admin: adminKubeconfig(t, "", true), server: "https://c1", context: "c1", user: "ann", token: "tok", want: "no current context and 2 clusters"},
		{name: "current context missing", admin: adminKubeconfig(t, "gone", false), server: "https://c1", context: "c1", user: "ann", token: "tok", want: `no context "gone"`},
		{name: "CA as a file", admin: noCABytes, server: "https://c1", context: "c1", user: "ann", token: "tok", want: "no inline certificate-authority-data"},
		{name: "not a kubeconfig", admin: []byte("{"), server: "https://c1", context: "c1", user: "ann", token: "tok", want: "parse the admin kubeconfig"},
		{name: "no token", admin: adminKubeconfig(t, "vc", false), server: "https://c1", context: "c1", user: "ann", want: "no token"},
		{name: "no server", admin: adminKubeconfig(t, "vc", false), context: "c1", user: "ann", token: "tok", want: "no server"},
		{name: "no user name", admin: adminKubeconfig(t, "vc", false), server: "https://c1", context: "c1", token: "tok", want: "no context or user name"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			out, err := clusteraccess.Kubeconfig(tt.admin, tt.server, tt.context, tt.user, tt.token)
			if tt.want != "" {
				require.ErrorContains(t, err, tt.want)
				return
			}
			require.NoError(t, err)
			cfg, err := clientcmd.Load(out)
			require.NoError(t, err)
			require.Equal(t, tt.context, cfg.CurrentContext)
			require.Len(t, cfg.Contexts, 1)
			require.Equal(t, tt.context, cfg.Contexts[tt.context].Cluster)
			require.Equal(t, tt.user, cfg.Contexts[tt.context].AuthInfo)
			require.Len(t, cfg.Clusters, 1)
			cluster := cfg.Clusters[tt.context]
			require.Equal(t, tt.server, cluster.Server)
			require.Equal(t, []byte("vc-ca"), cluster.CertificateAuthorityData)
			require.Empty(t, cluster.TLSServerName, "nothing but the CA comes from the admin kubeconfig")
			require.Len(t, cfg.AuthInfos, 1)
			user := cfg.AuthInfos[tt.user]
			require.Equal(t, tt.token, user.Token)
			require.Empty(t, user.ClientCertificateData)
			require.Empty(t, user.ClientKeyData)
			require.NotContains(t, string(out), "admin-")
		})
	}
}
