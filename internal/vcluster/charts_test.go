package vcluster_test

import (
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/require"
	"helm.sh/helm/v3/pkg/chart/loader"
	"helm.sh/helm/v3/pkg/chartutil"
	"helm.sh/helm/v3/pkg/repo"

	"github.com/kubebyon/kubebyon/internal/settings"
	"github.com/kubebyon/kubebyon/internal/testenv"
	"github.com/kubebyon/kubebyon/internal/vcluster"
)

// chartRepository serves a Helm HTTP chart repository holding the real
// vcluster chart packaged at version, and counts the archive downloads.
func chartRepository(t *testing.T, version string) (string, *atomic.Int32) {
	t.Helper()
	ch, err := loader.Load(testenv.VClusterChart(t))
	require.NoError(t, err)
	ch.Metadata.Version = version
	dir := t.TempDir()
	_, err = chartutil.Save(ch, dir)
	require.NoError(t, err)

	var downloads atomic.Int32
	files := http.FileServer(http.Dir(dir))
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if strings.HasSuffix(r.URL.Path, ".tgz") {
			downloads.Add(1)
		}
		files.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	index, err := repo.IndexDirectory(dir, srv.URL)
	require.NoError(t, err)
	require.NoError(t, index.WriteFile(filepath.Join(dir, "index.yaml"), 0o644))
	return srv.URL, &downloads
}

// TestChartFromRepositoryIgnoresWorkingDirectory loads the chart from a
// repository while the working directory holds a folder named like the
// chart, as the repository root does (the vcluster Go package) under
// `make run`. Helm's LocateChart would take that folder; the repository's
// chart must be loaded instead. Not parallel: it changes the directory.
func TestChartFromRepositoryIgnoresWorkingDirectory(t *testing.T) {
	repoURL, downloads := chartRepository(t, "0.30.0")
	tests := []struct {
		name   string
		folder map[string]string
	}{
		{"a Go package", map[string]string{"helm.go": "package vcluster\n"}},
		{"another chart", map[string]string{
			"Chart.yaml":            "apiVersion: v2\nname: vcluster\nversion: 9.9.9\n",
			"templates/secret.yaml": "apiVersion: v1\nkind: Secret\nmetadata:\n  name: planted\n",
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			wd := t.TempDir()
			for name, body := range tc.folder {
				path := filepath.Join(wd, vcluster.ChartName, name)
				require.NoError(t, os.MkdirAll(filepath.Dir(path), 0o755))
				require.NoError(t, os.WriteFile(path, []byte(body), 0o644))
			}
			t.Chdir(wd)
			before := downloads.Load()

			rt := settings.Defaults()
			rt.ChartRepo, rt.ChartVersion = repoURL, "0.30.0"
			ch, err := (&vcluster.Charts{}).Load(rt)
			require.NoError(t, err)
			require.Equal(t, "0.30.0", ch.Metadata.Version)
			require.NotEmpty(t, ch.Schema, "the real chart, with its values schema")
			require.Equal(t, before+1, downloads.Load(), "fetched from the repository")

			// The newest version when none is named.
			rt.ChartVersion = ""
			ch, err = (&vcluster.Charts{}).Load(rt)
			require.NoError(t, err)
			require.Equal(t, "0.30.0", ch.Metadata.Version)
		})
	}
}

// TestChartSources loads an admin's local chart directory even when a
// repository is set, and refuses a version the repository lacks.
func TestChartSources(t *testing.T) {
	t.Parallel()
	repoURL, downloads := chartRepository(t, "0.30.0")

	rt := settings.Defaults()
	rt.ChartRepo, rt.ChartVersion = repoURL, "0.30.0"
	rt.ChartPath = testenv.VClusterChart(t)
	ch, err := (&vcluster.Charts{}).Load(rt)
	require.NoError(t, err)
	// The module's chart says the source tree's 0.0.1: it is named by the
	// version the settings give (internal/helm).
	require.Equal(t, "0.30.0", ch.Metadata.Version)
	require.Zero(t, downloads.Load(), "the local chart, not the repository's")

	rt.ChartPath, rt.ChartVersion = "", "0.29.0"
	_, err = (&vcluster.Charts{}).Load(rt)
	require.ErrorContains(t, err, "0.29.0")
	require.Zero(t, downloads.Load())
}
