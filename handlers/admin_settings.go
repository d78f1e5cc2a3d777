package handlers

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"unicode"

	"github.com/labstack/echo/v4"

	"github.com/kubebyon/kubebyon/internal/adminsettings"
	"github.com/kubebyon/kubebyon/internal/hostcheck"
	"github.com/kubebyon/kubebyon/internal/settings"
	"github.com/kubebyon/kubebyon/views"
)

// maxKubeconfigBytes bounds an uploaded kubeconfig; real ones are a few
// kilobytes.
const maxKubeconfigBytes = 256 << 10

// settingsFields are the plain fields of the settings form, as
// settings.FieldErrors names them.
var settingsFields = []string{
	"chartRepo", "chartVersion", "chartPath",
	"platformHost", "platformProject", "platformInsecure",
	"defaultAccessMode", "edgeAddressType", "apiBaseDomain", "consoleHost", "consoleBackend", "podCIDR", "serviceCIDR", "podCIDRPool", "podCIDRBlock", "allowedVersions",
	"nodePortMin", "nodePortMax",
	"backend", "kamajiDataStore", "publicAPIPort", "packageMirror",
	"hostKubeconfigClear", "platformAccessKeyClear",
}

func (h *Handlers) showAdminSettingsPage(c echo.Context) error {
	h.viewAsAPICall(c, "adminGetSettings", nil)
	return h.renderAdminSettings(c, http.StatusOK, nil, nil)
}

// renderAdminSettings shows the settings page with f, the form as
// submitted (nil: the stored settings), and test, a connection test's
// outcome (nil: none ran).
func (h *Handlers) renderAdminSettings(c echo.Context, status int, f *views.Form, test *views.AdminHostTest) error {
	rt, unreadable, host, err := h.storedSettings(c.Request().Context())
	if err != nil {
		return err
	}
	if f == nil {
		stored := settingsForm(rt)
		f = &stored
	}
	u, _ := currentUser(c)
	confirm, err := h.adminConfirm(c, u, "/admin/settings")
	if err != nil {
		return err
	}
	return render(c, status, views.AdminSettingsPage(views.AdminSettings{
		Confirm: confirm,
		Form:    *f,
		Host: views.AdminHost{
			Source: string(host.Source), Path: host.Path, UploadedAt: host.UploadedAt, UploadedBy: host.UploadedBy,
		},
		AccessKeyStored: rt.PlatformAccessKey != "",
		Test:            test,
		Unreadable:      len(unreadable) > 0,
		Kamaji:          h.kamajiNotice(c, rt),
	}))
}

// storedSettings are the stored settings, the secrets among them the
// platform key cannot open, and where the host cluster's credentials
// come from.
func (h *Handlers) storedSettings(ctx context.Context) (settings.Runtime, []string, adminsettings.Host, error) {
	rt, unreadable, err := h.AdminSettings.Load(ctx)
	if err != nil {
		return rt, nil, adminsettings.Host{}, err
	}
	host, err := h.AdminSettings.Host(ctx, rt)
	return rt, unreadable, host, err
}

// kamajiNotice says, when the default backend is Kamaji, whether the host
// lacks the Kamaji operator's CRD: the message ID of the notice, or "".
func (h *Handlers) kamajiNotice(c echo.Context, rt settings.Runtime) string {
	if rt.Backend != settings.BackendKamaji {
		return ""
	}
	installed, err := h.AdminSettings.KamajiInstalled(c.Request().Context(), rt)
	switch {
	case err != nil:
		h.Logger.WarnContext(c.Request().Context(), "check for Kamaji on the host", "error", err)
		return "AdminSettingsKamajiUnknown"
	case !installed:
		return "AdminSettingsKamajiMissing"
	}
	return ""
}

// settingsForm shows stored settings in the form, without the secrets.
func settingsForm(rt settings.Runtime) views.Form {
	f := views.NewForm()
	for k, v := range map[string]string{
		"chartRepo": rt.ChartRepo, "chartVersion": rt.ChartVersion, "chartPath": rt.ChartPath,
		"platformHost": rt.PlatformHost, "platformProject": rt.PlatformProject,
		"defaultAccessMode": rt.DefaultAccessMode, "edgeAddressType": rt.EdgeAddressType, "apiBaseDomain": rt.APIBaseDomain,
		"consoleHost": rt.ConsoleHost, "consoleBackend": rt.ConsoleBackend,
		"podCIDR": rt.PodCIDR, "serviceCIDR": rt.ServiceCIDR,
		"podCIDRPool": rt.PodCIDRPool, "podCIDRBlock": strconv.Itoa(rt.PodCIDRBlock),
		"allowedVersions": strings.Join(rt.AllowedVersions, "\n"),
		"nodePortMin":     strconv.Itoa(rt.NodePortMin), "nodePortMax": strconv.Itoa(rt.NodePortMax),
		"backend": rt.Backend, "kamajiDataStore": rt.KamajiDataStore,
		"publicAPIPort": strconv.Itoa(rt.APIPort()), "packageMirror": rt.PackageMirror,
	} {
		f.Values[k] = v
	}
	if rt.PlatformInsecure {
		f.Values["platformInsecure"] = "on"
	}
	return f
}

