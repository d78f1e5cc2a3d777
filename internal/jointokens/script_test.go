package jointokens

import (
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"text/template"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/kubebyon/kubebyon/internal/locale"
)

// perCallScript is how the join script was rendered before it was parsed
// once per language: parsed on every call, translating with the request's
// localizer.
func perCallScript(ctx context.Context) *template.Template {
	return template.Must(template.New("join.sh").Funcs(template.FuncMap{
		"q":   shellQuote,
		"msg": func(id string) string { return shellQuote(locale.T(ctx, id)) },
	}).Parse(joinScriptSource))
}

// TestScript renders the join script in each language, in turns so
// that each language's parsed script is used again after the other's, and
// compares it with the per-call rendering byte for byte.
func TestScript(t *testing.T) {
	t.Parallel()
	catalog, err := locale.New()
	require.NoError(t, err)
	data := ScriptData{
		EventsURL: "https://kubebyon.test/join/abcdef.0123456789abcdef/events",
		Endpoint:  "c1.kubebyon.test:443",
		CACert:    "-----BEGIN CERTIFICATE-----\nMIIB'it's'\n-----END CERTIFICATE-----\n",
		Token:     "abcdef.0123456789abcdef",
	}
	tests := []struct {
		name     string
		ctx      context.Context
		contains string
	}{
		{"en", locale.With(context.Background(), catalog.For("en")), "This script must run as root"},
		{"zh-CN", locale.With(context.Background(), catalog.For("zh-CN")), "此脚本"},
		{"zh-CN from Accept-Language", locale.With(context.Background(), catalog.For("zh-Hans-CN,zh;q=0.9")), "此脚本"},
		{"en by fallback", locale.With(context.Background(), catalog.For("de-DE")), "This script must run as root"},
		{"outside a request", context.Background(), "JoinScriptNotRoot"},
	}
	svc := &Service{}
	for round := range 2 {
		for _, tt := range tests {
			var want bytes.Buffer
			require.NoError(t, perCallScript(tt.ctx).Execute(&want, data))
			got, err := svc.Script(tt.ctx, data)
			require.NoError(t, err)
			require.Equal(t, want.String(), string(got), "%s, round %d", tt.name, round+1)
			require.Contains(t, string(got), tt.contains, tt.name)
		}
	}
}

// TestScriptShellcheck: both join scripts, the hand-over to vcluster's
// and kubeadm's own, are POSIX sh that shellcheck finds nothing in, in
// each language.
func TestScriptShellcheck(t *testing.T) {
	t.Parallel()
	shellcheck, err := exec.LookPath("shellcheck")
	require.NoError(t, err, "shellcheck is not installed (Debian package shellcheck; .ci/run installs it)")
	catalog, err := locale.New()
	require.NoError(t, err)
	ca := string(testCA(t))
	hash, err := CACertHash(ca)
	require.NoError(t, err)
	require.Regexp(t, `^sha256:[0-9a-f]{64}$`, hash)
	for _, lang := range []string{"en", "zh-CN"} {
		for _, kubeadm := range []bool{false, true} {
			d := ScriptData{EventsURL: "https://kubebyon.test/join/abcdef.0123456789abcdef/events", Endpoint: "c1.kubebyon.test:443",
				CACert: ca, Token: "abcdef.0123456789abcdef"}
			if kubeadm {
				d.Kubeadm, d.CACertHash, d.KubernetesMinor, d.PackageRepo = true, hash, "v1.34", DefaultPackageRepo
			}
			script, err := (&Service{}).Script(locale.With(context.Background(), catalog.For(lang)), d)
			require.NoError(t, err)
			path := filepath.Join(t.TempDir(), "join.sh")
			require.NoError(t, os.WriteFile(path, script, 0o600))
			out, err := exec.Command(shellcheck, "-s", "sh", path).CombinedOutput()
			require.NoError(t, err, "%s, kubeadm %v: shellcheck:\n%s", lang, kubeadm, out)
			require.Equal(t, kubeadm, bytes.Contains(script, []byte("kubeadm \"$@\"")), "%s, kubeadm %v", lang, kubeadm)
		}
	}
}

