package jointokens

import (
	"bytes"
	"cmp"
	"context"
	"crypto/sha256"
	"crypto/x509"
	_ "embed"
	"encoding/hex"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"net"
	"strings"
	"sync"
	"text/template"

	"github.com/kubebyon/kubebyon/internal/locale"
	"github.com/kubebyon/kubebyon/internal/settings"
	"github.com/kubebyon/kubebyon/queries"
)

//go:embed join.sh.tmpl
var joinScriptSource string

// parseScript parses the join script for l's language: its msg function
// translates with l.
func parseScript(l *locale.Localizer) *template.Template {
	return template.Must(template.New("join.sh").Funcs(template.FuncMap{
		"q":   shellQuote,
		"msg": func(id string) string { return shellQuote(l.T(id)) },
	}).Parse(joinScriptSource))
}

// scripts is the join script parsed once per language, on its first use.
// A language's localizers all translate alike, so the first one's serves
// the language.
type scripts struct {
	byLang sync.Map // language tag → *template.Template
}

// get returns the join script for the request's language.
func (s *scripts) get(ctx context.Context) *template.Template {
	l := locale.From(ctx)
	if !l.Translates() { // outside a request: messages show as their ids
		return parseScript(l)
	}
	if t, ok := s.byLang.Load(l.Tag()); ok {
		return t.(*template.Template)
	}
	t, _ := s.byLang.LoadOrStore(l.Tag(), parseScript(l))
	return t.(*template.Template)
}

// ScriptData is what the join script needs: where to report, the control
// plane's endpoint (host:port) and the CA (PEM) its certificate must be
// signed by, and the token. A cluster whose nodes join with kubeadm
// (Kubeadm) needs the CA's pin for kubeadm (CACertHash, sha256:<hex>), its
// Kubernetes minor version (vX.Y) and the package repository to install
// from (pkgs.k8s.io or the admin's mirror).
type ScriptData struct {
	EventsURL string
	Endpoint  string
	CACert    string
	Token     string

	Kubeadm         bool
	CACertHash      string
	KubernetesMinor string
	PackageRepo     string
}

// DefaultPackageRepo is where the kubeadm join script installs kubelet,
// kubeadm and containerd from, unless the admin names a mirror.
const DefaultPackageRepo = "https://pkgs.k8s.io"

// CACertHash is kubeadm's pin of a CA: sha256 of its public key info.
func CACertHash(caPEM string) (string, error) {
	block, _ := pem.Decode([]byte(caPEM))
	if block == nil {
		return "", errors.New("the cluster's CA is not PEM")
	}
	cert, err := x509.ParseCertificate(block.Bytes)
	if err != nil {
		return "", fmt.Errorf("parse the cluster's CA: %w", err)
	}
	sum := sha256.Sum256(cert.RawSubjectPublicKeyInfo)
	return "sha256:" + hex.EncodeToString(sum[:]), nil
}

// KubernetesMinor is vX.Y of a version vX.Y.Z.
func KubernetesMinor(version string) string {
	parts := strings.SplitN(version, ".", 3)
	if len(parts) < 2 {
		return version
	}
	return parts[0] + "." + parts[1]
}

// JoinScript renders the join script of a token the platform accepted
// (Check), for its cluster's backend: kubeadm's for Kamaji, the hand-over
// to the control plane's own script for vcluster.
func (s *Service) JoinScript(ctx context.Context, row queries.JoinTokenGetByHashRow, ca, token, eventsURL string) ([]byte, error) {
	d := ScriptData{EventsURL: eventsURL, Endpoint: row.ClusterEndpoint, CACert: ca, Token: token}
	if row.ClusterBackend == settings.BackendKamaji {
		hash, err := CACertHash(ca)
		if err != nil {
			return nil, fmt.Errorf("%w: cluster %d: %w", ErrJoinUnavailable, row.ClusterID, err)
		}
		rt, err := settings.Load(ctx, queries.New(s.Pool), s.Box)
		if err != nil {
			return nil, err
		}
		d.Kubeadm, d.CACertHash, d.KubernetesMinor = true, hash, KubernetesMinor(row.ClusterKubernetesVersion)
		d.PackageRepo = cmp.Or(strings.TrimRight(rt.PackageMirror, "/"), DefaultPackageRepo)
		// kubeadm join takes host:port.
		if _, _, err := net.SplitHostPort(d.Endpoint); err != nil {
			d.Endpoint = net.JoinHostPort(d.Endpoint, "443")
		}
	}
	return s.Script(ctx, d)
}

// Script renders the join script in the request's language.
func (s *Service) Script(ctx context.Context, d ScriptData) ([]byte, error) {
	var b bytes.Buffer
	if err := s.scripts.get(ctx).Execute(&b, d); err != nil {
		return nil, fmt.Errorf("render join script: %w", err)
	}
	return b.Bytes(), nil
}

// WriteRefusal renders the script a refused token gets: it prints why and
// exits 1.
func WriteRefusal(ctx context.Context, w io.Writer, reason error) error {
	_, err := fmt.Fprintf(w, "#!/bin/sh\nprintf 'kubebyon: %%s\\n' %s >&2\nexit 1\n", shellQuote(locale.T(ctx, reason.Error())))
	return err
}

// shellQuote makes s one single-quoted sh word.
func shellQuote(s string) string {
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}