// settingsChangeFrom reads the settings form. A kubeconfig comes as a
// file or pasted; neither is kept in the form's values, nor is the access
// key, so that no page shows them back.
func settingsChangeFrom(c echo.Context) (views.Form, adminsettings.Change, error) {
	f := formFrom(c, settingsFields...)
	kubeconfig, err := uploadedKubeconfig(c)
	if errors.Is(err, errKubeconfigTooLarge) {
		f.Errors["hostKubeconfig"] = "ErrAdminSettingsKubeconfigTooLarge"
	} else if err != nil {
		return f, adminsettings.Change{}, err
	}
	on := func(name string) bool { return f.Value(name) == "on" }
	number := func(name string) int {
		// Not a number: 0, which the range check refuses.
		n, _ := strconv.Atoi(strings.TrimSpace(f.Value(name)))
		return n
	}
	trimmed := func(name string) string { return strings.TrimSpace(f.Value(name)) }
	return f, adminsettings.Change{
		Settings: settings.Runtime{
			ChartRepo: trimmed("chartRepo"), ChartVersion: trimmed("chartVersion"), ChartPath: trimmed("chartPath"),
			PlatformHost: trimmed("platformHost"), PlatformProject: trimmed("platformProject"), PlatformInsecure: on("platformInsecure"),
			DefaultAccessMode: f.Value("defaultAccessMode"), EdgeAddressType: f.Value("edgeAddressType"), APIBaseDomain: strings.ToLower(trimmed("apiBaseDomain")),
			ConsoleHost: strings.ToLower(trimmed("consoleHost")), ConsoleBackend: trimmed("consoleBackend"),
			PodCIDR: trimmed("podCIDR"), ServiceCIDR: trimmed("serviceCIDR"),
			PodCIDRPool: trimmed("podCIDRPool"), PodCIDRBlock: number("podCIDRBlock"),
			AllowedVersions: versionList(f.Value("allowedVersions")),
			NodePortMin:     number("nodePortMin"), NodePortMax: number("nodePortMax"),
			// Left empty: the defaults (vcluster, 443).
			Backend: cmp.Or(f.Value("backend"), settings.BackendVCluster), KamajiDataStore: trimmed("kamajiDataStore"),
			PublicAPIPort: cmp.Or(number("publicAPIPort"), 443), PackageMirror: trimmed("packageMirror"),
		},
		HostKubeconfig:    adminsettings.SecretChange{Value: kubeconfig, Clear: on("hostKubeconfigClear")},
		PlatformAccessKey: adminsettings.SecretChange{Value: strings.TrimSpace(c.FormValue("platformAccessKey")), Clear: on("platformAccessKeyClear")},
		Password:          c.FormValue("password"),
	}, nil
}

// versionList splits versions given one a line or separated by commas.
func versionList(s string) []string {
	return strings.FieldsFunc(s, func(r rune) bool { return r == ',' || unicode.IsSpace(r) })
}

var errKubeconfigTooLarge = errors.New("kubeconfig too large")

// uploadedKubeconfig is the kubeconfig file, else the pasted one, else "".
func uploadedKubeconfig(c echo.Context) (string, error) {
	// No file (or a form that is not multipart) is not an error: the
	// kubeconfig may be pasted, or not changed.
	if fh, err := c.FormFile("hostKubeconfigFile"); err == nil && fh.Size > 0 {
		if fh.Size > maxKubeconfigBytes {
			return "", errKubeconfigTooLarge
		}
		file, err := fh.Open()
		if err != nil {
			return "", fmt.Errorf("open kubeconfig upload: %w", err)
		}
		defer file.Close()
		b, err := io.ReadAll(io.LimitReader(file, maxKubeconfigBytes+1))
		if err != nil {
			return "", fmt.Errorf("read kubeconfig upload: %w", err)
		}
		if len(b) > maxKubeconfigBytes {
			return "", errKubeconfigTooLarge
		}
		return strings.TrimSpace(string(b)), nil
	}
	pasted := strings.TrimSpace(c.FormValue("hostKubeconfig"))
	if len(pasted) > maxKubeconfigBytes {
		return "", errKubeconfigTooLarge
	}
	return pasted, nil
}

