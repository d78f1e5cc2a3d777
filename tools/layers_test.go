package tools_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// module is the module's import path.
const module = "github.com/kubebyon/kubebyon/"

// maxFloors is the longest import chain allowed among the module's
// packages (docs/developers/architecture.md).
const maxFloors = 8

// imports are the module's packages (tests aside) with the module's
// packages each imports, by path below the module.
func imports(t *testing.T) map[string][]string {
	t.Helper()
	cmd := exec.Command("go", "list", "-f", "{{.ImportPath}} {{join .Imports \" \"}}", "./...")
	cmd.Dir = ".."
	out, err := cmd.Output()
	require.NoError(t, err, "go list")
	g := map[string][]string{}
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		f := strings.Fields(line)
		pkg := strings.TrimPrefix(f[0], module)
		g[pkg] = nil
		for _, imp := range f[1:] {
			if strings.HasPrefix(imp, module) {
				g[pkg] = append(g[pkg], strings.TrimPrefix(imp, module))
			}
		}
	}
	return g
}

// TestLayers: imports run one way, in at most maxFloors floors (a package
// that imports nothing of ours is floor 1), as the architecture page
// says: nothing under internal/ imports handlers or jobs, and only cmd
// imports jobs (the test helpers aside), not handlers.
func TestLayers(t *testing.T) {
	t.Parallel()
	g := imports(t)
	require.Contains(t, g, "cmd/kubebyon")

	// chain is the longest import chain from pkg down.
	chains := map[string][]string{}
	var chain func(pkg string) []string
	chain = func(pkg string) []string {
		if c, ok := chains[pkg]; ok {
			return c
		}
		var longest []string
		for _, imp := range g[pkg] {
			if c := chain(imp); len(c) > len(longest) {
				longest = c
			}
		}
		chains[pkg] = append([]string{pkg}, longest...)
		return chains[pkg]
	}
	for pkg := range g {
		c := chain(pkg)
		require.LessOrEqual(t, len(c), maxFloors, "%d floors: %s", len(c), strings.Join(c, " -> "))
	}

	for pkg, imps := range g {
		for _, imp := range imps {
			if strings.HasPrefix(pkg, "internal/") {
				require.NotEqual(t, "handlers", imp, "%s imports handlers", pkg)
				require.NotEqual(t, "jobs", imp, "%s imports jobs", pkg)
			}
			// Test helpers (handlerstest and the like) are tests aside.
			if imp == "jobs" && !strings.HasSuffix(pkg, "test") {
				require.True(t, strings.HasPrefix(pkg, "cmd/"), "%s imports jobs: only cmd does", pkg)
			}
		}
	}
}

// TestHandlersAskServices: pages read and write through the domain
// services; in handlers only the session store (scs's storage adapter)
// runs statements of its own.
func TestHandlersAskServices(t *testing.T) {
	t.Parallel()
	files, err := filepath.Glob("../handlers/*.go")
	require.NoError(t, err)
	require.NotEmpty(t, files)
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") || filepath.Base(f) == "session_store.go" {
			continue
		}
		src, err := os.ReadFile(f)
		require.NoError(t, err)
		require.NotContains(t, string(src), "queries.New(", "%s runs its own statements: ask a service", f)
	}
}