// testCA is a self-signed CA certificate (PEM).
func testCA(t *testing.T) []byte {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	require.NoError(t, err)
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "test CA"}, IsCA: true, BasicConstraintsValid: true,
		NotBefore: time.Unix(0, 0), NotAfter: time.Date(9999, 1, 1, 0, 0, 0, 0, time.UTC)}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	require.NoError(t, err)
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})
}

// TestKubeadmScriptRuntimeCheck runs the kubeadm join script's checks
// (--check) with a real sh on machines of several distributions that have
// no containerd: it is installable where the script can install it (apt on
// Debian and Ubuntu, dnf on Fedora and Amazon Linux), and on RHEL-like
// systems, whose repositories do not carry it, the script stops before
// changing anything and says what to install. Stand-ins: id, uname and the
// package managers (only found, never run); the tools the checks use are
// the host's, and nothing else is on PATH.
func TestKubeadmScriptRuntimeCheck(t *testing.T) {
	t.Parallel()
	catalog, err := locale.New()
	require.NoError(t, err)
	ca := string(testCA(t))
	hash, err := CACertHash(ca)
	require.NoError(t, err)
	script, err := (&Service{}).Script(locale.With(context.Background(), catalog.For("en")), ScriptData{
		// Reports go nowhere (refused at once), and the endpoint check
		// comes after the one tested.
		EventsURL: "http://127.0.0.1:1/events", Endpoint: "127.0.0.1:1", CACert: ca, Token: "abcdef.0123456789abcdef",
		Kubeadm: true, CACertHash: hash, KubernetesMinor: "v1.34", PackageRepo: DefaultPackageRepo,
	})
	require.NoError(t, err)
	dir := t.TempDir()
	scriptPath := filepath.Join(dir, "join.sh")
	require.NoError(t, os.WriteFile(scriptPath, script, 0o600))

	tests := []struct {
		os, manager string
		installable bool
	}{
		{"debian", "apt-get", true},
		{"ubuntu", "apt-get", true},
		{"fedora", "dnf", true},
		{"amzn", "dnf", true},
		{"rocky", "dnf", false},
		{"rhel", "yum", false},
	}
	for _, tt := range tests {
		t.Run(tt.os, func(t *testing.T) {
			t.Parallel()
			bin := t.TempDir()
			for _, tool := range []string{"curl", "sed", "tr", "awk", "grep", "cat", "mktemp", "rm", "date"} {
				path, err := exec.LookPath(tool)
				require.NoError(t, err)
				require.NoError(t, os.Symlink(path, filepath.Join(bin, tool)))
			}
			stand := map[string]string{"id": "echo 0", "uname": `if [ "$1" = -n ]; then echo box-7; else echo x86_64; fi`, tt.manager: "exit 1"}
			for name, body := range stand {
				require.NoError(t, os.WriteFile(filepath.Join(bin, name), []byte("#!/bin/sh\n"+body+"\n"), 0o755))
			}
			osRelease := filepath.Join(bin, "os-release")
			require.NoError(t, os.WriteFile(osRelease, []byte("ID="+tt.os+"\n"), 0o600))
			cmd := exec.Command("/bin/sh", scriptPath, "--check", "--ignore-preflight-errors", "Swap,SystemVerification,Port-10250")
			cmd.Env = []string{"PATH=" + bin, "KUBEBYON_OS_RELEASE=" + osRelease, "KUBEBYON_SYSTEMD_DIR=" + filepath.Join(bin, "none"),
				"KUBEBYON_CONTAINERD_SOCKET=" + filepath.Join(bin, "none")}
			out, _ := cmd.CombinedOutput()
			if tt.installable {
				require.Contains(t, string(out), "No container runtime yet: containerd will be installed.", string(out))
			} else {
				require.Contains(t, string(out), "Install containerd (on RHEL and its rebuilds, containerd.io from Docker's repository)", string(out))
				require.NotContains(t, string(out), "control plane", "it stops at the check")
			}
		})
	}
}
