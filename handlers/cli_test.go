package handlers_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

	"github.com/kubebyon/kubebyon/handlers/handlerstest"
	"github.com/kubebyon/kubebyon/internal/cli"
)

// apiKeyValue finds API keys, to keep them out of the test's log.
var apiKeyValue = regexp.MustCompile(`kbn_[a-z2-7]{8}_[a-z2-7]{32}`)

// cliRun is one kubebyon client command, run in process with a home of its
// own: its exit code, stdout and stderr.
type cliRun func(args ...string) (int, string, string)

func newCLI(t *testing.T, home string) cliRun {
	env := map[string]string{
		"HOME":            home,
		"XDG_CONFIG_HOME": filepath.Join(home, ".config"),
		"KUBECONFIG":      filepath.Join(home, ".kube", "config"),
	}
	return func(args ...string) (int, string, string) {
		t.Helper()
		var stdout, stderr bytes.Buffer
		a := &cli.App{Env: func(k string) string { return env[k] }, Stdout: &stdout, Stderr: &stderr, PollInterval: 50e6}
		code := a.Run(context.Background(), args)
		// A transcript, for go test -v (the key redacted).
		t.Logf("$ kubebyon %s\n%s%s(exit %d)", apiKeyValue.ReplaceAllString(strings.Join(args, " "), "$$KUBEBYON_API_KEY"), stdout.String(), stderr.String(), code)
		return code, stdout.String(), stderr.String()
	}
}

