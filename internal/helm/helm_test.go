package helm_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/kubebyon/kubebyon/internal/helm"
)

// TestLoadLocalChartVersion: a local chart copied from its project's
// source tree (placeholder version) is named by the version the settings
// give; one with a version of its own keeps it.
func TestLoadLocalChartVersion(t *testing.T) {
	t.Parallel()
	tests := []struct {
		own, given, want string
	}{
		{"0.0.1", "0.30.0", "0.30.0"},    // vcluster's source tree
		{"v0.0.0", "v1.21.2", "v1.21.2"}, // cert-manager's
		{"0.0.1", "", "0.0.1"},           // nothing better known
		{"0.29.1", "0.30.0", "0.29.1"},   // helm pull of another release
	}
	for _, tt := range tests {
		t.Run(tt.own+"/"+tt.given, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			require.NoError(t, os.WriteFile(filepath.Join(dir, "Chart.yaml"),
				[]byte("apiVersion: v2\nname: demo\nversion: "+tt.own+"\n"), 0o644))
			var charts helm.Charts
			ch, err := charts.Load(dir, "", "demo", tt.given)
			require.NoError(t, err)
			require.Equal(t, tt.want, ch.Metadata.Version)
		})
	}
}
