package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
)

// envOf is an environment of only vars.
func envOf(vars map[string]string) Env { return func(k string) string { return vars[k] } }

// TestConfigPrecedence: the config file, then the environment, then the
// flags, each over the one before, field by field; --config names another
// file; nothing set says to log in.
func TestConfigPrecedence(t *testing.T) {
	home := t.TempDir()
	env := map[string]string{"HOME": home}
	path, err := configPath(envOf(env), "")
	require.NoError(t, err)
	require.Equal(t, filepath.Join(home, ".config", "kubebyon", "config.yaml"), path)

	_, err = settings{}.resolve(envOf(env))
	require.ErrorIs(t, err, errNotLoggedIn)
	require.Contains(t, err.Error(), "run kubebyon login")

	require.NoError(t, saveConfig(path, Config{URL: "https://file.example/", APIKey: "kbn_file"}))
	info, err := os.Stat(path)
	require.NoError(t, err)
	require.Equal(t, os.FileMode(0o600), info.Mode().Perm(), "it holds the key")
	info, err = os.Stat(filepath.Dir(path))
	require.NoError(t, err)
	require.Equal(t, os.FileMode(0o700), info.Mode().Perm())

	c, err := settings{}.resolve(envOf(env))
	require.NoError(t, err)
	require.Equal(t, Config{URL: "https://file.example", APIKey: "kbn_file"}, c, "the trailing slash goes")

	env["KUBEBYON_API_KEY"] = "kbn_env"
	c, err = settings{}.resolve(envOf(env))
	require.NoError(t, err)
	require.Equal(t, Config{URL: "https://file.example", APIKey: "kbn_env"}, c)

	env["KUBEBYON_URL"] = "https://env.example"
	c, err = settings{url: "https://flag.example"}.resolve(envOf(env))
	require.NoError(t, err)
	require.Equal(t, Config{URL: "https://flag.example", APIKey: "kbn_env"}, c)
	c, err = settings{apiKey: "kbn_flag"}.resolve(envOf(env))
	require.NoError(t, err)
	require.Equal(t, Config{URL: "https://env.example", APIKey: "kbn_flag"}, c)

	// XDG_CONFIG_HOME moves the default file.
	xdg := t.TempDir()
	path, err = configPath(envOf(map[string]string{"HOME": home, "XDG_CONFIG_HOME": xdg}), "")
	require.NoError(t, err)
	require.Equal(t, filepath.Join(xdg, "kubebyon", "config.yaml"), path)

	other := filepath.Join(t.TempDir(), "other.yaml")
	require.NoError(t, saveConfig(other, Config{URL: "https://other.example", APIKey: "kbn_other"}))
	c, err = settings{configFile: other}.resolve(envOf(map[string]string{"HOME": home}))
	require.NoError(t, err)
	require.Equal(t, Config{URL: "https://other.example", APIKey: "kbn_other"}, c)
	_, err = settings{configFile: filepath.Join(t.TempDir(), "missing.yaml")}.resolve(envOf(map[string]string{"HOME": home}))
	require.ErrorContains(t, err, "no such file", "a named file must exist")
}

// kubeconfigOf is a kubeconfig with one cluster, user and context of name.
func kubeconfigOf(t *testing.T, name, server, token string) []byte {
	t.Helper()
	cfg := clientcmdapi.NewConfig()
	cfg.Clusters[name] = &clientcmdapi.Cluster{Server: server, CertificateAuthorityData: []byte("ca of " + name)}
	cfg.AuthInfos[name+"-admin"] = &clientcmdapi.AuthInfo{Token: token}
	cfg.Contexts[name] = &clientcmdapi.Context{Cluster: name, AuthInfo: name + "-admin"}
	cfg.CurrentContext = name
	b, err := clientcmd.Write(*cfg)
	require.NoError(t, err)
	return b
}

