package chart_test

import (
	"regexp"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestChartDefaultImageIsTheRelease: with image values left alone, every
// pod runs ghcr.io/kubebyon/kubebyon at the chart's appVersion, the tag
// make release gives the image it builds: a release tag, never latest.
func TestChartDefaultImageIsTheRelease(t *testing.T) {
	t.Parallel()
	ch := loadChart(t)
	require.Regexp(t, regexp.MustCompile(`^v\d+\.\d+\.\d+$`), ch.Metadata.AppVersion)
	want := "ghcr.io/kubebyon/kubebyon:" + ch.Metadata.AppVersion
	pods := podTemplates(mustRender(t, requiredValues()))
	require.NotEmpty(t, pods)
	for name, pod := range pods {
		for _, c := range append(pod.InitContainers, pod.Containers...) {
			require.Equal(t, want, c.Image, "%s container %s", name, c.Name)
		}
	}

	tagged := podTemplates(mustRender(t, with(requiredValues(), map[string]any{
		"image": map[string]any{"repository": "registry.example.com/kubebyon", "tag": "v9.8.7"},
	})))
	for name, pod := range tagged {
		for _, c := range pod.Containers {
			require.Equal(t, "registry.example.com/kubebyon:v9.8.7", c.Image, "%s container %s", name, c.Name)
		}
	}
}
