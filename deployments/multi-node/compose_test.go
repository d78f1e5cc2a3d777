package multinode_test

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/compose-spec/compose-go/v2/cli"
	"github.com/compose-spec/compose-go/v2/types"
	"github.com/stretchr/testify/require"

	"github.com/kubebyon/kubebyon/internal/testenv"
)

// testKey is a well-formed KUBEBYON_SECRET_KEY, as the README makes one.
const testKey = "AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA="

// load reads compose.yaml as `docker compose` does from this folder with
// .env made from .env.example, the environment given added: compose-go
// checks it against the Compose specification's schema, interpolates and
// resolves the YAML anchors.
func load(t *testing.T, env ...string) (*types.Project, error) {
	t.Helper()
	opts, err := cli.NewProjectOptions([]string{"compose.yaml"},
		cli.WithWorkingDirectory("."),
		cli.WithEnv(env),
		cli.WithEnvFiles(".env.example"),
		cli.WithDotEnv,
	)
	require.NoError(t, err)
	return opts.LoadProject(context.Background())
}

// readmeRow is a row of the README's table of services.
type readmeRow struct {
	services []string
	image    string
	command  string
}

var (
	tableRow = regexp.MustCompile("(?m)^\\| (`[^|]+`) \\| `([^`]+)`(?: \\| (.+?))? \\|$")
	quoted   = regexp.MustCompile("`([^`]+)`")
)

// readmeServices reads the "What runs" table.
func readmeServices(t *testing.T) []readmeRow {
	t.Helper()
	b, err := os.ReadFile("README.md")
	require.NoError(t, err)
	_, rest, ok := strings.Cut(string(b), "## What runs")
	require.True(t, ok)
	table, _, _ := strings.Cut(rest, "\n\n- ")
	var rows []readmeRow
	for _, m := range tableRow.FindAllStringSubmatch(table, -1) {
		r := readmeRow{image: m[2], command: strings.Trim(m[3], "`")}
		for _, q := range quoted.FindAllStringSubmatch(m[1], -1) {
			r.services = append(r.services, q[1])
		}
		rows = append(rows, r)
	}
	return rows
}

