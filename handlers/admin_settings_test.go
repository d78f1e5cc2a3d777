package handlers_test

import (
	"bytes"
	"context"
	"crypto/rand"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/client-go/rest"

	"github.com/kubebyon/kubebyon/handlers"
	"github.com/kubebyon/kubebyon/handlers/handlerstest"
	"github.com/kubebyon/kubebyon/internal/adminsettings"
	"github.com/kubebyon/kubebyon/internal/ingress"
	"github.com/kubebyon/kubebyon/internal/secrets"
	"github.com/kubebyon/kubebyon/internal/settings"
	"github.com/kubebyon/kubebyon/internal/testenv"
	"github.com/kubebyon/kubebyon/queries"
)

func changedOf(d map[string]any) []string {
	var out []string
	for _, v := range d["changed"].([]any) {
		out = append(out, v.(string))
	}
	return out
}

func TestAdminSettingsSaveAndReadBack(t *testing.T) {
	t.Parallel()
	b := handlerstest.Setup(t)
	admin, adminEmail := b.SignedUpAdmin(t, "configurer")
	const password = "password of configurer"
	kubeconfig := handlerstest.KubeconfigOf(t, testenv.HostKube(t).Config)
	const accessKey = "access-key-0123456789-secret"

	code, body := admin.Get(handlerstest.SettingsPage)
	require.Equal(t, http.StatusOK, code)
	require.Regexp(t, `data-testid="admin-nav-settings"\s+aria-current="page"`, body)
	require.Contains(t, body, `data-testid="settings-no-host"`)
	require.Contains(t, body, "No host cluster is connected.")
	require.Contains(t, body, "KUBEBYON_KUBECONFIG")
	require.Contains(t, body, `data-source="none"`)
	require.Contains(t, body, `value="https://charts.loft.sh"`, "the defaults")
	require.Contains(t, body, `value="0.30.0"`)
	require.Contains(t, body, "vcluster-pro")
	require.Contains(t, body, "vcluster-platform-api-key")
	require.Contains(t, body, "No access key is stored.")
	require.NotContains(t, body, `data-testid="settings-hostKubeconfigClear"`, "nothing to clear")

	// Every field at once; the kubeconfig as a file.
	form := handlerstest.FullSettings(t)
	resp, body := admin.PostSettings(handlerstest.SettingsPage, handlerstest.FormWith(form, "platformAccessKey", accessKey, "password", password), kubeconfig, false)
	require.Equal(t, http.StatusSeeOther, resp.StatusCode, body)
	require.Equal(t, handlerstest.SettingsPage, resp.Header.Get("Location"))

	rt := b.LoadSettings(t)
	require.Equal(t, settings.Runtime{
		HostKubeconfig: kubeconfig[:len(kubeconfig)-1], // trimmed of its final newline
		ChartRepo:      "oci://registry.example.com/charts", ChartVersion: "0.29.1", ChartPath: form.Get("chartPath"),
		PlatformHost: "platform.example.com:8443", PlatformAccessKey: accessKey, PlatformProject: "kubebyon", PlatformInsecure: true,
		DefaultAccessMode: "loadbalancer", EdgeAddressType: "ExternalIP", APIBaseDomain: "k8s.example.com",
		PodCIDR: "10.100.0.0/16", ServiceCIDR: "10.101.0.0/16", PodCIDRPool: "10.160.0.0/12", PodCIDRBlock: 22,
		AllowedVersions: []string{"v1.34.1", "v1.33.5", "v1.32.9"},
		NodePortMin:     31000, NodePortMax: 31999,
		Backend: "kamaji", KamajiDataStore: "postgres-ha", PublicAPIPort: 6443, PackageMirror: "https://mirror.example.com/k8s",
	}, rt)
	row := b.SettingsRow(t)
	require.Contains(t, row, "hostKubeconfigSealed")
	require.Contains(t, row, "platformAccessKeySealed")
	require.NotContains(t, row, accessKey, "secrets are sealed")
	require.NotContains(t, row, "client-certificate-data")
	require.NotContains(t, row, "current-context")

	code, body = admin.Get(handlerstest.SettingsPage)
	require.Equal(t, http.StatusOK, code)
	require.Contains(t, body, "Settings saved.")
	require.NotContains(t, body, `data-testid="settings-no-host"`)
	// Kamaji is the default backend, and the host has no Kamaji operator:
	// the page says so, and how to install it.
	require.Contains(t, body, `data-testid="settings-kamaji-missing"`)
	require.Contains(t, body, "helm install kamaji clastix/kamaji")
	require.Contains(t, body, `data-source="stored"`)
	require.Regexp(t, `A kubeconfig is stored \(uploaded \d{4}-\d\d-\d\d \d\d:\d\d UTC by `+adminEmail+`\)`, body)
	require.NotContains(t, body, "client-certificate-data", "a stored kubeconfig is never shown")
	require.NotContains(t, body, accessKey, "nor the access key")
	require.Contains(t, body, "An access key is stored")
	require.Contains(t, body, `data-testid="settings-hostKubeconfigClear"`)
	require.Contains(t, body, `value="oci://registry.example.com/charts"`)
	require.Contains(t, body, "v1.34.1\nv1.33.5\nv1.32.9</textarea>")
	require.Regexp(t, `<option value="loadbalancer" selected`, body)
	require.Regexp(t, `<option value="ExternalIP" selected`, body)
	require.Regexp(t, `name="platformInsecure" type="checkbox" value="on" checked`, body)

	events := b.AuditEvents(t, "admin.settings_update")
	require.Len(t, events, 1)
	require.ElementsMatch(t, []string{
		"hostKubeconfig", "chartRepo", "chartVersion", "chartPath", "platformHost", "platformAccessKey",
		"platformProject", "platformInsecure", "defaultAccessMode", "edgeAddressType", "apiBaseDomain", "podCIDR", "serviceCIDR", "podCIDRPool", "podCIDRBlock",
		"allowedVersions", "nodePortMin", "nodePortMax", "backend", "kamajiDataStore", "publicAPIPort", "packageMirror",
	}, changedOf(events[0]))
	require.Equal(t, "uploaded", events[0]["hostKubeconfig"])
	require.Equal(t, "replaced", events[0]["platformAccessKey"])
	var raw string
	require.NoError(t, b.Pool.QueryRow(context.Background(),
		"SELECT details::text FROM audit_events WHERE action = 'admin.settings_update'").Scan(&raw))
	require.NotContains(t, raw, accessKey)
	require.NotContains(t, raw, "BEGIN CERTIFICATE")

	// The same form again, secrets left empty: nothing changes, nothing is
	// written, and no password is needed.
	resp, body = admin.PostSettings(handlerstest.SettingsPage, form, "", false)
	require.Equal(t, http.StatusSeeOther, resp.StatusCode, body)
	_, body = admin.Get(handlerstest.SettingsPage)
	require.Contains(t, body, "Nothing changed")
	require.Len(t, b.AuditEvents(t, "admin.settings_update"), 1)
	require.Equal(t, rt, b.LoadSettings(t), "empty secret fields keep the stored secrets")

	// One plain field: no password needed; only it is in the event.
	resp, body = admin.PostSettings(handlerstest.SettingsPage, handlerstest.FormWith(form, "chartVersion", "0.30.1"), "", false)
	require.Equal(t, http.StatusSeeOther, resp.StatusCode, body)
	events = b.AuditEvents(t, "admin.settings_update")
	require.Len(t, events, 2)
	require.Equal(t, []string{"chartVersion"}, changedOf(events[1]))
	require.NotContains(t, events[1], "hostKubeconfig")
	rt.ChartVersion = "0.30.1"
	require.Equal(t, rt, b.LoadSettings(t))

	// Clearing both secrets needs the password.
	clear := handlerstest.FormWith(form, "chartVersion", "0.30.1", "hostKubeconfigClear", "on", "platformAccessKeyClear", "on")
	resp, body = admin.PostSettings(handlerstest.SettingsPage, clear, "", false)
	require.Equal(t, http.StatusUnprocessableEntity, resp.StatusCode)
	require.Contains(t, body, `data-testid="error-password">Enter your password to change the host kubeconfig or the access key.`)
	require.Equal(t, rt, b.LoadSettings(t))
	resp, body = admin.PostSettings(handlerstest.SettingsPage, handlerstest.FormWith(clear, "password", password), "", false)
	require.Equal(t, http.StatusSeeOther, resp.StatusCode, body)
	rt.HostKubeconfig, rt.PlatformAccessKey = "", ""
	require.Equal(t, rt, b.LoadSettings(t))
	events = b.AuditEvents(t, "admin.settings_update")
	require.Len(t, events, 3)
	require.Equal(t, []string{"hostKubeconfig", "platformAccessKey"}, changedOf(events[2]))
	require.Equal(t, "cleared", events[2]["hostKubeconfig"])
	require.Equal(t, "cleared", events[2]["platformAccessKey"])
	_, body = admin.Get(handlerstest.SettingsPage)
	require.Contains(t, body, `data-testid="settings-no-host"`)
	require.NotContains(t, b.SettingsRow(t), "Sealed")
}

