package singlenode_test

import (
	"context"
	"fmt"
	"os"
	"regexp"
	"testing"

	"github.com/compose-spec/compose-go/v2/cli"
	"github.com/compose-spec/compose-go/v2/types"
	"github.com/stretchr/testify/require"
)

// TestComposeFile loads compose.yaml as `docker compose` does, with the
// variables the README's command sets, through the Compose specification's
// loader (compose-go checks it against the specification's schema), and
// checks that it runs what the README says.
func TestComposeFile(t *testing.T) {
	t.Parallel()
	const key = "AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA="
	load := func(env ...string) (*types.Project, error) {
		opts, err := cli.NewProjectOptions([]string{"compose.yaml"},
			cli.WithName("single-node"), cli.WithWorkingDirectory("."), cli.WithEnv(env))
		require.NoError(t, err)
		return opts.LoadProject(context.Background())
	}

	_, err := load("KUBEBYON_SECRET_KEY=" + key)
	require.ErrorContains(t, err, "set POSTGRES_PASSWORD")
	_, err = load("POSTGRES_PASSWORD=pw")
	require.ErrorContains(t, err, "generate one with: head -c 32 /dev/urandom | base64")

	p, err := load("POSTGRES_PASSWORD=pw", "KUBEBYON_SECRET_KEY="+key)
	require.NoError(t, err)
	require.ElementsMatch(t, []string{"postgres", "kubebyon"}, p.ServiceNames())

	readme, err := os.ReadFile("README.md")
	require.NoError(t, err)
	pg := p.Services["postgres"]
	require.Equal(t, "postgres:15", pg.Image)
	require.Contains(t, string(readme), "official `postgres:15` image")

	kb := p.Services["kubebyon"]
	// The release's tag by default (the Helm chart's appVersion: make
	// release sets both), or the one KUBEBYON_VERSION names.
	chart, err := os.ReadFile("../helm/kubebyon/Chart.yaml")
	require.NoError(t, err)
	appVersion := regexp.MustCompile(`(?m)^appVersion: "(v\d+\.\d+\.\d+)"$`).FindSubmatch(chart)
	require.NotNil(t, appVersion, "the chart's appVersion is a release tag")
	require.Equal(t, "ghcr.io/kubebyon/kubebyon:"+string(appVersion[1]), kb.Image)
	tagged, err := load("POSTGRES_PASSWORD=pw", "KUBEBYON_SECRET_KEY="+key, "KUBEBYON_VERSION=v9.8.7")
	require.NoError(t, err)
	require.Equal(t, "ghcr.io/kubebyon/kubebyon:v9.8.7", tagged.Services["kubebyon"].Image)
	require.Equal(t, types.ShellCommand{"serve", "--migrate"}, kb.Command)
	require.Contains(t, string(readme), "`serve --migrate` (the image's default command) applies pending database\nmigrations at start")
	require.Equal(t, "postgres://kubebyon:pw@postgres:5432/kubebyon?sslmode=disable", *kb.Environment["DATABASE_URL"])
	require.Equal(t, key, *kb.Environment["KUBEBYON_SECRET_KEY"])
	require.Equal(t, types.ServiceConditionHealthy, kb.DependsOn["postgres"].Condition)

	// The README's command sets the two variables the file requires.
	require.Contains(t, string(readme), "POSTGRES_PASSWORD=... KUBEBYON_SECRET_KEY=$(head -c 32 /dev/urandom | base64) docker compose up -d")
	// It publishes what the README's one-container command does.
	var ports []string
	for _, port := range kb.Ports {
		ports = append(ports, fmt.Sprintf("%s:%d", port.Published, port.Target))
		require.Contains(t, string(readme), fmt.Sprintf("-p %s:%d", port.Published, port.Target))
	}
	require.ElementsMatch(t, []string{"8080:8080", "443:8443", "8132:8132"}, ports)
}