// TestComposeFile checks compose.yaml against the Compose specification
// and against what the README says runs.
func TestComposeFile(t *testing.T) {
	t.Parallel()

	// .env.example as it is: the key is still to be generated.
	_, err := load(t)
	require.ErrorContains(t, err, "generate one with: head -c 32 /dev/urandom | base64")

	p, err := load(t, "KUBEBYON_SECRET_KEY="+testKey)
	require.NoError(t, err)
	require.Equal(t, "kubebyon", p.Name)

	// The kubebyon image's default tag is the release's, as the Helm
	// chart's appVersion is (make release sets both).
	release := chartAppVersion(t)
	rows := readmeServices(t)
	var named []string
	for _, r := range rows {
		for _, name := range r.services {
			named = append(named, name)
			s, ok := p.Services[name]
			require.True(t, ok, "the README names service %s", name)
			require.Equal(t, strings.ReplaceAll(r.image, "<version>", release), s.Image, name)
			if kubebyon, ok := strings.CutPrefix(r.command, "kubebyon "); ok {
				// The image's entrypoint runs kubebyon (or a shell that does).
				cmd := strings.Join(s.Command, " ")
				if len(s.Entrypoint) > 0 {
					require.Contains(t, cmd, "/usr/local/bin/kubebyon "+kubebyon, name)
				} else {
					require.Equal(t, kubebyon, cmd, name)
				}
			} else {
				require.Empty(t, s.Command, "%s runs its image's command", name)
			}
		}
	}
	require.ElementsMatch(t, p.ServiceNames(), named, "every service is in the README's table")

	// One database and one key for every process that opens the database;
	// the edge has neither (it reaches the platform through the API).
	const dbURL = "postgres://kubebyon:change-me@postgres:5432/kubebyon?sslmode=disable"
	for _, name := range []string{"migrate", "api-1", "api-2", "worker-1", "worker-2", "edge-token"} {
		env := p.Services[name].Environment
		require.Equal(t, dbURL, deref(env["DATABASE_URL"]), name)
		require.Equal(t, testKey, deref(env["KUBEBYON_SECRET_KEY"]), name)
		require.Equal(t, "http://localhost:8080", deref(env["KUBEBYON_BASE_URL"]), name)
		if name != "migrate" {
			dep, ok := p.Services[name].DependsOn["migrate"]
			require.True(t, ok, "%s waits for the migration", name)
			require.Equal(t, types.ServiceConditionCompletedSuccessfully, dep.Condition, name)
		}
	}
	require.Equal(t, types.ServiceConditionHealthy, p.Services["migrate"].DependsOn["postgres"].Condition)
	require.Equal(t, "no", p.Services["migrate"].Restart, "the migration runs once")
	edge := p.Services["edge"]
	require.NotContains(t, edge.Environment, "DATABASE_URL")
	require.NotContains(t, edge.Environment, "KUBEBYON_SECRET_KEY")
	require.Equal(t, "http://lb:8080", deref(edge.Environment["KUBEBYON_EDGE_PLATFORM_URL"]))
	require.Equal(t, types.ServiceConditionCompletedSuccessfully, edge.DependsOn["edge-token"].Condition)
	require.Equal(t, "/data/edge-token", deref(edge.Environment["KUBEBYON_EDGE_TOKEN_FILE"]))
	require.Contains(t, strings.Join(p.Services["edge-token"].Command, " "), "> /data/edge-token")
	require.Equal(t, 65536, edge.Ulimits["nofile"].Single, "room for HAProxy's descriptors")

	// The API replicas run no edge of their own, and trust the load
	// balancer's address only.
	for _, name := range []string{"api-1", "api-2"} {
		env := p.Services[name].Environment
		require.Empty(t, deref(env["KUBEBYON_EDGE"]), name)
		require.Equal(t, "172.28.0.10/32", deref(env["KUBEBYON_TRUSTED_PROXIES"]), name)
	}
	require.Equal(t, "172.28.0.10", p.Services["lb"].Networks["default"].Ipv4Address)

	var published []string
	for _, s := range p.Services {
		for _, port := range s.Ports {
			published = append(published, fmt.Sprintf("%s:%s->%d", s.Name, port.Published, port.Target))
		}
	}
	slices.Sort(published)
	require.Equal(t, []string{"edge:443->8443", "edge:8132->8132", "lb:8080->8080"}, published)

	// Every variable of .env.example is in the README's settings table.
	example, err := os.ReadFile(".env.example")
	require.NoError(t, err)
	readme, err := os.ReadFile("README.md")
	require.NoError(t, err)
	for _, m := range regexp.MustCompile(`(?m)^([A-Z_]+)=`).FindAllStringSubmatch(string(example), -1) {
		require.Contains(t, string(readme), "`"+m[1]+"`", "the README explains %s", m[1])
	}
}

// chartAppVersion is the Helm chart's appVersion: the release's tag.
func chartAppVersion(t *testing.T) string {
	t.Helper()
	b, err := os.ReadFile("../helm/kubebyon/Chart.yaml")
	require.NoError(t, err)
	m := regexp.MustCompile(`(?m)^appVersion: "(v\d+\.\d+\.\d+)"$`).FindSubmatch(b)
	require.NotNil(t, m, "the chart's appVersion is a release tag")
	return string(m[1])
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}

// TestLoadBalancerConfig has HAProxy check haproxy.cfg, and checks that it
// balances over the API services, health-checked on /readyz.
func TestLoadBalancerConfig(t *testing.T) {
	t.Parallel()
	out, err := exec.Command(testenv.HAProxy(t), "-c", "-f", "haproxy.cfg").CombinedOutput()
	require.NoError(t, err, "%s", out)
	require.Contains(t, string(out), "Configuration file is valid")

	cfg, err := os.ReadFile("haproxy.cfg")
	require.NoError(t, err)
	require.Contains(t, string(cfg), "option httpchk GET /readyz")
	var servers []string
	for _, m := range regexp.MustCompile(`(?m)^\s+server (\S+) (\S+):8080$`).FindAllStringSubmatch(string(cfg), -1) {
		require.Equal(t, m[1], m[2])
		servers = append(servers, m[1])
	}
	p, err := load(t, "KUBEBYON_SECRET_KEY="+testKey)
	require.NoError(t, err)
	var api []string
	for name, s := range p.Services {
		if slices.Contains(s.Command, "serve") {
			api = append(api, name)
		}
	}
	require.ElementsMatch(t, api, servers)
}
