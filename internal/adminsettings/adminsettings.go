// Package adminsettings is how admins change the platform's runtime
// settings and test the host cluster connection. A change is worked out
// against the stored settings; changing a secret (the host kubeconfig, the
// vCluster Platform access key) needs the admin's password; the settings
// and their audit event are written in one transaction.
//
// Package settings stores and loads what is edited here; package config is
// the process's own start-up settings, which admins cannot change here.
package adminsettings

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/kubebyon/kubebyon/internal/adminauth"
	"github.com/kubebyon/kubebyon/internal/audit"
	"github.com/kubebyon/kubebyon/internal/checks"
	"github.com/kubebyon/kubebyon/internal/hostcheck"
	"github.com/kubebyon/kubebyon/internal/ingress"
	"github.com/kubebyon/kubebyon/internal/input"
	"github.com/kubebyon/kubebyon/internal/kamaji"
	"github.com/kubebyon/kubebyon/internal/secrets"
	"github.com/kubebyon/kubebyon/internal/settings"
	"github.com/kubebyon/kubebyon/queries"
)

// Action is the audit action of a settings change.
const Action = "admin.settings_update"

// The secret fields, by the names forms, field errors and audit events use.
const (
	FieldHostKubeconfig    = "hostKubeconfig"
	FieldPlatformAccessKey = "platformAccessKey"
)

// Errors whose messages admins see (catalog message IDs).
var (
	// ErrPasswordRequired: a secret changes and no password was given.
	ErrPasswordRequired = errors.New("ErrAdminSettingsPasswordRequired")
	// ErrReplaceAndClear: a new secret value and "clear" in one form.
	ErrReplaceAndClear = errors.New("ErrAdminSettingsReplaceAndClear")
	// ErrKubeconfigExternal: the kubeconfig runs programs or reads files
	// on the platform's machine (exec plugins, auth providers, paths).
	ErrKubeconfigExternal = errors.New("ErrAdminSettingsKubeconfigExternal")
)

// Service carries what the settings actions need.
type Service struct {
	Pool *pgxpool.Pool
	Box  *secrets.Box
	// KubeconfigPath is KUBEBYON_KUBECONFIG.
	KubeconfigPath string
}

// SecretChange is what a form asks of a stored secret (input.SecretChange).
type SecretChange = input.SecretChange

// Change is a submitted settings form.
type Change struct {
	// Settings holds every field but the two secrets, which are changed
	// only as HostKubeconfig and PlatformAccessKey ask.
	Settings          settings.Runtime
	HostKubeconfig    SecretChange
	PlatformAccessKey SecretChange
	// Password confirms a change of either secret.
	Password string
}

// on is the settings the change makes of the stored ones.
func (c Change) on(stored settings.Runtime) settings.Runtime {
	next := c.Settings
	next.HostKubeconfig = c.HostKubeconfig.Apply(stored.HostKubeconfig)
	next.PlatformAccessKey = c.PlatformAccessKey.Apply(stored.PlatformAccessKey)
	return next
}

// check finds what is wrong with the form before anything is compared.
func (c Change) check() settings.FieldErrors {
	errs := settings.FieldErrors{}
	for field, sc := range map[string]SecretChange{FieldHostKubeconfig: c.HostKubeconfig, FieldPlatformAccessKey: c.PlatformAccessKey} {
		if sc.Contradicts() {
			errs[field] = ErrReplaceAndClear.Error()
		}
	}
	if c.HostKubeconfig.Value != "" && !settings.SelfContained([]byte(c.HostKubeconfig.Value)) {
		errs[FieldHostKubeconfig] = ErrKubeconfigExternal.Error()
	}
	return errs
}

