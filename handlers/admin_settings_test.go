package handlers_test

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"mime/multipart"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

	"github.com/kubebyon/kubebyon/handlers"
	"github.com/kubebyon/kubebyon/internal/adminsettings"
	"github.com/kubebyon/kubebyon/internal/ingress"
	"github.com/kubebyon/kubebyon/internal/secrets"
	"github.com/kubebyon/kubebyon/internal/settings"
	"github.com/kubebyon/kubebyon/internal/testenv"
	"github.com/kubebyon/kubebyon/queries"
)

const settingsPage = "/admin/settings"

// kubeconfigOf renders a client configuration with embedded credentials
// as a kubeconfig.
func kubeconfigOf(t *testing.T, cfg *rest.Config) string {
	t.Helper()
	kc := clientcmdapi.NewConfig()
	kc.Clusters["host"] = &clientcmdapi.Cluster{Server: cfg.Host, CertificateAuthorityData: cfg.CAData}
	kc.AuthInfos["user"] = &clientcmdapi.AuthInfo{ClientCertificateData: cfg.CertData, ClientKeyData: cfg.KeyData, Token: cfg.BearerToken}
	kc.Contexts["host"] = &clientcmdapi.Context{Cluster: "host", AuthInfo: "user"}
	kc.CurrentContext = "host"
	b, err := clientcmd.Write(*kc)
	require.NoError(t, err)
	return string(b)
}

// closedPort is an address nothing listens on.
func closedPort(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := ln.Addr().String()
	require.NoError(t, ln.Close())
	return addr
}

// postSettings submits the settings form as a browser does (multipart,
// with the kubeconfig file when one is given); as htmx when htmx is set.
func (c *client) postSettings(path string, form url.Values, kubeconfigFile string, htmx bool) (*http.Response, string) {
	c.t.Helper()
	token := c.csrf(settingsPage)
	var body bytes.Buffer
	w := multipart.NewWriter(&body)
	require.NoError(c.t, w.WriteField("_csrf", token))
	for k, vs := range form {
		for _, v := range vs {
			require.NoError(c.t, w.WriteField(k, v))
		}
	}
	fw, err := w.CreateFormFile("hostKubeconfigFile", "kubeconfig.yaml")
	require.NoError(c.t, err)
	_, err = fw.Write([]byte(kubeconfigFile))
	require.NoError(c.t, err)
	require.NoError(c.t, w.Close())
	req, err := http.NewRequest(http.MethodPost, c.base+path, &body)
	require.NoError(c.t, err)
	req.Header.Set("Content-Type", w.FormDataContentType())
	if htmx {
		req.Header.Set("HX-Request", "true")
		req.Header.Set("X-CSRF-Token", token)
	}
	resp, err := c.http.Do(req)
	require.NoError(c.t, err)
	c.t.Cleanup(func() { resp.Body.Close() })
	return resp, readBody(c.t, resp)
}

// fullSettings is a valid form with every plain field set away from its
// default.
func fullSettings(t *testing.T) url.Values {
	return url.Values{
		"chartRepo":         {"oci://registry.example.com/charts"},
		"chartVersion":      {"0.29.1"},
		"chartPath":         {t.TempDir()},
		"platformHost":      {"platform.example.com:8443"},
		"platformProject":   {"kubebyon"},
		"platformInsecure":  {"on"},
		"defaultAccessMode": {"loadbalancer"},
		"edgeAddressType":   {"ExternalIP"},
		"apiBaseDomain":     {"K8s.Example.com"},
		"podCIDR":           {"10.100.0.0/16"},
		"serviceCIDR":       {"10.101.0.0/16"},
		"podCIDRPool":       {"10.160.0.0/12"},
		"podCIDRBlock":      {"22"},
		"allowedVersions":   {"v1.34.1, v1.33.5\r\nv1.32.9"},
		"nodePortMin":       {"31000"},
		"nodePortMax":       {"31999"},
		"backend":           {"kamaji"},
		"kamajiDataStore":   {"postgres-ha"},
		"publicAPIPort":     {"6443"},
		"packageMirror":     {"https://mirror.example.com/k8s"},
	}
}