// TestMergeKubeconfig: into a kube config with another context both stay,
// ours current and named kubebyon-<name>; merging again replaces ours; a
// missing file is made, mode 0600.
func TestMergeKubeconfig(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "config")
	require.NoError(t, os.WriteFile(path, kubeconfigOf(t, "work", "https://work.example", "work-token"), 0o644))

	require.NoError(t, mergeKubeconfig(path, "shop", kubeconfigOf(t, "vcluster", "https://shop-1.example", "first")))
	cfg, err := clientcmd.LoadFromFile(path)
	require.NoError(t, err)
	require.Equal(t, "kubebyon-shop", cfg.CurrentContext)
	require.Len(t, cfg.Contexts, 2)
	require.Equal(t, "https://work.example", cfg.Clusters["work"].Server, "the other context stays")
	require.Equal(t, "work-token", cfg.AuthInfos["work-admin"].Token)
	require.Equal(t, "kubebyon-shop", cfg.Contexts["kubebyon-shop"].Cluster)
	require.Equal(t, "kubebyon-shop", cfg.Contexts["kubebyon-shop"].AuthInfo)
	require.Equal(t, "https://shop-1.example", cfg.Clusters["kubebyon-shop"].Server)
	require.Equal(t, []byte("ca of vcluster"), cfg.Clusters["kubebyon-shop"].CertificateAuthorityData)
	require.Equal(t, "first", cfg.AuthInfos["kubebyon-shop"].Token)
	info, err := os.Stat(path)
	require.NoError(t, err)
	require.Equal(t, os.FileMode(0o600), info.Mode().Perm(), "it holds credentials")

	// Merged again (the key rotated, say): ours replaced, nothing added.
	cfg.CurrentContext = "work"
	require.NoError(t, clientcmd.WriteToFile(*cfg, path))
	require.NoError(t, mergeKubeconfig(path, "shop", kubeconfigOf(t, "vcluster", "https://shop-2.example", "second")))
	cfg, err = clientcmd.LoadFromFile(path)
	require.NoError(t, err)
	require.Equal(t, "kubebyon-shop", cfg.CurrentContext)
	require.Len(t, cfg.Contexts, 2)
	require.Len(t, cfg.Clusters, 2)
	require.Len(t, cfg.AuthInfos, 2)
	require.Equal(t, "https://shop-2.example", cfg.Clusters["kubebyon-shop"].Server)
	require.Equal(t, "second", cfg.AuthInfos["kubebyon-shop"].Token)

	// A missing file (and directory) is made.
	fresh := filepath.Join(dir, "new", ".kube", "config")
	require.NoError(t, mergeKubeconfig(fresh, "shop", kubeconfigOf(t, "vcluster", "https://shop-2.example", "second")))
	cfg, err = clientcmd.LoadFromFile(fresh)
	require.NoError(t, err)
	require.Equal(t, "kubebyon-shop", cfg.CurrentContext)
	require.Len(t, cfg.Contexts, 1)
}

// TestDefaultKubeconfig: the first of $KUBECONFIG, else ~/.kube/config.
func TestDefaultKubeconfig(t *testing.T) {
	p, err := defaultKubeconfig(envOf(map[string]string{"HOME": "/home/u"}))
	require.NoError(t, err)
	require.Equal(t, filepath.Join("/home/u", ".kube", "config"), p)
	p, err = defaultKubeconfig(envOf(map[string]string{"HOME": "/home/u", "KUBECONFIG": "/a/one" + string(filepath.ListSeparator) + "/a/two"}))
	require.NoError(t, err)
	require.Equal(t, "/a/one", p)
}

