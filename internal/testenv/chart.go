package testenv

import (
	"encoding/json"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"
)

var chartDir struct {
	once sync.Once
	dir  string
	err  error
}

// VClusterChart returns the directory of the real vcluster chart that ships
// inside the github.com/loft-sh/vcluster module this build requires (its
// chart/ folder in the module cache). Nothing of it is committed.
func VClusterChart(t testing.TB) string {
	t.Helper()
	chartDir.once.Do(func() {
		cmd := exec.Command("go", "mod", "download", "-json", "github.com/loft-sh/vcluster")
		cmd.Dir = repoRoot()
		out, err := cmd.Output()
		if err != nil {
			chartDir.err = err
			return
		}
		var mod struct{ Dir, Error string }
		if err := json.Unmarshal(out, &mod); err != nil {
			chartDir.err = err
			return
		}
		chartDir.dir = filepath.Join(mod.Dir, "chart")
	})
	if chartDir.err != nil {
		t.Fatalf("testenv: locate the vcluster chart: %v", chartDir.err)
	}
	return chartDir.dir
}