// with is form with some fields replaced.
func with(form url.Values, kv ...string) url.Values {
	out := url.Values{}
	for k, v := range form {
		out[k] = append([]string(nil), v...)
	}
	for i := 0; i < len(kv); i += 2 {
		out.Set(kv[i], kv[i+1])
	}
	return out
}

// loadSettings reads the stored settings.
func (b *testBundle) loadSettings(t *testing.T) settings.Runtime {
	t.Helper()
	rt, err := settings.Load(context.Background(), queries.New(b.pool), b.box)
	require.NoError(t, err)
	return rt
}

// settingsRow is the stored settings row as text; "" when there is none.
func (b *testBundle) settingsRow(t *testing.T) string {
	t.Helper()
	var v string
	err := b.pool.QueryRow(context.Background(), "SELECT value::text FROM settings WHERE key = 'runtime'").Scan(&v)
	if errors.Is(err, pgx.ErrNoRows) {
		return ""
	}
	require.NoError(t, err)
	return v
}

// settingsEvents are the details of every settings audit event, oldest first.
func (b *testBundle) settingsEvents(t *testing.T) []map[string]any {
	t.Helper()
	rows, err := b.pool.Query(context.Background(),
		"SELECT details FROM audit_events WHERE action = 'admin.settings_update' ORDER BY id")
	require.NoError(t, err)
	defer rows.Close()
	var out []map[string]any
	for rows.Next() {
		var raw []byte
		require.NoError(t, rows.Scan(&raw))
		d := map[string]any{}
		require.NoError(t, json.Unmarshal(raw, &d))
		out = append(out, d)
	}
	require.NoError(t, rows.Err())
	return out
}

func changedOf(d map[string]any) []string {
	var out []string
	for _, v := range d["changed"].([]any) {
		out = append(out, v.(string))
	}
	return out
}

func TestAdminSettingsSaveAndReadBack(t *testing.T) {
	t.Parallel()
	b := setup(t)
	admin, adminEmail := b.signedUpAdmin(t, "configurer")
	const password = "password of configurer"
	kubeconfig := kubeconfigOf(t, testenv.HostKube(t).Config)
	const accessKey = "access-key-0123456789-secret"

	code, body := admin.get(settingsPage)
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
	form := fullSettings(t)
	resp, body := admin.postSettings(settingsPage, with(form, "platformAccessKey", accessKey, "password", password), kubeconfig, false)
	require.Equal(t, http.StatusSeeOther, resp.StatusCode, body)
	require.Equal(t, settingsPage, resp.Header.Get("Location"))

	rt := b.loadSettings(t)
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
	row := b.settingsRow(t)
	require.Contains(t, row, "hostKubeconfigSealed")
	require.Contains(t, row, "platformAccessKeySealed")
	require.NotContains(t, row, accessKey, "secrets are sealed")
	require.NotContains(t, row, "client-certificate-data")
	require.NotContains(t, row, "current-context")

	code, body = admin.get(settingsPage)
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

	events := b.settingsEvents(t)
	require.Len(t, events, 1)
	require.ElementsMatch(t, []string{
		"hostKubeconfig", "chartRepo", "chartVersion", "chartPath", "platformHost", "platformAccessKey",
		"platformProject", "platformInsecure", "defaultAccessMode", "edgeAddressType", "apiBaseDomain", "podCIDR", "serviceCIDR", "podCIDRPool", "podCIDRBlock",
		"allowedVersions", "nodePortMin", "nodePortMax", "backend", "kamajiDataStore", "publicAPIPort", "packageMirror",
	}, changedOf(events[0]))
	require.Equal(t, "uploaded", events[0]["hostKubeconfig"])
	require.Equal(t, "replaced", events[0]["platformAccessKey"])
	var raw string
	require.NoError(t, b.pool.QueryRow(context.Background(),
		"SELECT details::text FROM audit_events WHERE action = 'admin.settings_update'").Scan(&raw))
	require.NotContains(t, raw, accessKey)
	require.NotContains(t, raw, "BEGIN CERTIFICATE")

	// The same form again, secrets left empty: nothing changes, nothing is
	// written, and no password is needed.
	resp, body = admin.postSettings(settingsPage, form, "", false)
	require.Equal(t, http.StatusSeeOther, resp.StatusCode, body)
	_, body = admin.get(settingsPage)
	require.Contains(t, body, "Nothing changed")
	require.Len(t, b.settingsEvents(t), 1)
	require.Equal(t, rt, b.loadSettings(t), "empty secret fields keep the stored secrets")

	// One plain field: no password needed; only it is in the event.
	resp, body = admin.postSettings(settingsPage, with(form, "chartVersion", "0.30.1"), "", false)
	require.Equal(t, http.StatusSeeOther, resp.StatusCode, body)
	events = b.settingsEvents(t)
	require.Len(t, events, 2)
	require.Equal(t, []string{"chartVersion"}, changedOf(events[1]))
	require.NotContains(t, events[1], "hostKubeconfig")
	rt.ChartVersion = "0.30.1"
	require.Equal(t, rt, b.loadSettings(t))

	// Clearing both secrets needs the password.
	clear := with(form, "chartVersion", "0.30.1", "hostKubeconfigClear", "on", "platformAccessKeyClear", "on")
	resp, body = admin.postSettings(settingsPage, clear, "", false)
	require.Equal(t, http.StatusUnprocessableEntity, resp.StatusCode)
	require.Contains(t, body, `data-testid="error-password">Enter your password to change the host kubeconfig or the access key.`)
	require.Equal(t, rt, b.loadSettings(t))
	resp, body = admin.postSettings(settingsPage, with(clear, "password", password), "", false)
	require.Equal(t, http.StatusSeeOther, resp.StatusCode, body)
	rt.HostKubeconfig, rt.PlatformAccessKey = "", ""
	require.Equal(t, rt, b.loadSettings(t))
	events = b.settingsEvents(t)
	require.Len(t, events, 3)
	require.Equal(t, []string{"hostKubeconfig", "platformAccessKey"}, changedOf(events[2]))
	require.Equal(t, "cleared", events[2]["hostKubeconfig"])
	require.Equal(t, "cleared", events[2]["platformAccessKey"])
	_, body = admin.get(settingsPage)
	require.Contains(t, body, `data-testid="settings-no-host"`)
	require.NotContains(t, b.settingsRow(t), "Sealed")
}

