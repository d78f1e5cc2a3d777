// Package tools_test checks tools/release.sh, the steps of 'make release'
// around the build. The build itself is not run here: cross-compiling the
// binary for linux/arm64 takes far longer than a test may (over ten minutes
// from a cold cache on two cores), so the checksum and chart steps work on
// small stand-in files in a scratch tree.
package tools_test

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// script is tools/release.sh, absolute, to run from any directory.
func script(t *testing.T) string {
	t.Helper()
	p, err := filepath.Abs("release.sh")
	require.NoError(t, err)
	return p
}

// release runs a step of tools/release.sh in dir; it returns the exit
// status and what the step printed.
func release(t *testing.T, dir string, args ...string) (int, string, string) {
	t.Helper()
	cmd := exec.Command(script(t), args...)
	cmd.Dir = dir
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	err := cmd.Run()
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else {
		require.NoError(t, err)
	}
	return code, out.String(), errOut.String()
}

// tree makes a scratch repository root with the given files.
func tree(t *testing.T, files map[string]string) string {
	t.Helper()
	dir := t.TempDir()
	for name, content := range files {
		p := filepath.Join(dir, name)
		require.NoError(t, os.MkdirAll(filepath.Dir(p), 0o755))
		require.NoError(t, os.WriteFile(p, []byte(content), 0o644))
	}
	return dir
}

const changelog = `# Changelog

## Unreleased

## v1.2.3 (2026-12-03)

- Something.

## v1.10.0

## v2.0.10

## v0.1.0 (2026-11-01)
`

// TestReleaseScriptIsShellcheckClean checks release.sh and image.sh,
// which make release runs.
func TestReleaseScriptIsShellcheckClean(t *testing.T) {
	t.Parallel()
	shellcheck, err := exec.LookPath("shellcheck")
	require.NoError(t, err, "shellcheck is not installed (Debian package shellcheck; .ci/run installs it)")
	out, err := exec.Command(shellcheck, script(t), "image.sh").CombinedOutput()
	require.NoError(t, err, "shellcheck:\n%s", out)
}

func TestReleaseVersionCheck(t *testing.T) {
	t.Parallel()
	dir := tree(t, map[string]string{"CHANGELOG.md": changelog})
	tests := []struct {
		version string
		want    string // in stderr; empty when the version is accepted
	}{
		{"v1.2.3", ""},
		{"v1.10.0", ""},
		{"v0.1.0", ""},
		{"1.2.3", "is not like vMAJOR.MINOR.PATCH"},
		{"v1.2", "is not like vMAJOR.MINOR.PATCH"},
		{"v1.2.3.4", "is not like vMAJOR.MINOR.PATCH"},
		{"v01.2.3", "is not like vMAJOR.MINOR.PATCH"},
		{"v1.2.3-rc.1", "is not like vMAJOR.MINOR.PATCH"},
		{"v1.2.3-4-gabcdef0-dirty", "is not like vMAJOR.MINOR.PATCH"},
		{"V1.2.3", "is not like vMAJOR.MINOR.PATCH"},
		{"v1.2.3 ", "is not like vMAJOR.MINOR.PATCH"},
		{"", "is not like vMAJOR.MINOR.PATCH"},
		// Well formed, but CHANGELOG.md does not say what it has; v2.0.1
		// must not take v2.0.10's section, nor v1.2.30 v1.2.3's.
		{"v2.0.1", "CHANGELOG.md has no '## v2.0.1' section"},
		{"v1.2.30", "CHANGELOG.md has no '## v1.2.30' section"},
		{"v3.0.0", "CHANGELOG.md has no '## v3.0.0' section"},
	}
	for _, tt := range tests {
		t.Run(tt.version, func(t *testing.T) {
			t.Parallel()
			code, stdout, stderr := release(t, dir, "check", tt.version)
			if tt.want == "" {
				require.Equal(t, 0, code, stderr)
				require.Contains(t, stdout, "release "+tt.version+": version and CHANGELOG.md section ok")
				return
			}
			require.Equal(t, 1, code, stdout)
			require.Contains(t, stderr, tt.want)
		})
	}

	code, _, stderr := release(t, t.TempDir(), "check", "v1.2.3")
	require.Equal(t, 1, code)
	require.Contains(t, stderr, "CHANGELOG.md is missing")
}

// TestMakeReleaseRefusesBadVersion: the make target checks the version
// before it builds anything.
func TestMakeReleaseRefusesBadVersion(t *testing.T) {
	t.Parallel()
	for _, version := range []string{"1.2.3", "v1.2.3-rc.1"} {
		out, err := exec.Command("make", "-C", "..", "--no-print-directory", "release", "VERSION="+version).CombinedOutput()
		require.Error(t, err, "%s", out)
		require.Contains(t, string(out), `release: VERSION "`+version+`" is not like vMAJOR.MINOR.PATCH`)
		require.NotContains(t, string(out), "go build")
	}
}

