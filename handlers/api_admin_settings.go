package handlers

import (
	"errors"
	"net/http"
	"strings"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/kubebyon/kubebyon/internal/adminauth"
	"github.com/kubebyon/kubebyon/internal/adminsettings"
	"github.com/kubebyon/kubebyon/internal/hostcheck"
	"github.com/kubebyon/kubebyon/internal/input"
	"github.com/kubebyon/kubebyon/internal/locale"
	"github.com/kubebyon/kubebyon/internal/settings"
)

// The admin API's settings groups (api_admin_*.go) are each read with GET
// and changed with PATCH: the fields a PATCH leaves out keep their stored
// values, secrets included (a GET only says whether each is set,
// "<name>_set"). A PATCH goes through the same service, validation and
// audit as the back office's form, which it fills in with the stored
// values and the fields given.

// patch sets *dst to *p when the request gave the field (p not nil).
func patch[T any](dst *T, p *T) {
	if p != nil {
		*dst = *p
	}
}

// secretChange is what a PATCH asks of a stored secret: absent (nil)
// keeps it, "" clears it, anything else replaces it.
func secretChange(p *string) input.SecretChange {
	switch {
	case p == nil:
		return input.SecretChange{}
	case *p == "":
		return input.SecretChange{Clear: true}
	}
	return input.SecretChange{Value: *p}
}

// decodeOptionalJSON reads a JSON body into v, when there is one.
func decodeOptionalJSON(c echo.Context, v any) error {
	if c.Request().ContentLength == 0 {
		return nil
	}
	return decodeJSON(c, v)
}

// adminAPIError answers a service's error as the admin API does: its
// field errors renamed to the request's fields by names (a field not
// named stays as it is), which handleError answers with 422; 404 for an
// admin who stopped being one while the request ran. Other errors are
// returned as they are.
func adminAPIError(err error, names map[string]string) error {
	var fe input.Errors
	switch {
	case errors.As(err, &fe):
		out := make(input.Errors, len(fe))
		for k, v := range fe {
			if n, ok := names[k]; ok {
				k = n
			}
			out[k] = v
		}
		return out
	case errors.Is(err, adminauth.ErrNotAdmin):
		return echo.ErrNotFound
	}
	return err
}

// apiSettings is the platform's runtime settings (the back office's
// Settings page), without the two secrets.
type apiSettings struct {
	ChartRepo            string   `json:"chart_repo"`
	ChartVersion         string   `json:"chart_version"`
	ChartPath            string   `json:"chart_path"`
	PlatformHost         string   `json:"platform_host"`
	PlatformProject      string   `json:"platform_project"`
	PlatformInsecure     bool     `json:"platform_insecure"`
	PlatformAccessKeySet bool     `json:"platform_access_key_set"`
	DefaultAccessMode    string   `json:"default_access_mode"`
	EdgeAddressType      string   `json:"edge_address_type"`
	APIBaseDomain        string   `json:"api_base_domain"`
	ConsoleHost          string   `json:"console_host"`
	ConsoleBackend       string   `json:"console_backend"`
	PodCIDR              string   `json:"pod_cidr"`
	ServiceCIDR          string   `json:"service_cidr"`
	PodCIDRPool          string   `json:"pod_cidr_pool"`
	PodCIDRBlock         int      `json:"pod_cidr_block"`
	AllowedVersions      []string `json:"allowed_versions"`
	NodePortMin          int      `json:"node_port_min"`
	NodePortMax          int      `json:"node_port_max"`
	Backend              string   `json:"backend"`
	KamajiDataStore      string   `json:"kamaji_data_store"`
	PublicAPIPort        int      `json:"public_api_port"`
	PackageMirror        string   `json:"package_mirror"`
	HostKubeconfigSet    bool     `json:"host_kubeconfig_set"`
	// Host is where the platform's host cluster credentials come from.
	Host apiSettingsHost `json:"host"`
	// UnreadableSecrets names the secrets sealed with another platform
	// key: they read as unset until given again.
	UnreadableSecrets []string `json:"unreadable_secrets"`
}