func TestAdminSettingsBadValues(t *testing.T) {
	t.Parallel()
	b := handlerstest.Setup(t)
	admin, _ := b.SignedUpAdmin(t, "typo")
	const password = "password of typo"
	execKubeconfig := `apiVersion: v1
kind: Config
clusters: [{name: c, cluster: {server: "https://127.0.0.1:6443"}}]
users: [{name: u, user: {exec: {apiVersion: client.authentication.k8s.io/v1, command: /bin/sh, args: ["-c", "touch /tmp/pwned"]}}}]
contexts: [{name: c, context: {cluster: c, user: u}}]
current-context: c
`
	form := handlerstest.FullSettings(t)
	tests := []struct {
		name       string
		form       url.Values
		kubeconfig string
		field, msg string
	}{
		{"chart repo", handlerstest.FormWith(form, "chartPath", "", "chartRepo", "ftp://charts.example.com"), "", "chartRepo", "Enter the chart repository&#39;s URL"},
		{"chart version", handlerstest.FormWith(form, "chartPath", "", "chartVersion", " "), "", "chartVersion", "Required."},
		{"chart path", handlerstest.FormWith(form, "chartPath", "/no/such/chart"), "", "chartPath", "No chart directory is at this path"},
		{"platform host", handlerstest.FormWith(form, "platformHost", "https://platform.example.com/x"), "", "platformHost", "Enter the host name"},
		{"access mode", handlerstest.FormWith(form, "defaultAccessMode", "ingress"), "", "defaultAccessMode", "Choose NodePort or LoadBalancer."},
		{"edge address", handlerstest.FormWith(form, "edgeAddressType", "Hostname"), "", "edgeAddressType", "Choose InternalIP or ExternalIP."},
		{"domain", handlerstest.FormWith(form, "apiBaseDomain", "not a domain!"), "", "apiBaseDomain", "Enter a domain name"},
		{"pod CIDR", handlerstest.FormWith(form, "podCIDR", "10.244.0.0"), "", "podCIDR", "Enter a network in CIDR notation"},
		{"service CIDR", handlerstest.FormWith(form, "serviceCIDR", "ten"), "", "serviceCIDR", "Enter a network in CIDR notation"},
		{"pod pool", handlerstest.FormWith(form, "podCIDRPool", "10.160.0.1/12"), "", "podCIDRPool", "Enter an IPv4 network in CIDR notation with its host bits zero"},
		{"pod pool overlaps services", handlerstest.FormWith(form, "podCIDRPool", "10.96.0.0/11"), "", "podCIDRPool", "The pool overlaps the service CIDR."},
		{"pod block", handlerstest.FormWith(form, "podCIDRBlock", "30"), "", "podCIDRBlock", "Enter a prefix length from the pool"},
		{"versions", handlerstest.FormWith(form, "allowedVersions", "v1.34.1\n1.33"), "", "allowedVersions", "List at least one version"},
		{"no versions", handlerstest.FormWith(form, "allowedVersions", " ,\n"), "", "allowedVersions", "List at least one version"},
		{"ports reversed", handlerstest.FormWith(form, "nodePortMin", "32000", "nodePortMax", "31000"), "", "nodePortRange", "Enter a range from 1 to 65535"},
		{"port not a number", handlerstest.FormWith(form, "nodePortMin", "lots"), "", "nodePortRange", "Enter a range from 1 to 65535"},
		{"port too high", handlerstest.FormWith(form, "nodePortMax", "70000"), "", "nodePortRange", "Enter a range from 1 to 65535"},
		{"kubeconfig", handlerstest.FormWith(form, "password", password), "not: [a kubeconfig", "hostKubeconfig", "This is not a usable kubeconfig"},
		{"kubeconfig too large", handlerstest.FormWith(form, "password", password), strings.Repeat("# padding\n", 30000), "hostKubeconfig", "This file is too large to be a kubeconfig"},
		{"kubeconfig runs programs", handlerstest.FormWith(form, "password", password), execKubeconfig, "hostKubeconfig", "This kubeconfig runs a program or reads files"},
		{"kubeconfig replaced and cleared", handlerstest.FormWith(form, "password", password, "hostKubeconfigClear", "on"), handlerstest.KubeconfigOf(t, testenv.HostKube(t).Config), "hostKubeconfig", "Give a new value or remove the stored one, not both."},
		{"access key replaced and cleared", handlerstest.FormWith(form, "password", password, "platformAccessKey", "k", "platformAccessKeyClear", "on"), "", "platformAccessKey", "Give a new value or remove the stored one, not both."},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			resp, body := admin.PostSettings(handlerstest.SettingsPage, tt.form, tt.kubeconfig, false)
			require.Equal(t, http.StatusUnprocessableEntity, resp.StatusCode)
			require.Contains(t, body, `data-testid="form-error">Nothing was saved`)
			require.Contains(t, body, `data-testid="error-`+tt.field+`">`+tt.msg)
			require.Equal(t, 1, strings.Count(body, `data-testid="error-`), "only the bad field is marked")
			require.Contains(t, body, `value="kubebyon"`, "what was typed is kept")
			require.NotContains(t, body, "touch /tmp/pwned", "a kubeconfig is never shown back")
		})
	}
	require.Empty(t, b.SettingsRow(t), "nothing was stored")
	require.Empty(t, b.AuditEvents(t, "admin.settings_update"))
	_, err := os.Stat("/tmp/pwned")
	require.True(t, os.IsNotExist(err), "the exec plugin never ran")
}

