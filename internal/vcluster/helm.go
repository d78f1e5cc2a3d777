package vcluster

import (
	"sync"

	"helm.sh/helm/v3/pkg/chart"

	"github.com/kubebyon/kubebyon/internal/helm"
	"github.com/kubebyon/kubebyon/internal/settings"
)

// ChartName is the vcluster chart's name in its repository.
const ChartName = "vcluster"

// Charts loads the vcluster chart from where the settings say and keeps
// each loaded chart, so jobs do not download or parse it again.
type Charts struct {
	charts helm.Charts
	mu     sync.Mutex
	// schemas holds each chart's values schema compiled (Charts.Apply).
	schemas map[*chart.Chart]compiledSchema
}

// Load returns the chart for the settings: the local directory when one is
// set (air-gapped installs), else the repository and version (helm.Charts).
func (c *Charts) Load(rt settings.Runtime) (*chart.Chart, error) {
	return c.charts.Load(rt.ChartPath, rt.ChartRepo, ChartName, rt.ChartVersion)
}