func TestAdminSettingsBadValues(t *testing.T) {
	t.Parallel()
	b := setup(t)
	admin, _ := b.signedUpAdmin(t, "typo")
	const password = "password of typo"
	execKubeconfig := `apiVersion: v1
kind: Config
clusters: [{name: c, cluster: {server: "https://127.0.0.1:6443"}}]
users: [{name: u, user: {exec: {apiVersion: client.authentication.k8s.io/v1, command: /bin/sh, args: ["-c", "touch /tmp/pwned"]}}}]
contexts: [{name: c, context: {cluster: c, user: u}}]
current-context: c
`
	form := fullSettings(t)
	tests := []struct {
		name       string
		form       url.Values
		kubeconfig string
		field, msg string
	}{
		{"chart repo", with(form, "chartPath", "", "chartRepo", "ftp://charts.example.com"), "", "chartRepo", "Enter the chart repository&#39;s URL"},
		{"chart version", with(form, "chartPath", "", "chartVersion", " "), "", "chartVersion", "Required."},
		{"chart path", with(form, "chartPath", "/no/such/chart"), "", "chartPath", "No chart directory is at this path"},
		{"platform host", with(form, "platformHost", "https://platform.example.com/x"), "", "platformHost", "Enter the host name"},
		{"access mode", with(form, "defaultAccessMode", "ingress"), "", "defaultAccessMode", "Choose NodePort or LoadBalancer."},
		{"edge address", with(form, "edgeAddressType", "Hostname"), "", "edgeAddressType", "Choose InternalIP or ExternalIP."},
		{"domain", with(form, "apiBaseDomain", "not a domain!"), "", "apiBaseDomain", "Enter a domain name"},
		{"pod CIDR", with(form, "podCIDR", "10.244.0.0"), "", "podCIDR", "Enter a network in CIDR notation"},
		{"service CIDR", with(form, "serviceCIDR", "ten"), "", "serviceCIDR", "Enter a network in CIDR notation"},
		{"pod pool", with(form, "podCIDRPool", "10.160.0.1/12"), "", "podCIDRPool", "Enter an IPv4 network in CIDR notation with its host bits zero"},
		{"pod pool overlaps services", with(form, "podCIDRPool", "10.96.0.0/11"), "", "podCIDRPool", "The pool overlaps the service CIDR."},
		{"pod block", with(form, "podCIDRBlock", "30"), "", "podCIDRBlock", "Enter a prefix length from the pool"},
		{"versions", with(form, "allowedVersions", "v1.34.1\n1.33"), "", "allowedVersions", "List at least one version"},
		{"no versions", with(form, "allowedVersions", " ,\n"), "", "allowedVersions", "List at least one version"},
		{"ports reversed", with(form, "nodePortMin", "32000", "nodePortMax", "31000"), "", "nodePortRange", "Enter a range from 1 to 65535"},
		{"port not a number", with(form, "nodePortMin", "lots"), "", "nodePortRange", "Enter a range from 1 to 65535"},
		{"port too high", with(form, "nodePortMax", "70000"), "", "nodePortRange", "Enter a range from 1 to 65535"},
		{"kubeconfig", with(form, "password", password), "not: [a kubeconfig", "hostKubeconfig", "This is not a usable kubeconfig"},
		{"kubeconfig too large", with(form, "password", password), strings.Repeat("# padding\n", 30000), "hostKubeconfig", "This file is too large to be a kubeconfig"},
		{"kubeconfig runs programs", with(form, "password", password), execKubeconfig, "hostKubeconfig", "This kubeconfig runs a program or reads files"},
		{"kubeconfig replaced and cleared", with(form, "password", password, "hostKubeconfigClear", "on"), kubeconfigOf(t, testenv.HostKube(t).Config), "hostKubeconfig", "Give a new value or remove the stored one, not both."},
		{"access key replaced and cleared", with(form, "password", password, "platformAccessKey", "k", "platformAccessKeyClear", "on"), "", "platformAccessKey", "Give a new value or remove the stored one, not both."},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			resp, body := admin.postSettings(settingsPage, tt.form, tt.kubeconfig, false)
			require.Equal(t, http.StatusUnprocessableEntity, resp.StatusCode)
			require.Contains(t, body, `data-testid="form-error">Nothing was saved`)
			require.Contains(t, body, `data-testid="error-`+tt.field+`">`+tt.msg)
			require.Equal(t, 1, strings.Count(body, `data-testid="error-`), "only the bad field is marked")
			require.Contains(t, body, `value="kubebyon"`, "what was typed is kept")
			require.NotContains(t, body, "touch /tmp/pwned", "a kubeconfig is never shown back")
		})
	}
	require.Empty(t, b.settingsRow(t), "nothing was stored")
	require.Empty(t, b.settingsEvents(t))
	_, err := os.Stat("/tmp/pwned")
	require.True(t, os.IsNotExist(err), "the exec plugin never ran")
}