func TestAdminSettingsSecretsNeedThePassword(t *testing.T) {
	t.Parallel()
	b := handlerstest.Setup(t)
	admin, _ := b.SignedUpAdmin(t, "careful")
	const password = "password of careful"
	kubeconfig := handlerstest.KubeconfigOf(t, testenv.HostKube(t).Config)
	form := handlerstest.FullSettings(t)

	for _, tt := range []struct {
		name       string
		form       url.Values
		kubeconfig string
		msg        string
	}{
		{"kubeconfig, no password", form, kubeconfig, "Enter your password to change"},
		{"kubeconfig pasted, wrong password", handlerstest.FormWith(form, "hostKubeconfig", kubeconfig, "password", "guess"), "", "That is not your password."},
		{"access key, no password", handlerstest.FormWith(form, "platformAccessKey", "new-key"), "", "Enter your password to change"},
		{"access key, wrong password", handlerstest.FormWith(form, "platformAccessKey", "new-key", "password", "guess"), "", "That is not your password."},
	} {
		t.Run(tt.name, func(t *testing.T) {
			resp, body := admin.PostSettings(handlerstest.SettingsPage, tt.form, tt.kubeconfig, false)
			require.Equal(t, http.StatusUnprocessableEntity, resp.StatusCode)
			require.Contains(t, body, `data-testid="error-password">`+tt.msg)
			require.NotContains(t, body, "new-key")
			require.NotContains(t, body, "guess")
		})
	}
	require.Empty(t, b.SettingsRow(t), "nothing was stored, not even the plain fields")

	// The pasted kubeconfig with the right password.
	resp, body := admin.PostSettings(handlerstest.SettingsPage, handlerstest.FormWith(form, "hostKubeconfig", kubeconfig, "password", password), "", false)
	require.Equal(t, http.StatusSeeOther, resp.StatusCode, body)
	require.Equal(t, strings.TrimSpace(kubeconfig), b.LoadSettings(t).HostKubeconfig)

	// Guessing is limited with the admin actions' limit: 10 tries in 15
	// minutes (two were used above; the success reset them).
	for range 10 {
		resp, _ := admin.PostSettings(handlerstest.SettingsPage, handlerstest.FormWith(form, "platformAccessKey", "new-key", "password", "guess"), "", false)
		require.Equal(t, http.StatusUnprocessableEntity, resp.StatusCode)
	}
	resp, body = admin.PostSettings(handlerstest.SettingsPage, handlerstest.FormWith(form, "platformAccessKey", "new-key", "password", password), "", false)
	require.Equal(t, http.StatusTooManyRequests, resp.StatusCode)
	require.NotEmpty(t, resp.Header.Get("Retry-After"))
	require.Contains(t, body, `data-testid="form-error"`)
	require.Empty(t, b.LoadSettings(t).PlatformAccessKey)
}