type apiSettingsHost struct {
	// Source: stored (the uploaded kubeconfig), file
	// (KUBEBYON_KUBECONFIG, at Path), in-cluster or none.
	Source     string     `json:"source"`
	Path       string     `json:"path"`
	UploadedAt *time.Time `json:"uploaded_at"`
	UploadedBy string     `json:"uploaded_by"`
}

// apiSettingsPatch is a PATCH of the runtime settings. HostKubeconfig and
// PlatformAccessKey are secrets (secretChange).
type apiSettingsPatch struct {
	ChartRepo         *string   `json:"chart_repo"`
	ChartVersion      *string   `json:"chart_version"`
	ChartPath         *string   `json:"chart_path"`
	PlatformHost      *string   `json:"platform_host"`
	PlatformProject   *string   `json:"platform_project"`
	PlatformInsecure  *bool     `json:"platform_insecure"`
	PlatformAccessKey *string   `json:"platform_access_key"`
	DefaultAccessMode *string   `json:"default_access_mode"`
	EdgeAddressType   *string   `json:"edge_address_type"`
	APIBaseDomain     *string   `json:"api_base_domain"`
	ConsoleHost       *string   `json:"console_host"`
	ConsoleBackend    *string   `json:"console_backend"`
	PodCIDR           *string   `json:"pod_cidr"`
	ServiceCIDR       *string   `json:"service_cidr"`
	PodCIDRPool       *string   `json:"pod_cidr_pool"`
	PodCIDRBlock      *int      `json:"pod_cidr_block"`
	AllowedVersions   *[]string `json:"allowed_versions"`
	NodePortMin       *int      `json:"node_port_min"`
	NodePortMax       *int      `json:"node_port_max"`
	Backend           *string   `json:"backend"`
	KamajiDataStore   *string   `json:"kamaji_data_store"`
	PublicAPIPort     *int      `json:"public_api_port"`
	PackageMirror     *string   `json:"package_mirror"`
	HostKubeconfig    *string   `json:"host_kubeconfig"`
}

// settingsAPIFields are the runtime settings' field names (settings.Runtime,
// the form's) as the API names them.
var settingsAPIFields = map[string]string{
	"chartRepo": "chart_repo", "chartVersion": "chart_version", "chartPath": "chart_path",
	"platformHost": "platform_host", "platformProject": "platform_project", "platformInsecure": "platform_insecure",
	adminsettings.FieldPlatformAccessKey: "platform_access_key",
	"defaultAccessMode":                  "default_access_mode", "edgeAddressType": "edge_address_type",
	"apiBaseDomain": "api_base_domain", "consoleHost": "console_host", "consoleBackend": "console_backend",
	"podCIDR": "pod_cidr", "serviceCIDR": "service_cidr", "podCIDRPool": "pod_cidr_pool", "podCIDRBlock": "pod_cidr_block",
	"allowedVersions": "allowed_versions", "nodePortMin": "node_port_min", "nodePortMax": "node_port_max",
	"backend": "backend", "kamajiDataStore": "kamaji_data_store", "publicAPIPort": "public_api_port",
	"packageMirror": "package_mirror", adminsettings.FieldHostKubeconfig: "host_kubeconfig",
}

// nodePortRange is the error key of the NodePort range (settings.Runtime).
const nodePortRange = "nodePortRange"

