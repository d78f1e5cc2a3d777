package ingress

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"os"
	"slices"
	"strings"

	"github.com/jackc/pgx/v5"
	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/kubebyon/kubebyon/internal/adminauth"
	"github.com/kubebyon/kubebyon/internal/audit"
	"github.com/kubebyon/kubebyon/internal/input"
	"github.com/kubebyon/kubebyon/internal/settings"
	"github.com/kubebyon/kubebyon/queries"
)

// Controllers are the controllers the admin can pick, in the order forms
// list them.
var Controllers = []string{Traefik, IngressNGINX}

// Retired reports whether upstream no longer maintains the controller:
// the pages say so where it is picked or runs.
func Retired(controller string) bool { return controller == IngressNGINX }

// The ACME servers the admin page offers by name; any other https URL (a
// private ACME server) is taken too.
const (
	LetsEncryptProduction = "https://acme-v02.api.letsencrypt.org/directory"
	LetsEncryptStaging    = "https://acme-staging-v02.api.letsencrypt.org/directory"
)

// ChartSource is where a controller's chart comes from by default: its
// repository, its name there and the version this build was tested with.
type ChartSource struct {
	Repo, Name, Version string
}

// DefaultCharts are each controller's chart source.
var DefaultCharts = map[string]ChartSource{
	Traefik:      {Repo: "https://traefik.github.io/charts", Name: "traefik", Version: "41.6.0"},
	IngressNGINX: {Repo: "https://kubernetes.github.io/ingress-nginx", Name: "ingress-nginx", Version: "4.13.4"},
}

// Settings are the admin's managed ingress settings.
type Settings struct {
	// Controller is the controller new installs get (Traefik or
	// IngressNGINX).
	Controller string `json:"controller"`
	// The controller's chart: a local chart directory (air-gapped
	// installs) wins over the repository (https or oci) and version; an
	// empty repository or version is the controller's default
	// (DefaultCharts).
	ChartRepo    string `json:"chartRepo"`
	ChartVersion string `json:"chartVersion"`
	ChartPath    string `json:"chartPath"`
	// AppsBaseDomain: a cluster's CNAME target is <slug>.<AppsBaseDomain>.
	// Empty: managed ingress cannot be switched on.
	AppsBaseDomain string `json:"appsBaseDomain"`
	// ACMEServer is the ACME directory URL certificates are issued from.
	ACMEServer string `json:"acmeServer"`
	// CertManagerChartPath is a local cert-manager chart directory
	// (air-gapped installs; else CertManagerChart from its repository).
	CertManagerChartPath string `json:"certManagerChartPath"`
	// GatewayClass is the GatewayClass of the shared Gateway on the host
	// cluster that serves the clusters whose managed ingress goes through
	// the platform edge (ModeEdge), an implementation the admin runs
	// (Envoy Gateway, Traefik, Cilium, Istio, ...). Empty: that mode is
	// not offered.
	GatewayClass string `json:"gatewayClass"`
}

// CertManagerChart is where cert-manager's chart comes from: Jetstack's
// repository, at the version this build was tested with.
var CertManagerChart = ChartSource{Repo: "https://charts.jetstack.io", Name: "cert-manager", Version: "v1.21.2"}

// DefaultSettings are the settings before an admin changes anything.
func DefaultSettings() Settings {
	return Settings{Controller: Traefik, ACMEServer: LetsEncryptProduction}
}

// Chart is the chart source the settings name: the repository and version
// given, or the controller's defaults for those left empty. Path is set
// for a local directory.
func (s Settings) Chart() (src ChartSource, path string) {
	src = DefaultCharts[s.Controller]
	if s.ChartRepo != "" {
		src.Repo = s.ChartRepo
	}
	if s.ChartVersion != "" {
		src.Version = s.ChartVersion
	}
	return src, s.ChartPath
}

// CNAMETarget is the name a cluster's host names point at.
func (s Settings) CNAMETarget(slug string) string {
	if s.AppsBaseDomain == "" {
		return ""
	}
	return slug + "." + s.AppsBaseDomain
}

const settingsKey = "ingress"

// LoadSettings reads the settings, filling defaults for what was never
// set.
func LoadSettings(ctx context.Context, q *queries.Queries) (Settings, error) {
	s := DefaultSettings()
	row, err := q.SettingGet(ctx, settingsKey)
	if errors.Is(err, pgx.ErrNoRows) {
		return s, nil
	}
	if err != nil {
		return Settings{}, fmt.Errorf("load ingress settings: %w", err)
	}
	if err := json.Unmarshal(row.Value, &s); err != nil {
		return Settings{}, fmt.Errorf("decode ingress settings: %w", err)
	}
	return s, nil
}