func (h *Handlers) saveAdminSettings(c echo.Context) error {
	f, change, err := settingsChangeFrom(c)
	if err != nil {
		return err
	}
	if len(f.Errors) > 0 {
		f.Error = "ErrAdminSettingsNotSaved"
		return h.renderAdminSettings(c, http.StatusUnprocessableEntity, &f, nil)
	}
	changed, err := h.AdminSettings.Apply(c.Request().Context(), change, actor(c))
	if err != nil {
		return adminSaveError(c, err, &f, "ErrAdminSettingsNotSaved", adminsettings.ErrPasswordRequired, func(status int) error {
			return h.renderAdminSettings(c, status, &f, nil)
		})
	}
	if len(changed) == 0 {
		h.flash(c, "FlashAdminSettingsUnchanged")
	} else {
		h.flash(c, "FlashAdminSettingsSaved")
	}
	return redirect(c, "/admin/settings")
}

// testAdminSettings tests the host cluster connection the form would
// use. htmx gets the result alone; without JavaScript the page comes back
// as submitted with the result under the button. Either way the answer is
// 200: the test ran, and its outcome is in the result.
func (h *Handlers) testAdminSettings(c echo.Context) error {
	f := formFrom(c, settingsFields...)
	upload, err := uploadedKubeconfig(c)
	var test views.AdminHostTest
	switch {
	case errors.Is(err, errKubeconfigTooLarge):
		test = views.AdminHostTest{Source: string(adminsettings.SourceUpload), Error: "ErrAdminSettingsKubeconfigTooLarge"}
	case err != nil:
		return err
	default:
		src, report, err := h.AdminSettings.Test(c.Request().Context(), upload, f.Value("hostKubeconfigClear") == "on")
		if test, err = hostTestView(src, report, err); err != nil {
			return err
		}
	}
	if wantsFragment(c) {
		return render(c, http.StatusOK, views.AdminSettingsTestResult(test))
	}
	return h.renderAdminSettings(c, http.StatusOK, &f, &test)
}

// hostTestView shows a connection test; errors that are not about the
// connection are returned as server errors.
func hostTestView(src adminsettings.Source, r hostcheck.Report, err error) (views.AdminHostTest, error) {
	t := views.AdminHostTest{Source: string(src)}
	var (
		invalid  settings.FieldErrors
		hostErr  *hostcheck.Error
		cfgError *adminsettings.ConfigError
	)
	switch {
	case err == nil:
	case errors.As(err, &invalid):
		t.Error = invalid[adminsettings.FieldHostKubeconfig]
		return t, nil
	case errors.Is(err, settings.ErrNoHostCluster):
		t.Error = "AdminSettingsTestNoHost"
		return t, nil
	case errors.As(err, &cfgError):
		t.Error, t.Detail = "AdminSettingsTestConfigError", cfgError.Err.Error()
		return t, nil
	case errors.As(err, &hostErr):
		t.Error, t.Detail = hostErrorMsg(hostErr.Kind), hostErr.Err.Error()
		t.ErrorData = map[string]any{"Server": hostErr.Server, "Seconds": int(hostcheck.Timeout.Seconds())}
		return t, nil
	default:
		return t, err
	}
	t.Server, t.Version, t.Verbs, t.Missing = r.Server, r.Version, hostcheck.Verbs, r.Missing()
	for _, res := range r.Results {
		row := views.AdminPermissionRow{Resource: res.Name(), Namespaced: res.Namespaced, Edge: res.Feature == hostcheck.FeatureEdge, Counted: res.Counted}
		for _, verb := range hostcheck.Verbs {
			row.Cells = append(row.Cells, views.AdminPermissionCell{
				Verb: verb, Required: slices.Contains(res.Verbs, verb), Allowed: res.Allowed[verb],
			})
		}
		t.Rows = append(t.Rows, row)
	}
	return t, nil
}

// hostErrorMsg is the message ID of why a host cluster could not be
// checked.
func hostErrorMsg(k hostcheck.Kind) string {
	switch k {
	case hostcheck.Unreachable:
		return "AdminSettingsTestUnreachable"
	case hostcheck.TimedOut:
		return "AdminSettingsTestTimeout"
	case hostcheck.BadCertificate:
		return "AdminSettingsTestCertificate"
	case hostcheck.Unauthorized:
		return "AdminSettingsTestUnauthorized"
	}
	return "AdminSettingsTestFailed"
}
