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