func TestAdminSettingsTestConnection(t *testing.T) {
	t.Parallel()
	b := handlerstest.Setup(t)
	admin, _ := b.SignedUpAdmin(t, "tester")
	k := testenv.HostKube(t)
	user := "settings-" + strings.ToLower(rand.Text()[:10])
	limited := handlerstest.KubeconfigOf(t, k.UserConfig(t, user))
	const test = handlerstest.SettingsPage + "/test"

	t.Run("nothing configured", func(t *testing.T) {
		resp, body := admin.PostSettings(test, handlerstest.FullSettings(t), "", true)
		require.Equal(t, http.StatusOK, resp.StatusCode)
		require.Contains(t, body, `data-testid="settings-test-error">There is nothing to test: no host cluster is configured.`)
	})

	t.Run("uploaded kubeconfig of a user without permissions", func(t *testing.T) {
		resp, body := admin.PostSettings(test, handlerstest.FullSettings(t), limited, true)
		require.Equal(t, http.StatusOK, resp.StatusCode)
		require.True(t, strings.HasPrefix(body, `<article data-testid="settings-test-result" data-source="upload"`), body)
		require.NotContains(t, body, "<html")
		require.Contains(t, body, `data-ok="false"`)
		require.Contains(t, body, "permissions are missing (61)")
		require.Contains(t, body, "Server "+k.URL+", Kubernetes v1.34.2.")
		require.Equal(t, 61+36, strings.Count(body, `data-allowed="false"`), "and the platform edge's, shown")
		require.Zero(t, strings.Count(body, `data-allowed="true"`))
		require.Contains(t, body, `data-testid="perm-create-namespaces" data-allowed="false"`)
		require.Contains(t, body, `data-testid="perm-delete-statefulsets.apps" data-allowed="false"`)
		require.Contains(t, body, `data-testid="perm-list-nodes" data-allowed="false"`)
		require.Contains(t, body, `data-testid="perm-row-gateways.gateway.networking.k8s.io" data-counted="false"`)
		require.Contains(t, body, "Only for the platform edge: not counted while no GatewayClass is set")
		require.NotContains(t, body, "BEGIN CERTIFICATE")

		// The edge offered (a GatewayClass named): its permissions count.
		ctx := context.Background()
		st, err := ingress.LoadSettings(ctx, queries.New(b.Pool))
		require.NoError(t, err)
		st.GatewayClass = "eg"
		require.NoError(t, ingress.SaveSettings(ctx, queries.New(b.Pool), st))
		_, body = admin.PostSettings(test, handlerstest.FullSettings(t), limited, true)
		require.Contains(t, body, "permissions are missing (97)")
		require.Contains(t, body, `data-testid="perm-row-certificates.cert-manager.io" data-counted="true"`)
		require.Contains(t, body, `data-testid="perm-patch-endpointslices.discovery.k8s.io" data-allowed="false"`)
		st.GatewayClass = ""
		require.NoError(t, ingress.SaveSettings(ctx, queries.New(b.Pool), st))
	})

	t.Run("stored kubeconfig", func(t *testing.T) {
		resp, body := admin.PostSettings(handlerstest.SettingsPage, handlerstest.FormWith(handlerstest.FullSettings(t), "password", "password of tester"), limited, false)
		require.Equal(t, http.StatusSeeOther, resp.StatusCode, body)
		_, body = admin.PostSettings(test, handlerstest.FullSettings(t), "", true)
		require.Contains(t, body, `data-source="stored"`)
		require.Contains(t, body, "Tested with the stored kubeconfig.")
		require.Contains(t, body, "permissions are missing (61)")
		// Ticking "remove" tests what would be left: nothing.
		_, body = admin.PostSettings(test, handlerstest.FormWith(handlerstest.FullSettings(t), "hostKubeconfigClear", "on"), "", true)
		require.Contains(t, body, "There is nothing to test")
	})

	t.Run("granted permissions show up", func(t *testing.T) {
		handlerstest.GrantClusterWide(t, k, user,
			rbacv1.PolicyRule{APIGroups: []string{""}, Resources: []string{"secrets"}, Verbs: []string{"get", "list"}},
			rbacv1.PolicyRule{APIGroups: []string{"policy"}, Resources: []string{"poddisruptionbudgets"}, Verbs: []string{"*"}},
		)
		var body string
		require.Eventually(t, func() bool {
			_, body = admin.PostSettings(test, handlerstest.FullSettings(t), limited, true)
			return strings.Count(body, `data-allowed="true"`) == 8
		}, 10*time.Second, 100*time.Millisecond, "the apiserver's RBAC cache catches up")
		require.Contains(t, body, `data-testid="perm-get-secrets" data-allowed="true"`)
		require.Contains(t, body, `data-testid="perm-list-secrets" data-allowed="true"`)
		require.Contains(t, body, `data-testid="perm-create-secrets" data-allowed="false"`)
		for _, verb := range []string{"create", "get", "list", "update", "patch", "delete"} {
			require.Contains(t, body, `data-testid="perm-`+verb+`-poddisruptionbudgets.policy" data-allowed="true"`)
		}
		require.Contains(t, body, "permissions are missing (53)")
	})

	t.Run("without JavaScript the page comes back", func(t *testing.T) {
		form := handlerstest.FormWith(handlerstest.FullSettings(t), "chartVersion", "0.29.9")
		before := b.SettingsRow(t)
		resp, body := admin.PostSettings(test, form, handlerstest.KubeconfigOf(t, k.Config), false)
		require.Equal(t, http.StatusOK, resp.StatusCode)
		require.Contains(t, body, "<!doctype html>")
		require.Contains(t, body, `data-testid="settings-form"`)
		require.Contains(t, body, `value="0.29.9"`, "the form keeps what was typed")
		require.Contains(t, body, `data-ok="true"`)
		require.Contains(t, body, "every permission the platform needs is granted")
		require.Equal(t, 61+36, strings.Count(body, `data-allowed="true"`))
		require.NotContains(t, body, "BEGIN CERTIFICATE", "the uploaded kubeconfig is not shown back")
		require.Equal(t, before, b.SettingsRow(t), "testing saves nothing")
	})

	t.Run("unreachable server", func(t *testing.T) {
		cfg := rest.CopyConfig(k.Config)
		cfg.Host = "https://" + handlerstest.ClosedPort(t)
		resp, body := admin.PostSettings(test, handlerstest.FullSettings(t), handlerstest.KubeconfigOf(t, cfg), true)
		require.Equal(t, http.StatusOK, resp.StatusCode)
		require.Contains(t, body, `data-testid="settings-test-error">Cannot reach the host cluster at `+cfg.Host+`.`)
		require.Contains(t, body, "connection refused")
		require.NotContains(t, body, "settings-permissions")
	})

	t.Run("kubeconfig that runs programs", func(t *testing.T) {
		marker := filepath.Join(t.TempDir(), "ran")
		kc := fmt.Sprintf(`apiVersion: v1
kind: Config
clusters: [{name: c, cluster: {server: %q, insecure-skip-tls-verify: true}}]
users: [{name: u, user: {exec: {apiVersion: client.authentication.k8s.io/v1, command: /bin/sh, args: ["-c", "touch %s"]}}}]
contexts: [{name: c, context: {cluster: c, user: u}}]
current-context: c
`, k.URL, marker)
		_, body := admin.PostSettings(test, handlerstest.FullSettings(t), kc, true)
		require.Contains(t, body, "This kubeconfig runs a program or reads files")
		_, err := os.Stat(marker)
		require.True(t, os.IsNotExist(err), "the exec plugin never ran")
	})

}

