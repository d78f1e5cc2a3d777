package vcluster

import (
	"fmt"
	"sync"

	"helm.sh/helm/v3/pkg/chart"
	"helm.sh/helm/v3/pkg/chart/loader"

	"github.com/kubebyon/kubebyon/internal/helm"
	"github.com/kubebyon/kubebyon/internal/settings"
)

// ChartName is the vcluster chart's name in its repository.
const ChartName = "vcluster"

// Charts loads the vcluster chart from where the settings say and keeps
// each loaded chart, so jobs do not download or parse it again.
type Charts struct {
	mu     sync.Mutex
	loaded map[string]*chart.Chart
	// schemas holds each chart's values schema compiled (Charts.Apply).
	schemas map[*chart.Chart]compiledSchema
}

// Load returns the chart for the settings: the local directory when one is
// set (air-gapped installs), else the repository and version. A repository
// chart is always fetched from the repository: no path on the machine,
// such as a folder named like the chart in the working directory, is ever
// consulted for it.
func (c *Charts) Load(rt settings.Runtime) (*chart.Chart, error) {
	key := rt.ChartPath
	if key == "" {
		key = rt.ChartRepo + "|" + rt.ChartVersion
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if ch, ok := c.loaded[key]; ok {
		return ch, nil
	}
	var ch *chart.Chart
	var err error
	if rt.ChartPath != "" {
		if ch, err = loader.Load(rt.ChartPath); err != nil {
			return nil, fmt.Errorf("load chart %s: %w", rt.ChartPath, err)
		}
	} else if ch, err = helm.Download(rt.ChartRepo, ChartName, rt.ChartVersion); err != nil {
		return nil, fmt.Errorf("download chart %s %s from %s: %w", ChartName, rt.ChartVersion, rt.ChartRepo, err)
	}
	if c.loaded == nil {
		c.loaded = map[string]*chart.Chart{}
	}
	c.loaded[key] = ch
	return ch, nil
}