func TestAdminSettingsSecretsNeedThePassword(t *testing.T) {
	t.Parallel()
	b := setup(t)
	admin, _ := b.signedUpAdmin(t, "careful")
	const password = "password of careful"
	kubeconfig := kubeconfigOf(t, testenv.HostKube(t).Config)
	form := fullSettings(t)

	for _, tt := range []struct {
		name       string
		form       url.Values
		kubeconfig string
		msg        string
	}{
		{"kubeconfig, no password", form, kubeconfig, "Enter your password to change"},
		{"kubeconfig pasted, wrong password", with(form, "hostKubeconfig", kubeconfig, "password", "guess"), "", "That is not your password."},
		{"access key, no password", with(form, "platformAccessKey", "new-key"), "", "Enter your password to change"},
		{"access key, wrong password", with(form, "platformAccessKey", "new-key", "password", "guess"), "", "That is not your password."},
	} {
		t.Run(tt.name, func(t *testing.T) {
			resp, body := admin.postSettings(settingsPage, tt.form, tt.kubeconfig, false)
			require.Equal(t, http.StatusUnprocessableEntity, resp.StatusCode)
			require.Contains(t, body, `data-testid="error-password">`+tt.msg)
			require.NotContains(t, body, "new-key")
			require.NotContains(t, body, "guess")
		})
	}
	require.Empty(t, b.settingsRow(t), "nothing was stored, not even the plain fields")

	// The pasted kubeconfig with the right password.
	resp, body := admin.postSettings(settingsPage, with(form, "hostKubeconfig", kubeconfig, "password", password), "", false)
	require.Equal(t, http.StatusSeeOther, resp.StatusCode, body)
	require.Equal(t, strings.TrimSpace(kubeconfig), b.loadSettings(t).HostKubeconfig)

	// Guessing is limited with the admin actions' limit: 10 tries in 15
	// minutes (two were used above; the success reset them).
	for range 10 {
		resp, _ := admin.postSettings(settingsPage, with(form, "platformAccessKey", "new-key", "password", "guess"), "", false)
		require.Equal(t, http.StatusUnprocessableEntity, resp.StatusCode)
	}
	resp, body = admin.postSettings(settingsPage, with(form, "platformAccessKey", "new-key", "password", password), "", false)
	require.Equal(t, http.StatusTooManyRequests, resp.StatusCode)
	require.NotEmpty(t, resp.Header.Get("Retry-After"))
	require.Contains(t, body, `data-testid="form-error"`)
	require.Empty(t, b.loadSettings(t).PlatformAccessKey)
}

