package singlenode_test

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/moby/buildkit/frontend/dockerfile/instructions"
	"github.com/moby/buildkit/frontend/dockerfile/parser"
	"github.com/stretchr/testify/require"
)

// root is the repository, where the Dockerfile is built from.
const root = "../.."

// TestDockerfile reads the Dockerfile with BuildKit's own parser (what
// `docker build` runs) and checks the image it describes: the three
// stages, Go as go.mod asks, and a final stage that runs kubebyon as the
// non-root user 10001 owning /data, with the ports, volume, health check
// and command the single-node README and the Helm chart count on.
func TestDockerfile(t *testing.T) {
	t.Parallel()
	f, err := os.Open(filepath.Join(root, "Dockerfile"))
	require.NoError(t, err)
	defer f.Close()
	ast, err := parser.Parse(f)
	require.NoError(t, err)
	for _, w := range ast.Warnings {
		t.Errorf("Dockerfile: %s (line %d)", w.Short, w.Location.Start.Line)
	}
	stages, _, err := instructions.Parse(ast.AST, nil)
	require.NoError(t, err)
	require.Len(t, stages, 3)
	assets, build, final := stages[0], stages[1], stages[2]
	require.Equal(t, "assets", assets.Name)
	require.Equal(t, "build", build.Name)

	// The build stage's Go is the one go.mod names.
	gomod, err := os.ReadFile(filepath.Join(root, "go.mod"))
	require.NoError(t, err)
	goVersion := regexp.MustCompile(`(?m)^go (\d+\.\d+)`).FindSubmatch(gomod)
	require.NotNil(t, goVersion)
	require.Equal(t, "golang:"+string(goVersion[1])+"-bookworm", build.BaseName)
	require.Contains(t, runs(build), `make build VERSION="$VERSION"`, "the binary is built as make build builds it")

	require.Equal(t, "debian:bookworm-slim", final.BaseName)
	var (
		user, workdirOwner string
		entrypoint, cmd    []string
		health             []string
		exposed, volumes   []string
		env                = map[string]string{}
		copiedBinary       bool
		licensed           bool
	)
	for _, c := range final.Commands {
		switch c := c.(type) {
		case *instructions.UserCommand:
			user = c.User
		case *instructions.EntrypointCommand:
			entrypoint = c.CmdLine
		case *instructions.CmdCommand:
			cmd = c.CmdLine
		case *instructions.HealthCheckCommand:
			health = c.Health.Test
		case *instructions.ExposeCommand:
			exposed = append(exposed, c.Ports...)
		case *instructions.VolumeCommand:
			volumes = append(volumes, c.Volumes...)
		case *instructions.EnvCommand:
			for _, kv := range c.Env {
				env[kv.Key] = kv.Value
			}
		case *instructions.CopyCommand:
			if c.From == "build" && strings.Join(c.SourcePaths, " ") == "/src/bin/kubebyon" && c.DestPath == "/usr/local/bin/kubebyon" {
				copiedBinary = true
			}
		case *instructions.LabelCommand:
			for _, kv := range c.Labels {
				if kv.Key == "org.opencontainers.image.licenses" && strings.Trim(kv.Value, `"`) == "Apache-2.0" {
					licensed = true
				}
			}
		case *instructions.RunCommand:
			if strings.Contains(strings.Join(c.CmdLine, " "), "chown kubebyon:kubebyon /data") {
				workdirOwner = "kubebyon"
			}
		}
	}
	finalRuns := runs(final)
	require.Equal(t, "kubebyon", user, "the image runs as its own user, never root")
	require.Contains(t, finalRuns, "--uid 10001 --gid kubebyon", "user 10001, as the Helm chart's runAsUser and the README's chown say")
	require.Equal(t, "kubebyon", workdirOwner, "/data belongs to that user")
	require.True(t, copiedBinary, "the binary comes from the build stage")
	require.True(t, licensed, "the license label names the LICENSE file's license")
	license, err := os.ReadFile(filepath.Join(root, "LICENSE"))
	require.NoError(t, err)
	require.Contains(t, string(license), "Apache License\n                           Version 2.0")
	require.Equal(t, []string{"/usr/bin/tini", "--", "/usr/local/bin/kubebyon"}, entrypoint)
	require.Equal(t, []string{"serve", "--migrate"}, cmd)
	require.Equal(t, []string{"CMD-SHELL", "curl -fsS http://127.0.0.1:8080/readyz || exit 1"}, health)
	require.ElementsMatch(t, []string{"8080", "8443", "8132"}, exposed)
	require.Equal(t, []string{"/data"}, volumes)
	require.Equal(t, "/data", env["KUBEBYON_DATA_DIR"])
	require.Equal(t, "embedded", env["KUBEBYON_EDGE"])
	for _, pkg := range []string{"postgresql-15", "haproxy", "tini", "curl", "ca-certificates"} {
		require.Contains(t, finalRuns, pkg, "the final stage installs %s", pkg)
	}
}

// runs is every RUN of a stage, joined.
func runs(s instructions.Stage) string {
	var out []string
	for _, c := range s.Commands {
		if r, ok := c.(*instructions.RunCommand); ok {
			out = append(out, strings.Join(r.CmdLine, " "))
		}
	}
	return strings.Join(out, "\n")
}