// showAPIAdminSettings is GET /api/v1/admin/settings.
func (h *Handlers) showAPIAdminSettings(c echo.Context) error {
	if err := setETag(c, h.AdminSettings.Tag); err != nil {
		return err
	}
	rt, unreadable, host, err := h.storedSettings(c.Request().Context())
	if err != nil {
		return err
	}
	out := apiSettings{
		ChartRepo: rt.ChartRepo, ChartVersion: rt.ChartVersion, ChartPath: rt.ChartPath,
		PlatformHost: rt.PlatformHost, PlatformProject: rt.PlatformProject, PlatformInsecure: rt.PlatformInsecure,
		PlatformAccessKeySet: rt.PlatformAccessKey != "",
		DefaultAccessMode:    rt.DefaultAccessMode, EdgeAddressType: rt.EdgeAddressType, APIBaseDomain: rt.APIBaseDomain,
		ConsoleHost: rt.ConsoleHost, ConsoleBackend: rt.ConsoleBackend,
		PodCIDR: rt.PodCIDR, ServiceCIDR: rt.ServiceCIDR, PodCIDRPool: rt.PodCIDRPool, PodCIDRBlock: rt.PodCIDRBlock,
		AllowedVersions: append([]string{}, rt.AllowedVersions...), NodePortMin: rt.NodePortMin, NodePortMax: rt.NodePortMax,
		Backend: rt.Backend, KamajiDataStore: rt.KamajiDataStore, PublicAPIPort: rt.APIPort(), PackageMirror: rt.PackageMirror,
		HostKubeconfigSet: rt.HostKubeconfig != "",
		Host:              apiSettingsHost{Source: string(host.Source), Path: host.Path, UploadedBy: host.UploadedBy},
		UnreadableSecrets: []string{},
	}
	if !host.UploadedAt.IsZero() {
		at := host.UploadedAt.UTC()
		out.Host.UploadedAt = &at
	}
	for _, f := range unreadable {
		out.UnreadableSecrets = append(out.UnreadableSecrets, settingsAPIFields[f])
	}
	return c.JSON(http.StatusOK, out)
}

// updateAPIAdminSettings is PATCH /api/v1/admin/settings. A kubeconfig
// is bounded as the back office's upload is.
func (h *Handlers) updateAPIAdminSettings(c echo.Context) error {
	var body apiSettingsPatch
	if err := decodeJSON(c, &body); err != nil {
		return err
	}
	if body.HostKubeconfig != nil && len(*body.HostKubeconfig) > maxKubeconfigBytes {
		return input.Errors{"host_kubeconfig": "ErrAdminSettingsKubeconfigTooLarge"}
	}
	ctx := c.Request().Context()
	rt, _, err := h.AdminSettings.Load(ctx)
	if err != nil {
		return err
	}
	// What the back office's form would send back unchanged.
	rt.PublicAPIPort = rt.APIPort()
	if rt.Backend == "" {
		rt.Backend = settings.BackendVCluster
	}
	for _, f := range []struct{ dst, p *string }{
		{&rt.ChartRepo, body.ChartRepo}, {&rt.ChartVersion, body.ChartVersion}, {&rt.ChartPath, body.ChartPath},
		{&rt.PlatformHost, body.PlatformHost}, {&rt.PlatformProject, body.PlatformProject},
		{&rt.DefaultAccessMode, body.DefaultAccessMode}, {&rt.EdgeAddressType, body.EdgeAddressType},
		{&rt.APIBaseDomain, body.APIBaseDomain}, {&rt.ConsoleHost, body.ConsoleHost}, {&rt.ConsoleBackend, body.ConsoleBackend},
		{&rt.PodCIDR, body.PodCIDR}, {&rt.ServiceCIDR, body.ServiceCIDR}, {&rt.PodCIDRPool, body.PodCIDRPool},
		{&rt.Backend, body.Backend}, {&rt.KamajiDataStore, body.KamajiDataStore}, {&rt.PackageMirror, body.PackageMirror},
	} {
		if f.p != nil {
			*f.dst = strings.TrimSpace(*f.p)
		}
	}
	// Host names are kept in lower case, as the form keeps them.
	rt.APIBaseDomain, rt.ConsoleHost = strings.ToLower(rt.APIBaseDomain), strings.ToLower(rt.ConsoleHost)
	patch(&rt.PlatformInsecure, body.PlatformInsecure)
	patch(&rt.AllowedVersions, body.AllowedVersions)
	patch(&rt.PodCIDRBlock, body.PodCIDRBlock)
	patch(&rt.NodePortMin, body.NodePortMin)
	patch(&rt.NodePortMax, body.NodePortMax)
	patch(&rt.PublicAPIPort, body.PublicAPIPort)
	kubeconfig := secretChange(body.HostKubeconfig)
	kubeconfig.Value = strings.TrimSpace(kubeconfig.Value)
	accessKey := secretChange(body.PlatformAccessKey)
	accessKey.Value = strings.TrimSpace(accessKey.Value)
	_, err = h.AdminSettings.Apply(ctx, adminsettings.Change{Settings: rt, HostKubeconfig: kubeconfig, PlatformAccessKey: accessKey}, actor(c))
	var fe input.Errors
	if errors.As(err, &fe) && fe[nodePortRange] != "" {
		// The range's error is both its ends'.
		fe["nodePortMin"], fe["nodePortMax"] = fe[nodePortRange], fe[nodePortRange]
		delete(fe, nodePortRange)
	}
	if err != nil {
		return adminAPIError(err, settingsAPIFields)
	}
	return h.showAPIAdminSettings(c)
}

