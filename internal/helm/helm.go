// Package helm applies charts with Helm's Go SDK: it installs a release
// when it is absent, upgrades it when its chart version or values differ,
// leaves it otherwise, repairs one a dead process left pending, removes
// it, and downloads charts from a repository or an OCI registry. The
// vcluster chart on the host (package vcluster) and the add-ons in the
// virtual clusters use it.
package helm

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"sync"

	"helm.sh/helm/v3/pkg/action"
	"helm.sh/helm/v3/pkg/chart"
	"helm.sh/helm/v3/pkg/chart/loader"
	"helm.sh/helm/v3/pkg/downloader"
	"helm.sh/helm/v3/pkg/getter"
	"helm.sh/helm/v3/pkg/registry"
	"helm.sh/helm/v3/pkg/release"
	"helm.sh/helm/v3/pkg/repo"
	"helm.sh/helm/v3/pkg/storage/driver"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/discovery/cached/memory"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/restmapper"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
)

// Charts loads charts and keeps each loaded one, so jobs do not download
// or parse a chart again. Share one between jobs.
type Charts struct {
	mu     sync.Mutex
	loaded map[string]*chart.Chart
}

// Load returns the chart in the local directory path when one is given
// (air-gapped installs), else chart name at version from the repository
// (https or oci). A repository chart is always fetched from the
// repository: no path on the machine, such as a folder named like the
// chart in the working directory, is ever consulted for it.
//
// A local chart copied from its project's source tree says a placeholder
// version (vcluster's 0.0.1, cert-manager's v0.0.0: their release tools
// set the real one); such a chart takes version, so that events, pages
// and Helm's release history name the version the settings say it is. A
// chart with a version of its own (from helm pull) keeps it.
func (c *Charts) Load(path, repoURL, name, version string) (*chart.Chart, error) {
	key := path + "|" + version
	if path == "" {
		key = repoURL + "|" + name + "|" + version
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if ch, ok := c.loaded[key]; ok {
		return ch, nil
	}
	var ch *chart.Chart
	var err error
	if path != "" {
		if ch, err = loader.Load(path); err != nil {
			return nil, fmt.Errorf("load chart %s: %w", path, err)
		}
		if placeholderVersion(ch.Metadata.Version) && version != "" {
			ch.Metadata.Version = version
		}
	} else if ch, err = Download(repoURL, name, version); err != nil {
		return nil, fmt.Errorf("download chart %s %s from %s: %w", name, version, repoURL, err)
	}
	if c.loaded == nil {
		c.loaded = map[string]*chart.Chart{}
	}
	c.loaded[key] = ch
	return ch, nil
}

// placeholderVersion tells a version that a project's source tree gives
// its chart until a release sets the real one.
func placeholderVersion(v string) bool {
	switch strings.TrimPrefix(v, "v") {
	case "0.0.0", "0.0.1", "":
		return true
	}
	return false
}

// Download fetches the chart name from an HTTP(S) chart repository (through its
// index) or an OCI registry (oci://host/path, the chart under it), with
// Helm's downloader, into a temporary directory of its own. Unlike Helm's
// LocateChart it never looks for a local chart first, and it keeps no
// repository cache in the home directory, which may not be writable.
func Download(repoURL, name, version string) (*chart.Chart, error) {
	dir, err := os.MkdirTemp("", "kubebyon-chart-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	// The registry client reads the credentials of `helm registry login`,
	// as Helm does; public registries need none.
	rc, err := registry.NewClient()
	if err != nil {
		return nil, fmt.Errorf("registry client: %w", err)
	}
	getters := getter.Getters()
	ref := strings.TrimSuffix(repoURL, "/") + "/" + name
	if !registry.IsOCI(repoURL) {
		if ref, err = chartURL(repoURL, name, version, dir, getters); err != nil {
			return nil, err
		}
	}
	dl := downloader.ChartDownloader{
		Out: io.Discard, Getters: getters, RegistryClient: rc,
		Options: []getter.Option{getter.WithRegistryClient(rc)},
		// No repositories.yaml: the chart's URL is all there is.
		RepositoryConfig: filepath.Join(dir, "repositories.yaml"), RepositoryCache: dir,
	}
	path, _, err := dl.DownloadTo(ref, version, dir)
	if err != nil {
		return nil, err
	}
	return loader.Load(path)
}

// chartURL reads the repository's index and returns the URL of the chart
// at version (the newest when empty).
func chartURL(repoURL, name, version, cacheDir string, getters getter.Providers) (string, error) {
	r, err := repo.NewChartRepository(&repo.Entry{Name: name, URL: repoURL}, getters)
	if err != nil {
		return "", err
	}
	r.CachePath = cacheDir
	indexPath, err := r.DownloadIndexFile()
	if err != nil {
		return "", fmt.Errorf("read the repository's index: %w", err)
	}
	index, err := repo.LoadIndexFile(indexPath)
	if err != nil {
		return "", fmt.Errorf("read the repository's index: %w", err)
	}
	cv, err := index.Get(name, version)
	if err != nil {
		return "", err
	}
	if len(cv.URLs) == 0 {
		return "", fmt.Errorf("chart %s %s has no download URL", name, cv.Version)
	}
	return repo.ResolveReferenceURL(repoURL, cv.URLs[0])
}

// helmFor returns a Helm configuration for one namespace of the cluster
// cfg reaches.
func helmFor(cfg *rest.Config, namespace string, logger *slog.Logger) (*action.Configuration, error) {
	ac := new(action.Configuration)
	debug := func(format string, v ...any) { logger.Debug(fmt.Sprintf(format, v...), "component", "helm") }
	if err := ac.Init(&restGetter{cfg: cfg, namespace: namespace}, namespace, "secret", debug); err != nil {
		return nil, fmt.Errorf("helm: %w", err)
	}
	return ac, nil
}

// Outcome says what Apply did.
type Outcome string

// Apply outcomes.
const (
	Installed Outcome = "installed"
	Upgraded  Outcome = "upgraded"
	Unchanged Outcome = "unchanged"
)

// Apply makes the release match chart and values: installs it when absent,
// upgrades it when its chart version or values differ, and otherwise leaves
// it (no new revision on every run). A release left pending by a process
// that died mid-operation is repaired first.
//
// Helm's client-side OpenAPI validation is off: it fetched and decoded the
// apiserver's whole OpenAPI document on every install (half of an
// install's CPU), to check manifests that the apiserver checks again when
// they are created; the chart's values are still checked against its
// schema.
//
// Helm checks the values against the chart's schema unless the caller
// did (schemaChecked; vcluster's Charts.Apply).
func Apply(ctx context.Context, cfg *rest.Config, namespace, name string, ch *chart.Chart, values map[string]any, logger *slog.Logger, schemaChecked bool) (Outcome, error) {
	ac, err := helmFor(cfg, namespace, logger)
	if err != nil {
		return "", err
	}
	last, err := ac.Releases.Last(name)
	if err != nil && !errors.Is(err, driver.ErrReleaseNotFound) {
		return "", fmt.Errorf("read release %s/%s: %w", namespace, name, err)
	}
	if last != nil && last.Info.Status.IsPending() {
		if last, err = repair(ac, last); err != nil {
			return "", err
		}
	}

	if last == nil {
		install := action.NewInstall(ac)
		install.ReleaseName, install.Namespace = name, namespace
		install.DisableOpenAPIValidation = true
		install.SkipSchemaValidation = schemaChecked
		if _, err := install.RunWithContext(ctx, ch, values); err != nil {
			return "", fmt.Errorf("helm install %s/%s: %w", namespace, name, err)
		}
		return Installed, nil
	}
	if last.Info.Status == release.StatusDeployed && last.Chart != nil && last.Chart.Metadata.Version == ch.Metadata.Version && sameValues(last.Config, values) {
		return Unchanged, nil
	}
	upgrade := action.NewUpgrade(ac)
	upgrade.Namespace = namespace
	upgrade.DisableOpenAPIValidation = true
	upgrade.SkipSchemaValidation = schemaChecked
	// Only our values count: the chart's defaults are not carried over.
	upgrade.ResetValues = true
	if _, err := upgrade.RunWithContext(ctx, name, ch, values); err != nil {
		return "", fmt.Errorf("helm upgrade %s/%s: %w", namespace, name, err)
	}
	return Upgraded, nil
}

// repair clears a release stuck in a pending state: a pending first install
// is removed (the next step installs it again), a pending upgrade or
// rollback is marked failed so that the next upgrade can go ahead.
func repair(ac *action.Configuration, rel *release.Release) (*release.Release, error) {
	if rel.Info.Status == release.StatusPendingInstall && rel.Version == 1 {
		uninstall := action.NewUninstall(ac)
		uninstall.IgnoreNotFound = true
		if _, err := uninstall.Run(rel.Name); err != nil {
			return nil, fmt.Errorf("remove half-installed release %s: %w", rel.Name, err)
		}
		return nil, nil
	}
	rel.SetStatus(release.StatusFailed, "interrupted: a new reconcile takes over")
	if err := ac.Releases.Update(rel); err != nil {
		return nil, fmt.Errorf("mark interrupted release %s failed: %w", rel.Name, err)
	}
	return rel, nil
}

// sameValues compares stored release values with desired ones as JSON
// would see them (numbers decoded from storage are float64).
func sameValues(a, b map[string]any) bool {
	return reflect.DeepEqual(normalize(a), normalize(b))
}

func normalize(v any) any {
	switch t := v.(type) {
	case map[string]any:
		out := make(map[string]any, len(t))
		for k, x := range t {
			out[k] = normalize(x)
		}
		return out
	case []any:
		out := make([]any, len(t))
		for i, x := range t {
			out[i] = normalize(x)
		}
		return out
	case int:
		return float64(t)
	case int64:
		return float64(t)
	case []string:
		out := make([]any, len(t))
		for i, x := range t {
			out[i] = x
		}
		return out
	}
	return v
}

// Uninstall removes the release; an absent release is fine.
func Uninstall(cfg *rest.Config, namespace, name string, logger *slog.Logger) (bool, error) {
	ac, err := helmFor(cfg, namespace, logger)
	if err != nil {
		return false, err
	}
	uninstall := action.NewUninstall(ac)
	uninstall.IgnoreNotFound = true
	res, err := uninstall.Run(name)
	if err != nil {
		return false, fmt.Errorf("helm uninstall %s/%s: %w", namespace, name, err)
	}
	return res != nil && res.Release != nil, nil
}

// Releases lists the revisions of a release (for tests and diagnostics).
func Releases(cfg *rest.Config, namespace, name string, logger *slog.Logger) ([]*release.Release, error) {
	ac, err := helmFor(cfg, namespace, logger)
	if err != nil {
		return nil, err
	}
	rels, err := ac.Releases.History(name)
	if errors.Is(err, driver.ErrReleaseNotFound) {
		return nil, nil
	}
	return rels, err
}

// restGetter gives Helm a client from a rest.Config instead of a
// kubeconfig file.
type restGetter struct {
	cfg       *rest.Config
	namespace string
	once      sync.Once
	disco     discovery.CachedDiscoveryInterface
	err       error
}

func (g *restGetter) ToRESTConfig() (*rest.Config, error) { return rest.CopyConfig(g.cfg), nil }

func (g *restGetter) ToDiscoveryClient() (discovery.CachedDiscoveryInterface, error) {
	g.once.Do(func() {
		dc, err := discovery.NewDiscoveryClientForConfig(g.cfg)
		if err != nil {
			g.err = err
			return
		}
		g.disco = memory.NewMemCacheClient(dc)
	})
	return g.disco, g.err
}

func (g *restGetter) ToRESTMapper() (meta.RESTMapper, error) {
	dc, err := g.ToDiscoveryClient()
	if err != nil {
		return nil, err
	}
	return restmapper.NewShortcutExpander(restmapper.NewDeferredDiscoveryRESTMapper(dc), dc, nil), nil
}

func (g *restGetter) ToRawKubeConfigLoader() clientcmd.ClientConfig {
	return clientcmd.NewDefaultClientConfig(*clientcmdapi.NewConfig(), &clientcmd.ConfigOverrides{
		Context: clientcmdapi.Context{Namespace: g.namespace},
	})
}