// Settings are the ingress settings as stored, defaults for what was
// never set (LoadSettings).
func (s *Service) Settings(ctx context.Context) (Settings, error) {
	return LoadSettings(ctx, queries.New(s.Pool))
}

// SaveSettings validates and stores the settings (q should be the
// transaction that also writes the audit event).
func SaveSettings(ctx context.Context, q *queries.Queries, s Settings) error {
	if err := s.Validate(); err != nil {
		return err
	}
	b, err := json.Marshal(s)
	if err != nil {
		return fmt.Errorf("encode ingress settings: %w", err)
	}
	if err := q.SettingUpsert(ctx, queries.SettingUpsertParams{Key: settingsKey, Value: b}); err != nil {
		return fmt.Errorf("store ingress settings: %w", err)
	}
	return nil
}

// Validate checks every field (catalog message IDs by field name).
func (s *Settings) Validate() error {
	errs := input.Errors{}
	if _, ok := DefaultCharts[s.Controller]; !ok {
		errs["controller"] = "ErrIngressController"
	}
	if s.ChartPath != "" {
		if fi, err := os.Stat(s.ChartPath); err != nil || !fi.IsDir() {
			errs["chartPath"] = "ErrSettingChartPath"
		}
	} else if s.ChartRepo != "" {
		if u, err := url.Parse(s.ChartRepo); err != nil || (u.Scheme != "https" && u.Scheme != "http" && u.Scheme != "oci") || u.Host == "" {
			errs["chartRepo"] = "ErrSettingChartRepo"
		}
	}
	if strings.ContainsAny(s.ChartVersion, " \t/") {
		errs["chartVersion"] = "ErrIngressChartVersion"
	}
	s.AppsBaseDomain = strings.TrimSuffix(strings.ToLower(s.AppsBaseDomain), ".")
	if s.AppsBaseDomain != "" && len(validation.IsDNS1123Subdomain(s.AppsBaseDomain)) > 0 {
		errs["appsBaseDomain"] = "ErrSettingDomain"
	}
	if s.CertManagerChartPath != "" {
		if fi, err := os.Stat(s.CertManagerChartPath); err != nil || !fi.IsDir() {
			errs["certManagerChartPath"] = "ErrSettingChartPath"
		}
	}
	if u, err := url.Parse(s.ACMEServer); err != nil || u.Scheme != "https" || u.Host == "" {
		errs["acmeServer"] = "ErrIngressACMEServer"
	}
	if s.GatewayClass != "" && len(validation.IsDNS1123Subdomain(s.GatewayClass)) > 0 {
		errs["gatewayClass"] = "ErrIngressGatewayClass"
	}
	if len(errs) > 0 {
		return errs
	}
	return nil
}

// UpdateSettings is an admin's change of the settings: next and its audit
// event in one transaction,
// and names the fields that changed (none: nothing was written). The
// stored settings are compared under the settings lock: another admin may
// have saved since the page was shown.
func (s *Service) UpdateSettings(ctx context.Context, next Settings, actor audit.Actor) ([]string, error) {
	// Validate also normalises (the domain's trailing dot), which the
	// comparison must see.
	if err := next.Validate(); err != nil {
		return nil, err
	}
	var changed []string
	err := adminauth.SaveSettings(ctx, s.Pool, actor.UserID, settingsKey, adminauth.Confirm{}, func(q *queries.Queries) error {
		current, err := LoadSettings(ctx, q)
		if err != nil {
			return err
		}
		if changed, err = audit.Changed(current, next); err != nil || len(changed) == 0 {
			return err
		}
		// Host names under the API's domain are the platform's own: an apps
		// domain there would have every host name refused.
		api, err := settings.StoredAPIBaseDomain(ctx, q)
		if err != nil {
			return err
		}
		if settings.DomainsOverlap(next.AppsBaseDomain, api) {
			return input.Errors{"appsBaseDomain": "ErrIngressAppsOverlapAPI"}
		}
		slices.Sort(changed)
		if err := SaveSettings(ctx, q, next); err != nil {
			return err
		}
		return audit.Record(ctx, q, actor, audit.Event{
			Action: "admin.ingress_update", TargetType: "settings", TargetID: "ingress",
			Details: map[string]any{"changed": changed, "controller": next.Controller},
		})
	})
	if err != nil {
		return nil, err
	}
	return changed, nil
}