// Apply stores the change on behalf of the admin actor.UserID and returns
// the names of the fields it changed, sorted; none means nothing was
// written. Errors: settings.FieldErrors, ErrPasswordRequired, and
// adminauth's ErrWrongPassword, *LimitedError and ErrNotAdmin.
func (s *Service) Apply(ctx context.Context, c Change, actor audit.Actor) ([]string, error) {
	errs := c.check()
	current, unreadable, err := s.Load(ctx)
	if err != nil {
		return nil, err
	}
	next := c.on(current)
	var invalid settings.FieldErrors
	if err := next.Validate(); errors.As(err, &invalid) {
		for k, v := range invalid {
			if _, ok := errs[k]; !ok {
				errs[k] = v
			}
		}
	} else if err != nil {
		return nil, err
	}
	if len(errs) > 0 {
		return nil, errs
	}
	changed, err := diff(current, next, unreadable)
	if err != nil || len(changed) == 0 {
		return nil, err
	}
	confirm := adminauth.Confirm{Needed: changesSecret(changed), Password: c.Password, Required: ErrPasswordRequired}
	err = adminauth.SaveSettings(ctx, s.Pool, actor.UserID, settings.RuntimeKey, confirm, func(q *queries.Queries) error {
		// Compared again under the lock: another admin may have saved
		// since the settings were read.
		current, unreadable, err := load(ctx, q, s.Box)
		if err != nil {
			return err
		}
		next := c.on(current)
		if changed, err = diff(current, next, unreadable); err != nil || len(changed) == 0 {
			return err
		}
		// A secret that differs only now (another admin saved it) was
		// not confirmed.
		if changesSecret(changed) && !confirm.Needed {
			return ErrPasswordRequired
		}
		ing, err := ingress.LoadSettings(ctx, q)
		if err != nil {
			return err
		}
		if settings.DomainsOverlap(next.APIBaseDomain, ing.AppsBaseDomain) {
			return settings.FieldErrors{"apiBaseDomain": "ErrSettingAPIOverlapsApps"}
		}
		if err := settings.Save(ctx, q, s.Box, next); err != nil {
			return err
		}
		// The API host names move: every cluster's DNS record follows now,
		// not at its next check.
		if slices.Contains(changed, "apiBaseDomain") {
			if _, err := q.ClusterDNSScheduleAll(ctx, string(checks.DNSRecord)); err != nil {
				return fmt.Errorf("schedule DNS checks: %w", err)
			}
		}
		return audit.Record(ctx, q, actor, audit.Event{
			Action: Action, TargetType: "settings", TargetID: "runtime", Details: details(changed, next),
		})
	})
	if err != nil {
		return nil, err
	}
	return changed, nil
}

// Load reads the stored settings, and names the secrets among them that
// the platform key cannot open (they read as empty).
func (s *Service) Load(ctx context.Context) (settings.Runtime, []string, error) {
	return load(ctx, queries.New(s.Pool), s.Box)
}

// load is Load within q (a transaction).
func load(ctx context.Context, q *queries.Queries, box *secrets.Box) (settings.Runtime, []string, error) {
	rt, err := settings.Load(ctx, q, box)
	var unreadable *settings.UnreadableError
	if errors.As(err, &unreadable) {
		return rt, unreadable.Fields, nil
	}
	return rt, nil, err
}

// diff names the fields that differ, by their JSON names, sorted. The
// unreadable secrets count as changed whatever the form says: saving
// writes them anew (the values given, or none).
func diff(a, b settings.Runtime, unreadable []string) ([]string, error) {
	changed, err := audit.Changed(a, b)
	if err != nil {
		return nil, err
	}
	if a.HostKubeconfig != b.HostKubeconfig {
		changed = append(changed, FieldHostKubeconfig)
	}
	if a.PlatformAccessKey != b.PlatformAccessKey {
		changed = append(changed, FieldPlatformAccessKey)
	}
	for _, f := range unreadable {
		if !slices.Contains(changed, f) {
			changed = append(changed, f)
		}
	}
	slices.Sort(changed)
	return changed, nil
}

func changesSecret(changed []string) bool {
	return slices.Contains(changed, FieldHostKubeconfig) || slices.Contains(changed, FieldPlatformAccessKey)
}

// details are the audit event's: the changed fields, and for secrets
// whether they were replaced or cleared, never their values.
func details(changed []string, next settings.Runtime) map[string]any {
	d := map[string]any{"changed": changed}
	secret := map[string]struct{ value, set string }{
		FieldHostKubeconfig:    {next.HostKubeconfig, "uploaded"},
		FieldPlatformAccessKey: {next.PlatformAccessKey, "replaced"},
	}
	for _, field := range slices.Sorted(maps.Keys(secret)) {
		if !slices.Contains(changed, field) {
			continue
		}
		d[field] = "cleared"
		if secret[field].value != "" {
			d[field] = secret[field].set
		}
	}
	return d
}

// Source is where the host cluster's credentials come from.
type Source string

// Sources of host cluster credentials.
const (
	// SourceUpload is a kubeconfig uploaded to be tested, not stored yet.
	SourceUpload    Source = "upload"
	SourceStored    Source = "stored"
	SourceFile      Source = "file" // KUBEBYON_KUBECONFIG
	SourceInCluster Source = "in-cluster"
	SourceNone      Source = "none"
)

// Host is how the platform reaches the host cluster now.
type Host struct {
	Source Source
	// Path is KUBEBYON_KUBECONFIG, for SourceFile.
	Path string
	// UploadedAt and UploadedBy tell who stored the kubeconfig when, for
	// SourceStored; zero when the audit stream does not say.
	UploadedAt time.Time
	UploadedBy string
}