// TestAdminSettingsKubeconfigFromEnvironment: with KUBEBYON_KUBECONFIG
// set and nothing uploaded, the page says so and tests that file.
func TestAdminSettingsKubeconfigFromEnvironment(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "kubeconfig")
	require.NoError(t, os.WriteFile(path, testenv.HostKube(t).Kubeconfig(t), 0o600))
	b := handlerstest.Setup(t, func(d *handlers.Deps) {
		d.AdminSettings = &adminsettings.Service{Pool: d.Pool, Box: d.Box, KubeconfigPath: path}
	})
	admin, _ := b.SignedUpAdmin(t, "operator")

	code, body := admin.Get(handlerstest.SettingsPage)
	require.Equal(t, http.StatusOK, code)
	require.NotContains(t, body, `data-testid="settings-no-host"`)
	require.Contains(t, body, `data-source="file"`)
	require.Contains(t, body, "using KUBEBYON_KUBECONFIG "+path)

	_, body = admin.PostSettings(handlerstest.SettingsPage+"/test", handlerstest.FullSettings(t), "", true)
	require.Contains(t, body, `data-source="file"`)
	require.Contains(t, body, `data-ok="true"`)
	require.Contains(t, body, "Tested with the KUBEBYON_KUBECONFIG file.")
}