func TestReleaseChecksums(t *testing.T) {
	t.Parallel()
	bins := map[string]string{
		"dist/kubebyon_v1.2.3_linux_amd64": "stand-in amd64 binary\n",
		"dist/kubebyon_v1.2.3_linux_arm64": "stand-in arm64 binary\n",
		// Another version's binary is not this release's.
		"dist/kubebyon_v1.2.2_linux_amd64": "older\n",
	}
	dir := tree(t, bins)
	code, stdout, stderr := release(t, dir, "checksums", "v1.2.3")
	require.Equal(t, 0, code, stderr)
	require.Contains(t, stdout, "dist/SHA256SUMS lists kubebyon_v1.2.3_linux_amd64 kubebyon_v1.2.3_linux_arm64")

	sums, err := os.ReadFile(filepath.Join(dir, "dist", "SHA256SUMS"))
	require.NoError(t, err)
	var want strings.Builder
	for _, name := range []string{"kubebyon_v1.2.3_linux_amd64", "kubebyon_v1.2.3_linux_arm64"} {
		sum := sha256.Sum256([]byte(bins["dist/"+name]))
		want.WriteString(hex.EncodeToString(sum[:]) + "  " + name + "\n")
	}
	require.Equal(t, want.String(), string(sums))

	// The file is in sha256sum's format: sha256sum -c checks it, and
	// catches a changed binary.
	check := exec.Command("sha256sum", "-c", "SHA256SUMS")
	check.Dir = filepath.Join(dir, "dist")
	out, err := check.CombinedOutput()
	require.NoError(t, err, "%s", out)
	require.NoError(t, os.WriteFile(filepath.Join(dir, "dist", "kubebyon_v1.2.3_linux_arm64"), []byte("tampered\n"), 0o644))
	check = exec.Command("sha256sum", "-c", "SHA256SUMS")
	check.Dir = filepath.Join(dir, "dist")
	out, err = check.CombinedOutput()
	require.Error(t, err)
	require.Contains(t, string(out), "kubebyon_v1.2.3_linux_arm64: FAILED")

	code, _, stderr = release(t, dir, "checksums", "v9.9.9")
	require.Equal(t, 1, code)
	require.Contains(t, stderr, "no binaries dist/kubebyon_v9.9.9_*")
}

func TestReleaseChartAppVersion(t *testing.T) {
	t.Parallel()
	const chartPath = "deployments/helm/kubebyon/Chart.yaml"
	tests := []struct {
		name  string
		chart string // "" for no chart
		want  string
	}{
		{
			name:  "replaces the appVersion",
			chart: "apiVersion: v2\nname: kubebyon\nversion: 0.1.0\nappVersion: \"v0.1.0\"\ndescription: KubeBYON\n",
			want:  "apiVersion: v2\nname: kubebyon\nversion: 0.1.0\nappVersion: \"v1.2.3\"\ndescription: KubeBYON\n",
		},
		{
			name:  "adds a missing appVersion",
			chart: "apiVersion: v2\nname: kubebyon\nversion: 0.1.0\n",
			want:  "apiVersion: v2\nname: kubebyon\nversion: 0.1.0\nappVersion: \"v1.2.3\"\n",
		},
		{name: "no chart"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			files := map[string]string{}
			if tt.chart != "" {
				files[chartPath] = tt.chart
			}
			dir := tree(t, files)
			code, stdout, stderr := release(t, dir, "chart", "v1.2.3")
			require.Equal(t, 0, code, stderr)
			if tt.chart == "" {
				require.Contains(t, stdout, "no Helm chart at "+chartPath)
				require.NoFileExists(t, filepath.Join(dir, chartPath))
				return
			}
			require.Contains(t, stdout, chartPath+` appVersion is "v1.2.3"`)
			got, err := os.ReadFile(filepath.Join(dir, chartPath))
			require.NoError(t, err)
			require.Equal(t, tt.want, string(got))
			// A second run changes nothing.
			code, _, stderr = release(t, dir, "chart", "v1.2.3")
			require.Equal(t, 0, code, stderr)
			again, err := os.ReadFile(filepath.Join(dir, chartPath))
			require.NoError(t, err)
			require.Equal(t, tt.want, string(again))
		})
	}

	code, _, stderr := release(t, t.TempDir(), "frobnicate", "v1.2.3")
	require.Equal(t, 1, code)
	require.Contains(t, stderr, `unknown step "frobnicate"`)
}

// TestReleaseComposeTag: the release step that sets the chart's appVersion
// also makes the release the compose files' default image tag, leaving
// the rest of each file as it is.
func TestReleaseComposeTag(t *testing.T) {
	t.Parallel()
	const (
		single = "deployments/single-node/compose.yaml"
		multi  = "deployments/multi-node/compose.yaml"
	)
	dir := tree(t, map[string]string{
		"deployments/helm/kubebyon/Chart.yaml": "apiVersion: v2\nname: kubebyon\nversion: 0.1.0\nappVersion: \"v0.1.0\"\n",
		single:                                 "services:\n  kubebyon:\n    image: ghcr.io/kubebyon/kubebyon:${KUBEBYON_VERSION:-v0.1.0}\n  postgres:\n    image: postgres:15\n",
		multi:                                  "x-kubebyon: &kubebyon\n  image: ghcr.io/kubebyon/kubebyon:${KUBEBYON_VERSION:-v0.1.0}\n",
	})
	code, stdout, stderr := release(t, dir, "chart", "v1.2.3")
	require.Equal(t, 0, code, stderr)
	require.Contains(t, stdout, single+"'s default image tag is v1.2.3")
	got, err := os.ReadFile(filepath.Join(dir, single))
	require.NoError(t, err)
	require.Equal(t, "services:\n  kubebyon:\n    image: ghcr.io/kubebyon/kubebyon:${KUBEBYON_VERSION:-v1.2.3}\n  postgres:\n    image: postgres:15\n", string(got))
	got, err = os.ReadFile(filepath.Join(dir, multi))
	require.NoError(t, err)
	require.Equal(t, "x-kubebyon: &kubebyon\n  image: ghcr.io/kubebyon/kubebyon:${KUBEBYON_VERSION:-v1.2.3}\n", string(got))
}
