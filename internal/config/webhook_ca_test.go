package config_test

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"flag"
	"io"
	"math/big"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/kubebyon/kubebyon/internal/config"
)

func TestWebhookCAFile(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	require.NoError(t, err)
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "test CA"}, NotBefore: time.Now(), NotAfter: time.Now().Add(time.Hour), IsCA: true, BasicConstraintsValid: true}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	require.NoError(t, err)
	caPEM := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})
	keyDER, err := x509.MarshalECPrivateKey(key)
	require.NoError(t, err)
	write := func(name string, data []byte) string {
		p := filepath.Join(dir, name)
		require.NoError(t, os.WriteFile(p, data, 0o600))
		return p
	}
	tests := map[string]struct {
		file    string
		wantErr string
	}{
		"certificate":   {file: write("ca.pem", caPEM)},
		"missing":       {file: filepath.Join(dir, "none.pem"), wantErr: "KUBEBYON_WEBHOOK_CA_FILE (--webhook-ca-file)"},
		"not PEM":       {file: write("junk.pem", []byte("hello")), wantErr: "holds no PEM certificate"},
		"a private key": {file: write("key.pem", append(caPEM, pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: keyDER})...)), wantErr: "only CERTIFICATE blocks"},
	}
	for name, tt := range tests {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			fs := flag.NewFlagSet("serve", flag.ContinueOnError)
			fs.SetOutput(io.Discard)
			c := config.RegisterCommon(fs, envMap(map[string]string{"KUBEBYON_DATA_DIR": t.TempDir(), "KUBEBYON_WEBHOOK_CA_FILE": tt.file}))
			require.NoError(t, fs.Parse(nil))
			err := c.Validate()
			if tt.wantErr != "" {
				require.ErrorContains(t, err, tt.wantErr)
				return
			}
			require.NoError(t, err)
			require.Equal(t, caPEM, c.WebhookCABundle)
		})
	}
}