// apiHostTest is a host cluster connection test's outcome: whether the
// server was reached (else Error says why, Detail in the technical
// words), and then which permissions the credentials have.
type apiHostTest struct {
	Source      string          `json:"source"`
	Reached     bool            `json:"reached"`
	Error       string          `json:"error,omitempty"`
	Detail      string          `json:"detail,omitempty"`
	Server      string          `json:"server,omitempty"`
	Version     string          `json:"version,omitempty"`
	Missing     int             `json:"missing"`
	Permissions []apiPermission `json:"permissions"`
}

// apiPermission is what the credentials may do to one resource: the
// verbs the platform needs and those of them missing. Feature names the
// feature that alone needs it ("" for every platform), Counted whether
// its missing verbs count (the feature is offered).
type apiPermission struct {
	Resource   string   `json:"resource"`
	Namespaced bool     `json:"namespaced"`
	Feature    string   `json:"feature"`
	Counted    bool     `json:"counted"`
	Required   []string `json:"required"`
	Missing    []string `json:"missing"`
}

// apiHostTestBody asks to test HostKubeconfig (not stored) instead of the
// configured credentials; IgnoreStoredKubeconfig tests what would be in
// effect without the stored kubeconfig.
type apiHostTestBody struct {
	HostKubeconfig         string `json:"host_kubeconfig"`
	IgnoreStoredKubeconfig bool   `json:"ignore_stored_kubeconfig"`
}

// testAPIAdminSettings is POST /api/v1/admin/settings/test: a test of
// the host cluster connection, as the back office's "Test connection".
// A test that ran is 200 whatever its outcome; a kubeconfig that cannot
// be used is 422 at its field.
func (h *Handlers) testAPIAdminSettings(c echo.Context) error {
	var body apiHostTestBody
	if err := decodeOptionalJSON(c, &body); err != nil {
		return err
	}
	upload := strings.TrimSpace(body.HostKubeconfig)
	if len(upload) > maxKubeconfigBytes {
		return input.Errors{"host_kubeconfig": "ErrAdminSettingsKubeconfigTooLarge"}
	}
	src, report, err := h.AdminSettings.Test(c.Request().Context(), upload, body.IgnoreStoredKubeconfig)
	var invalid settings.FieldErrors
	if errors.As(err, &invalid) {
		return adminAPIError(err, settingsAPIFields)
	}
	test, err := hostTestView(src, report, err)
	if err != nil {
		return err
	}
	out := apiHostTest{
		Source: test.Source, Reached: test.Error == "", Detail: test.Detail,
		Server: test.Server, Version: test.Version, Missing: test.Missing, Permissions: []apiPermission{},
	}
	if test.Error != "" {
		out.Error = locale.T(c.Request().Context(), test.Error, test.ErrorData)
	}
	for _, row := range test.Rows {
		p := apiPermission{Resource: row.Resource, Namespaced: row.Namespaced, Counted: row.Counted, Required: []string{}, Missing: []string{}}
		if row.Edge {
			p.Feature = hostcheck.FeatureEdge
		}
		for _, cell := range row.Cells {
			if cell.Required {
				p.Required = append(p.Required, cell.Verb)
				if !cell.Allowed {
					p.Missing = append(p.Missing, cell.Verb)
				}
			}
		}
		out.Permissions = append(out.Permissions, p)
	}
	return c.JSON(http.StatusOK, out)
}
