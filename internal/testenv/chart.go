package testenv

import (
	"encoding/json"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"
)

// found is a directory looked up once per process.
type found struct {
	once sync.Once
	dir  string
	err  error
}

// lookups holds the directories found, by what was looked up.
var lookups sync.Map // string -> *found

// foundOnce looks key up with find the first time it is asked for, and
// answers later calls from then on.
func foundOnce(key string, find func() (string, error)) (string, error) {
	v, _ := lookups.LoadOrStore(key, &found{})
	f := v.(*found)
	f.once.Do(func() { f.dir, f.err = find() })
	return f.dir, f.err
}

// VClusterChart returns the directory of the real vcluster chart that ships
// inside the github.com/loft-sh/vcluster module this build requires (its
// chart/ folder in the module cache). Nothing of it is committed.
func VClusterChart(t testing.TB) string {
	t.Helper()
	dir, err := foundOnce("vcluster chart", func() (string, error) {
		cmd := exec.Command("go", "mod", "download", "-json", "github.com/loft-sh/vcluster")
		cmd.Dir = repoRoot()
		out, err := cmd.Output()
		if err != nil {
			return "", err
		}
		var mod struct{ Dir, Error string }
		if err := json.Unmarshal(out, &mod); err != nil {
			return "", err
		}
		return filepath.Join(mod.Dir, "chart"), nil
	})
	if err != nil {
		t.Fatalf("testenv: locate the vcluster chart: %v", err)
	}
	return dir
}

// traefikModule is the Traefik chart's release the ingress tests install,
// read from the Go module cache (the repository has no Go code; its tag
// is the chart's version).
const traefikModule = "github.com/traefik/traefik-helm-chart@v41.6.0+incompatible"

// TraefikChart returns the directory of the real Traefik chart (the
// traefik/ folder of its module in the Go module cache, downloaded if need
// be). Nothing of it is committed.
func TraefikChart(t testing.TB) string {
	t.Helper()
	dir, err := foundOnce(traefikModule, func() (string, error) {
		dir, err := moduleDir(traefikModule)
		return filepath.Join(dir, "traefik"), err
	})
	if err != nil {
		t.Fatalf("testenv: locate the Traefik chart: %v", err)
	}
	return dir
}

// ingressNGINXModule is the ingress-nginx release (chart 4.11.0) the
// ingress tests install, read from the Go module cache.
const ingressNGINXModule = "k8s.io/ingress-nginx@v0.0.0-20240708192948-52c50467d67d"

// IngressNGINXChart returns the directory of the real ingress-nginx chart
// (charts/ingress-nginx of its module in the Go module cache, downloaded
// if need be). Nothing of it is committed.
func IngressNGINXChart(t testing.TB) string {
	t.Helper()
	dir, err := foundOnce(ingressNGINXModule, func() (string, error) {
		dir, err := moduleDir(ingressNGINXModule)
		return filepath.Join(dir, "charts", "ingress-nginx"), err
	})
	if err != nil {
		t.Fatalf("testenv: locate the ingress-nginx chart: %v", err)
	}
	return dir
}

// certManagerModule is the cert-manager release whose chart the managed
// ingress tests install, read from the Go module cache. Its chart there
// says version v0.0.0 (the release tool sets it); the published chart is
// the same templates.
const certManagerModule = "github.com/cert-manager/cert-manager@v1.21.2"

// CertManagerChart returns the directory of the real cert-manager chart
// (deploy/charts/cert-manager of its module in the Go module cache,
// downloaded if need be). Nothing of it is committed.
func CertManagerChart(t testing.TB) string {
	t.Helper()
	dir, err := foundOnce(certManagerModule, func() (string, error) {
		dir, err := moduleDir(certManagerModule)
		return filepath.Join(dir, "deploy", "charts", "cert-manager"), err
	})
	if err != nil {
		t.Fatalf("testenv: locate the cert-manager chart: %v", err)
	}
	return dir
}