// TestCLI: the kubebyon client commands against the platform: login saves
// the key; clusters are created, listed, waited for, deleted (only with
// --yes); tokens and join commands are made; the kubeconfig is merged into
// the user's kube config and reaches the cluster; the API's errors are
// printed.
func TestCLI(t *testing.T) {
	t.Parallel()
	b := handlerstest.Setup(t)
	c, email := b.SignedUpUser(t, "cli")
	key := c.CreateKey("cli")
	home := t.TempDir()
	run := newCLI(t, home)

	code, out, errOut := run("login", "--url", b.Server.URL, "--api-key", key)
	require.Equal(t, 0, code, errOut)
	require.Equal(t, "Logged in to "+b.Server.URL+" as "+email+"\n", out)
	info, err := os.Stat(filepath.Join(home, ".config", "kubebyon", "config.yaml"))
	require.NoError(t, err)
	require.Equal(t, os.FileMode(0o600), info.Mode().Perm())

	// A ready cluster whose control plane is a real apiserver (it connects
	// the host, which creating a cluster needs too).
	_, virt := b.ReadyVirtualCluster(t, c, "ready-one")

	code, out, errOut = run("clusters", "create", "from-cli", "--description", "made by the CLI")
	require.Equal(t, 0, code, errOut)
	require.Contains(t, out, "from-cli")
	code, out, errOut = run("clusters", "list", "-o", "json")
	require.Equal(t, 0, code, errOut)
	var list []map[string]any
	require.NoError(t, json.Unmarshal([]byte(out), &list), out)
	byName := map[string]map[string]any{}
	for _, cl := range list {
		byName[cl["name"].(string)] = cl
	}
	require.Equal(t, "pending", byName["from-cli"]["status"], "the harness plays no workers")
	require.Equal(t, "made by the CLI", byName["from-cli"]["description"])
	require.Equal(t, "ready", byName["ready-one"]["status"])
	code, out, errOut = run("clusters", "list")
	require.Equal(t, 0, code, errOut)
	require.Regexp(t, `(?m)^NAME\s+STATUS`, out)
	require.Regexp(t, `(?m)^from-cli\s+pending\s`, out)
	// Every page: the list follows the API's next cursor.
	for i := range 100 {
		b.InsertCluster(t, b.UserID(t, email), fmt.Sprintf("bulk-%03d", i), fmt.Sprintf("bulk-%03d-x1y2z3", i), "v1.34.0", "nodeport", "ready")
	}
	code, out, errOut = run("clusters", "list", "-o", "json")
	require.Equal(t, 0, code, errOut)
	list = nil
	require.NoError(t, json.Unmarshal([]byte(out), &list), out)
	require.Len(t, list, 102, "two pages of clusters")
	require.Equal(t, "bulk-000", list[len(list)-3]["name"], "newest first, across pages")

	code, out, errOut = run("clusters", "wait", "ready-one", "--for", "ready", "--timeout", "30s")
	require.Equal(t, 0, code, errOut)
	require.Equal(t, "Cluster ready-one is ready\n", out)
	code, _, errOut = run("clusters", "wait", "from-cli", "--for", "ready", "--timeout", "300ms")
	require.Equal(t, 1, code)
	require.Contains(t, errOut, "cluster from-cli is not ready after 300ms (status pending)")

	code, out, errOut = run("tokens", "create", "--cluster", "ready-one", "--description", "ci", "--lifetime", "24h", "--max-uses", "0")
	require.Equal(t, 0, code, errOut)
	require.Contains(t, out, "/join/")
	require.Contains(t, out, "Machines: any number")

	code, out, errOut = run("nodes", "join-command", "--cluster", "ready-one")
	require.Equal(t, 0, code, errOut)
	require.Regexp(t, `^curl -fsSL `+b.Server.URL+`/join/[a-z0-9]{6}\.[a-z0-9]{16} \| sudo sh\n$`, out, "one line, for scripts")

	code, out, errOut = run("nodes", "list", "--cluster", "ready-one", "-o", "json")
	require.Equal(t, 0, code, errOut)
	require.JSONEq(t, "[]", out, "no machine joined")

	// Merged into a kube config that has another context already.
	kubeconfig := filepath.Join(home, "config")
	other := clientcmdapi.NewConfig()
	other.Clusters["work"] = &clientcmdapi.Cluster{Server: "https://work.example"}
	other.AuthInfos["work"] = &clientcmdapi.AuthInfo{Token: "work"}
	other.Contexts["work"] = &clientcmdapi.Context{Cluster: "work", AuthInfo: "work"}
	other.CurrentContext = "work"
	require.NoError(t, clientcmd.WriteToFile(*other, kubeconfig))
	code, out, errOut = run("clusters", "kubeconfig", "ready-one", "--kubeconfig", kubeconfig)
	require.Equal(t, 0, code, errOut)
	require.Contains(t, out, "kubebyon-ready-one")
	merged, err := clientcmd.LoadFromFile(kubeconfig)
	require.NoError(t, err)
	require.Equal(t, "kubebyon-ready-one", merged.CurrentContext)
	require.Contains(t, merged.Contexts, "work", "the other context stays")
	// The test's endpoint (<slug>.clusters.test) names no real host: point
	// it at the virtual apiserver, whose CA and credentials are those merged.
	virtCfg, err := clientcmd.Load(virt.Kubeconfig(t))
	require.NoError(t, err)
	for _, entry := range virtCfg.Clusters {
		merged.Clusters["kubebyon-ready-one"].Server = entry.Server
	}
	rest, err := clientcmd.NewDefaultClientConfig(*merged, nil).ClientConfig()
	require.NoError(t, err)
	kube, err := kubernetes.NewForConfig(rest)
	require.NoError(t, err)
	nss, err := kube.CoreV1().Namespaces().List(context.Background(), metav1.ListOptions{})
	require.NoError(t, err)
	require.NotEmpty(t, nss.Items)

	code, out, errOut = run("clusters", "kubeconfig", "ready-one", "--print")
	require.Equal(t, 0, code, errOut)
	require.Contains(t, out, "apiVersion: v1")

	// Deleting needs --yes: without it nothing is asked of the platform.
	code, _, errOut = run("clusters", "delete", "from-cli")
	require.Equal(t, 2, code)
	require.Contains(t, errOut, "--yes")
	code, out, errOut = run("clusters", "get", "from-cli", "-o", "json")
	require.Equal(t, 0, code, errOut)
	require.Contains(t, out, `"status": "pending"`)
	code, out, errOut = run("clusters", "delete", "from-cli", "--yes")
	require.Equal(t, 0, code, errOut)
	require.Equal(t, "Cluster from-cli is being deleted\n", out)
	code, out, errOut = run("clusters", "get", "from-cli")
	require.Equal(t, 0, code, errOut)
	require.Regexp(t, `(?m)^from-cli\s+deleting\s`, out)

	// The API's errors: a bad key, a field the API refuses.
	code, _, errOut = run("clusters", "list", "--api-key", "kbn_not-a-key")
	require.Equal(t, 1, code)
	r := b.APICall(t, "GET", "/api/v1/clusters", "kbn_not-a-key", "")
	message := handlerstest.DecodeAs[handlerstest.APIErrorJSON](t, r).Error.Message
	require.Equal(t, "kubebyon: "+message+"\n", errOut)
	code, _, errOut = run("login", "--url", b.Server.URL, "--api-key", "kbn_not-a-key")
	require.Equal(t, 1, code)
	require.Contains(t, errOut, message)
	code, _, errOut = run("clusters", "create", "Bad_Name")
	require.Equal(t, 1, code)
	require.True(t, strings.HasPrefix(errOut, "kubebyon: "), errOut)
	require.Contains(t, errOut, "\n  name: ", "each field's error on a line")
}