// TestAdminSettingsAfterKeyChange: secrets sealed with another platform
// key do not break the page; it says what happened, and saving new ones
// (with the password) puts the platform right.
func TestAdminSettingsAfterKeyChange(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	b := handlerstest.Setup(t)
	admin, _ := b.SignedUpAdmin(t, "rekeyed")
	oldKey, err := secrets.New(bytes.Repeat([]byte{42}, 32))
	require.NoError(t, err)
	rt := settings.Defaults()
	rt.HostKubeconfig = handlerstest.KubeconfigOf(t, testenv.HostKube(t).Config)
	rt.PlatformAccessKey = "old-access-key"
	require.NoError(t, settings.Save(ctx, queries.New(b.Pool), oldKey, rt))
	_, err = settings.Load(ctx, queries.New(b.Pool), b.Box)
	var unreadable *settings.UnreadableError
	require.ErrorAs(t, err, &unreadable)
	require.Equal(t, []string{"hostKubeconfig", "platformAccessKey"}, unreadable.Fields)

	code, body := admin.Get(handlerstest.SettingsPage)
	require.Equal(t, http.StatusOK, code, body)
	require.Contains(t, body, `data-testid="settings-unreadable"`)

	form := handlerstest.FullSettings(t)
	resp, body := admin.PostSettings(handlerstest.SettingsPage, form, "", false)
	require.Equal(t, http.StatusUnprocessableEntity, resp.StatusCode, "rewriting the secrets needs the password")
	require.Contains(t, body, `data-testid="error-password">`)
	kubeconfig := handlerstest.KubeconfigOf(t, testenv.HostKube(t).Config)
	resp, body = admin.PostSettings(handlerstest.SettingsPage, handlerstest.FormWith(form, "platformAccessKey", "new-access-key", "password", "password of rekeyed"), kubeconfig, false)
	require.Equal(t, http.StatusSeeOther, resp.StatusCode, body)
	got := b.LoadSettings(t)
	require.Equal(t, strings.TrimSpace(kubeconfig), got.HostKubeconfig)
	require.Equal(t, "new-access-key", got.PlatformAccessKey)
	_, body = admin.Get(handlerstest.SettingsPage)
	require.NotContains(t, body, `data-testid="settings-unreadable"`)
}