// TestOutput: tables align their columns and mark empty cells; JSON is the
// API's objects as they came, fields this client does not know included.
func TestOutput(t *testing.T) {
	now := time.Date(2025, 5, 1, 12, 0, 0, 0, time.UTC)
	var cl Cluster
	apiJSON := `{"id":7,"name":"shop","status":"ready","kubernetes_version":"v1.34.0","backend":"vcluster",` +
		`"public_access_mode":"nodeport","endpoint":"shop-x.clusters.example","created_at":"2025-05-01T09:00:00Z","future_field":{"a":1}}`
	require.NoError(t, json.Unmarshal([]byte(apiJSON), &cl))
	pending := Cluster{Name: "new-one", Status: "pending", CreatedAt: now.Add(-30 * time.Second)}

	a := &App{Now: func() time.Time { return now }}
	var out bytes.Buffer
	a.Stdout = &out
	require.NoError(t, a.printClusters(outputTable, []Cluster{cl, pending}, false))
	require.Equal(t, strings.Join([]string{
		"NAME      STATUS    VERSION   BACKEND    ACCESS     ENDPOINT                  AGE",
		"shop      ready     v1.34.0   vcluster   nodeport   shop-x.clusters.example   3h",
		"new-one   pending   -         -          -          -                         30s",
		"",
	}, "\n"), out.String())

	out.Reset()
	require.NoError(t, a.printClusters(outputJSON, []Cluster{cl}, false))
	require.JSONEq(t, "["+apiJSON+"]", out.String())
	out.Reset()
	require.NoError(t, a.printClusters(outputJSON, nil, false))
	require.JSONEq(t, "[]", out.String(), "no clusters is an empty list, not null")

	out.Reset()
	require.NoError(t, printTable(&out, nodeHeader, [][]string{nodeRow(now, Node{Name: "w1", Status: "Ready", Unschedulable: true,
		Roles: []string{}, KubeletVersion: "v1.34.0", InternalIP: "10.0.0.5", OS: "linux", Arch: "amd64", CreatedAt: now.Add(-72 * time.Hour)})}))
	require.Equal(t, "NAME   STATUS                     ROLES   VERSION   INTERNAL-IP   OS/ARCH       AGE\n"+
		"w1     Ready,SchedulingDisabled   -       v1.34.0   10.0.0.5      linux/amd64   3d\n", out.String())

	require.Error(t, checkOutput("yaml"))
}

// TestUsageErrors: a command used wrongly is exit code 2, before anything
// is asked of the platform; not logged in is 1.
func TestUsageErrors(t *testing.T) {
	env := envOf(map[string]string{"HOME": t.TempDir()})
	for _, args := range [][]string{
		{"clusters", "nope"},
		{"clusters", "delete", "shop"},
		{"clusters", "get"},
		{"clusters", "list", "-o", "yaml"},
		{"clusters", "list", "--bogus"},
		{"tokens", "create"},
		{"tokens", "create", "--cluster", "shop", "--lifetime", "2h"},
		{"nodes", "wait", "w1", "--cluster", "shop", "--for", "gone"},
		{"login"},
	} {
		var stdout, stderr bytes.Buffer
		code := Run(context.Background(), args, env, nil, &stdout, &stderr)
		require.Equal(t, 2, code, "%v: %s", args, stderr.String())
		require.True(t, strings.HasPrefix(stderr.String(), "kubebyon: "), stderr.String())
	}
	var stdout, stderr bytes.Buffer
	require.Equal(t, 1, Run(context.Background(), []string{"clusters", "list"}, env, nil, &stdout, &stderr))
	require.Contains(t, stderr.String(), "run kubebyon login")
}

// TestAPIErrorMessage: the API's message, then each field's error.
func TestAPIErrorMessage(t *testing.T) {
	e := apiError(422, []byte(`{"error":{"code":"invalid","message":"The cluster cannot be created.","fields":{"name":"Use lower-case letters.","backend":"Not in your plan."}}}`))
	require.Equal(t, "The cluster cannot be created.\n  backend: Not in your plan.\n  name: Use lower-case letters.", e.Error())
	require.Equal(t, "the platform answered 502 Bad Gateway: <html>", apiError(502, []byte("<html>")).Error())
}
