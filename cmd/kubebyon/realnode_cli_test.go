//go:build linux

package main_test

import (
	"context"
	"fmt"
	"os"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubebyon/kubebyon/internal/testenv"
	"github.com/kubebyon/kubebyon/internal/vcluster"
	"github.com/kubebyon/kubebyon/queries"
)

// TestCLIOnRealNode: the command-line client as a user runs it, on their
// machine, against the platform with its edge: log in with an API key,
// create a cluster and wait for it, mint a join command and join the
// machine with it, wait for its node, merge the kubeconfig and use it
// with kubectl, drain the node, delete the cluster and wait until it is
// gone. The machine resolves the platform's names as a user's would, and
// every command's output goes into a transcript, logged at the end
// (go test -v -run TestCLIOnRealNode ./cmd/kubebyon/).
func TestCLIOnRealNode(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	p := startRealPlatform(t, "")
	carol := p.userConsole(t, "carol@example.com")
	key := carol.createAPIKey(t, p.server)
	machine := testenv.NewNode(t, testenv.NodeOptions{Name: "machine-cli", HostAliases: []string{platformName}})
	home := t.TempDir()

	var transcript strings.Builder
	defer func() { t.Logf("transcript:\n%s", transcript.String()) }()
	// shell runs a command in the machine, with the user's HOME (where
	// the CLI keeps its config and kubectl its kube config), and records
	// it and its output, the API key left out.
	shell := func(name string, args ...string) (string, error) {
		path := name
		if name == "kubebyon" {
			path = binary
		}
		cmd := machine.Command(ctx, path, args...)
		cmd.Env = append(cmd.Env, "HOME="+home)
		b, err := cmd.CombinedOutput()
		line := strings.ReplaceAll(strings.Join(append([]string{name}, args...), " "), key, "kbn_…")
		fmt.Fprintf(&transcript, "$ %s\n%s", line, b)
		return string(b), err
	}
	run := func(name string, args ...string) string {
		t.Helper()
		out, err := shell(name, args...)
		require.NoError(t, err, out)
		return out
	}

	out := run("kubebyon", "login", "--url", p.base, "--api-key", key)
	require.Equal(t, "Logged in to "+p.base+" as carol@example.com\n", out)

	// create --wait waits while the test plays Kamaji for the cluster.
	created := make(chan error, 1)
	var createOut string
	go func() {
		var err error
		createOut, err = shell("kubebyon", "clusters", "create", "charlie", "--kubernetes-version", "v1.34.2",
			"--public-access-mode", "nodeport", "--wait", "--timeout", "3m")
		created <- err
	}()
	var cl queries.Cluster
	require.Eventually(t, func() bool {
		err := p.pool.QueryRow(ctx, "SELECT id FROM clusters WHERE name = 'charlie'").Scan(&cl.ID)
		return err == nil
	}, time.Minute, 200*time.Millisecond, "the cluster is created")
	cl, err := queries.New(p.pool).ClusterGetByID(ctx, cl.ID)
	require.NoError(t, err)
	p.kamajiPlayer(t, cl)
	select {
	case err := <-created:
		require.NoError(t, err, createOut)
	case <-time.After(4 * time.Minute):
		t.Fatalf("kubebyon clusters create --wait did not end: %s", p.stderr)
	}
	require.Regexp(t, `(?m)^charlie\s+ready\s`, createOut)
	require.Regexp(t, `(?m)^charlie\s+ready\s`, run("kubebyon", "clusters", "list"))

	// The machine resolves the cluster's API host name to the edge, as
	// DNS would.
	cl, err = queries.New(p.pool).ClusterGetByID(ctx, cl.ID)
	require.NoError(t, err)
	hosts, err := os.OpenFile(machine.Path("/etc/hosts"), os.O_APPEND|os.O_WRONLY, 0)
	require.NoError(t, err)
	_, err = fmt.Fprintf(hosts, "%s\t%s.clusters.test\n", machine.HostIP, cl.Slug)
	require.NoError(t, err)
	require.NoError(t, hosts.Close())

	// The join command of a fresh single-use token, run as printed but
	// with the flags this kernel needs (joinCommand).
	out = run("kubebyon", "nodes", "join-command", "--cluster", "charlie")
	m := regexp.MustCompile(`^curl -fsSL ` + regexp.QuoteMeta(p.base) + `/join/(\S+) \| sudo sh\n$`).FindStringSubmatch(out)
	require.NotNil(t, m, out)
	joined := p.runJoin(t, machine, m[1])
	require.Contains(t, joined, "The node is Ready.", joined)
	fmt.Fprintf(&transcript, "$ curl -fsSL %s/join/%s | sudo sh   # with this kernel's flags\n…\n%s\n", p.base, m[1], lastLine(joined))

	run("kubebyon", "nodes", "wait", "machine-cli", "--cluster", "charlie", "--for", "ready", "--timeout", "3m")
	require.Regexp(t, `(?m)^machine-cli\s+Ready\s`, run("kubebyon", "nodes", "list", "--cluster", "charlie"))

	out = run("kubebyon", "clusters", "kubeconfig", "charlie")
	require.Equal(t, "Merged cluster charlie into "+home+"/.kube/config as context kubebyon-charlie (now current)\n", out)
	require.Regexp(t, `(?m)^machine-cli\s+Ready\s`, run("kubectl", "--context", "kubebyon-charlie", "get", "nodes"))

	out = run("kubebyon", "nodes", "drain", "machine-cli", "--cluster", "charlie", "--wait", "--timeout-seconds", "60")
	require.Equal(t, "Draining node machine-cli...\nNode machine-cli drained\n", out)
	require.Regexp(t, `(?m)^machine-cli\s+Ready,SchedulingDisabled\s`, run("kubectl", "get", "nodes"))

	run("kubebyon", "clusters", "delete", "charlie", "--yes")
	p.finalizeNamespace(t, vcluster.Namespace(cl))
	run("kubebyon", "clusters", "wait", "charlie", "--for", "deleted", "--timeout", "3m")
	out, err = shell("kubebyon", "clusters", "get", "charlie")
	require.Error(t, err, "the cluster is gone: %s", out)
}

// finalizeNamespace plays the host's namespace controller (the test host
// runs kube-apiserver alone) for the namespace the platform deletes: once
// it is being deleted, its finalizer is removed, and it goes.
func (p *realPlatform) finalizeNamespace(t testing.TB, name string) {
	t.Helper()
	ctx := context.Background()
	require.EventuallyWithT(t, func(ct *assert.CollectT) {
		ns, err := p.host.CoreV1().Namespaces().Get(ctx, name, metav1.GetOptions{})
		if !assert.NoError(ct, err) || !assert.NotNil(ct, ns.DeletionTimestamp, "namespace %s is being deleted", name) {
			return
		}
		ns.Spec.Finalizers = nil
		_, err = p.host.CoreV1().Namespaces().Finalize(ctx, ns, metav1.UpdateOptions{})
		assert.NoError(ct, err)
	}, 2*time.Minute, 500*time.Millisecond)
}

// lastLine is the last line of out.
func lastLine(out string) string {
	out = strings.TrimRight(out, "\n")
	return out[strings.LastIndex(out, "\n")+1:]
}