// grantClusterWide gives user the verbs on resources in every namespace.
func grantClusterWide(t *testing.T, k *testenv.Kube, user string, rules ...rbacv1.PolicyRule) {
	t.Helper()
	ctx := context.Background()
	admin := k.Client(t)
	_, err := admin.RbacV1().ClusterRoles().Create(ctx, &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: user}, Rules: rules}, metav1.CreateOptions{})
	require.NoError(t, err)
	_, err = admin.RbacV1().ClusterRoleBindings().Create(ctx, &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: user},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: user},
		Subjects:   []rbacv1.Subject{{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: user}},
	}, metav1.CreateOptions{})
	require.NoError(t, err)
	t.Cleanup(func() {
		_ = admin.RbacV1().ClusterRoleBindings().Delete(ctx, user, metav1.DeleteOptions{})
		_ = admin.RbacV1().ClusterRoles().Delete(ctx, user, metav1.DeleteOptions{})
	})
}

func TestAdminSettingsTestConnection(t *testing.T) {
	t.Parallel()
	b := setup(t)
	admin, _ := b.signedUpAdmin(t, "tester")
	k := testenv.HostKube(t)
	user := "settings-" + strings.ToLower(rand.Text()[:10])
	limited := kubeconfigOf(t, k.UserConfig(t, user))
	const test = settingsPage + "/test"

	t.Run("nothing configured", func(t *testing.T) {
		resp, body := admin.postSettings(test, fullSettings(t), "", true)
		require.Equal(t, http.StatusOK, resp.StatusCode)
		require.Contains(t, body, `data-testid="settings-test-error">There is nothing to test: no host cluster is configured.`)
	})

	t.Run("uploaded kubeconfig of a user without permissions", func(t *testing.T) {
		resp, body := admin.postSettings(test, fullSettings(t), limited, true)
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
		st, err := ingress.LoadSettings(ctx, queries.New(b.pool))
		require.NoError(t, err)
		st.GatewayClass = "eg"
		require.NoError(t, ingress.SaveSettings(ctx, queries.New(b.pool), st))
		_, body = admin.postSettings(test, fullSettings(t), limited, true)
		require.Contains(t, body, "permissions are missing (97)")
		require.Contains(t, body, `data-testid="perm-row-certificates.cert-manager.io" data-counted="true"`)
		require.Contains(t, body, `data-testid="perm-patch-endpointslices.discovery.k8s.io" data-allowed="false"`)
		st.GatewayClass = ""
		require.NoError(t, ingress.SaveSettings(ctx, queries.New(b.pool), st))
	})

	t.Run("stored kubeconfig", func(t *testing.T) {
		resp, body := admin.postSettings(settingsPage, with(fullSettings(t), "password", "password of tester"), limited, false)
		require.Equal(t, http.StatusSeeOther, resp.StatusCode, body)
		_, body = admin.postSettings(test, fullSettings(t), "", true)
		require.Contains(t, body, `data-source="stored"`)
		require.Contains(t, body, "Tested with the stored kubeconfig.")
		require.Contains(t, body, "permissions are missing (61)")
		// Ticking "remove" tests what would be left: nothing.
		_, body = admin.postSettings(test, with(fullSettings(t), "hostKubeconfigClear", "on"), "", true)
		require.Contains(t, body, "There is nothing to test")
	})

	t.Run("granted permissions show up", func(t *testing.T) {
		grantClusterWide(t, k, user,
			rbacv1.PolicyRule{APIGroups: []string{""}, Resources: []string{"secrets"}, Verbs: []string{"get", "list"}},
			rbacv1.PolicyRule{APIGroups: []string{"policy"}, Resources: []string{"poddisruptionbudgets"}, Verbs: []string{"*"}},
		)
		var body string
		require.Eventually(t, func() bool {
			_, body = admin.postSettings(test, fullSettings(t), limited, true)
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
		form := with(fullSettings(t), "chartVersion", "0.29.9")
		before := b.settingsRow(t)
		resp, body := admin.postSettings(test, form, kubeconfigOf(t, k.Config), false)
		require.Equal(t, http.StatusOK, resp.StatusCode)
		require.Contains(t, body, "<!doctype html>")
		require.Contains(t, body, `data-testid="settings-form"`)
		require.Contains(t, body, `value="0.29.9"`, "the form keeps what was typed")
		require.Contains(t, body, `data-ok="true"`)
		require.Contains(t, body, "every permission the platform needs is granted")
		require.Equal(t, 61+36, strings.Count(body, `data-allowed="true"`))
		require.NotContains(t, body, "BEGIN CERTIFICATE", "the uploaded kubeconfig is not shown back")
		require.Equal(t, before, b.settingsRow(t), "testing saves nothing")
	})

	t.Run("unreachable server", func(t *testing.T) {
		cfg := rest.CopyConfig(k.Config)
		cfg.Host = "https://" + closedPort(t)
		resp, body := admin.postSettings(test, fullSettings(t), kubeconfigOf(t, cfg), true)
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
		_, body := admin.postSettings(test, fullSettings(t), kc, true)
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
	b := setup(t, func(d *handlers.Deps) {
		d.AdminSettings = &adminsettings.Service{Pool: d.Pool, Box: d.Box, KubeconfigPath: path}
	})
	admin, _ := b.signedUpAdmin(t, "operator")

	code, body := admin.get(settingsPage)
	require.Equal(t, http.StatusOK, code)
	require.NotContains(t, body, `data-testid="settings-no-host"`)
	require.Contains(t, body, `data-source="file"`)
	require.Contains(t, body, "using KUBEBYON_KUBECONFIG "+path)

	_, body = admin.postSettings(settingsPage+"/test", fullSettings(t), "", true)
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
	b := setup(t)
	admin, _ := b.signedUpAdmin(t, "rekeyed")
	oldKey, err := secrets.New(bytes.Repeat([]byte{42}, 32))
	require.NoError(t, err)
	rt := settings.Defaults()
	rt.HostKubeconfig = kubeconfigOf(t, testenv.HostKube(t).Config)
	rt.PlatformAccessKey = "old-access-key"
	require.NoError(t, settings.Save(ctx, queries.New(b.pool), oldKey, rt))
	_, err = settings.Load(ctx, queries.New(b.pool), b.box)
	var unreadable *settings.UnreadableError
	require.ErrorAs(t, err, &unreadable)
	require.Equal(t, []string{"hostKubeconfig", "platformAccessKey"}, unreadable.Fields)

	code, body := admin.get(settingsPage)
	require.Equal(t, http.StatusOK, code, body)
	require.Contains(t, body, `data-testid="settings-unreadable"`)

	form := fullSettings(t)
	resp, body := admin.postSettings(settingsPage, form, "", false)
	require.Equal(t, http.StatusUnprocessableEntity, resp.StatusCode, "rewriting the secrets needs the password")
	require.Contains(t, body, `data-testid="error-password">`)
	kubeconfig := kubeconfigOf(t, testenv.HostKube(t).Config)
	resp, body = admin.postSettings(settingsPage, with(form, "platformAccessKey", "new-access-key", "password", "password of rekeyed"), kubeconfig, false)
	require.Equal(t, http.StatusSeeOther, resp.StatusCode, body)
	got := b.loadSettings(t)
	require.Equal(t, strings.TrimSpace(kubeconfig), got.HostKubeconfig)
	require.Equal(t, "new-access-key", got.PlatformAccessKey)
	_, body = admin.get(settingsPage)
	require.NotContains(t, body, `data-testid="settings-unreadable"`)
}