// Host tells where the credentials in rt (and KubeconfigPath) come from.
func (s *Service) Host(ctx context.Context, rt settings.Runtime) (Host, error) {
	switch {
	case rt.HostKubeconfig != "":
		h := Host{Source: SourceStored}
		row, err := queries.New(s.Pool).AdminSettingsKubeconfigUpload(ctx)
		if errors.Is(err, pgx.ErrNoRows) {
			return h, nil
		}
		if err != nil {
			return h, fmt.Errorf("find kubeconfig upload: %w", err)
		}
		h.UploadedAt, h.UploadedBy = row.CreatedAt.Time, row.ActorEmail
		return h, nil
	case s.KubeconfigPath != "":
		return Host{Source: SourceFile, Path: s.KubeconfigPath}, nil
	}
	if _, err := rest.InClusterConfig(); err == nil {
		return Host{Source: SourceInCluster}, nil
	}
	return Host{Source: SourceNone}, nil
}

// ConfigError is a configured connection that cannot be used, such as a
// KUBEBYON_KUBECONFIG file that is gone.
type ConfigError struct{ Err error }

func (e *ConfigError) Error() string { return e.Err.Error() }

func (e *ConfigError) Unwrap() error { return e.Err }

// KamajiInstalled reports whether the host serves Kamaji's
// TenantControlPlane API (the operator's CRD is installed), asking for at
// most a few seconds.
func (s *Service) KamajiInstalled(ctx context.Context, rt settings.Runtime) (bool, error) {
	cfg, err := rt.HostConfig(s.KubeconfigPath)
	if err != nil {
		return false, err
	}
	cfg = rest.CopyConfig(cfg)
	cfg.Timeout = 3 * time.Second
	client, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return false, fmt.Errorf("host client: %w", err)
	}
	list, err := client.Discovery().ServerResourcesForGroupVersion(kamaji.TenantControlPlanes.GroupVersion().String())
	if apierrors.IsNotFound(err) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("ask the host for Kamaji's API: %w", err)
	}
	for _, r := range list.APIResources {
		if r.Name == kamaji.TenantControlPlanes.Resource {
			return true, nil
		}
	}
	return false, nil
}

// Test checks the host cluster connection: with upload, a kubeconfig not
// stored yet, when given; else with the configured one (ignoring the
// stored kubeconfig when the form clears it). Errors:
// settings.FieldErrors for a bad upload, settings.ErrNoHostCluster,
// *ConfigError, and *hostcheck.Error for a server that could not be
// checked.
func (s *Service) Test(ctx context.Context, upload string, clearStored bool) (Source, hostcheck.Report, error) {
	cfg, src, err := s.testConfig(ctx, upload, clearStored)
	if err != nil {
		return src, hostcheck.Report{}, err
	}
	// The platform edge's permissions count when it is offered (a
	// GatewayClass named).
	ing, err := ingress.LoadSettings(ctx, queries.New(s.Pool))
	if err != nil {
		return src, hostcheck.Report{}, err
	}
	report, err := hostcheck.Check(ctx, cfg, hostcheck.Features{Edge: ing.GatewayClass != ""})
	return src, report, err
}

func (s *Service) testConfig(ctx context.Context, upload string, clearStored bool) (*rest.Config, Source, error) {
	if upload != "" {
		if !settings.SelfContained([]byte(upload)) {
			return nil, SourceUpload, settings.FieldErrors{FieldHostKubeconfig: ErrKubeconfigExternal.Error()}
		}
		cfg, err := clientcmd.RESTConfigFromKubeConfig([]byte(upload))
		if err != nil {
			return nil, SourceUpload, settings.FieldErrors{FieldHostKubeconfig: "ErrSettingKubeconfig"}
		}
		return cfg, SourceUpload, nil
	}
	rt, _, err := s.Load(ctx)
	if err != nil {
		return nil, SourceNone, err
	}
	if clearStored {
		rt.HostKubeconfig = ""
	}
	host, err := s.Host(ctx, rt)
	if err != nil {
		return nil, SourceNone, err
	}
	cfg, err := rt.HostConfig(s.KubeconfigPath)
	if errors.Is(err, settings.ErrNoHostCluster) {
		return nil, SourceNone, err
	}
	if err != nil {
		return nil, host.Source, &ConfigError{Err: err}
	}
	return cfg, host.Source, nil
}

// Tag is the entity tag of the stored settings (adminauth.SettingsTag).
func (s *Service) Tag(ctx context.Context) (string, error) {
	return adminauth.SettingsTag(ctx, queries.New(s.Pool), settings.RuntimeKey)
}
