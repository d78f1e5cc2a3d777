// Package certfile serves a TLS certificate from a pair of PEM files that
// something else renews (cert-manager, certbot, an admin): a handshake
// after the files change gets the new certificate, without a restart.
package certfile

import (
	"crypto/tls"
	"fmt"
	"os"
	"sync"
	"time"
)

// checkEvery bounds how often the files are looked at.
const checkEvery = 10 * time.Second

// Loader holds the certificate in CertFile and KeyFile.
type Loader struct {
	CertFile, KeyFile string

	mu      sync.Mutex
	cert    *tls.Certificate
	modTime time.Time
	checked time.Time
}

// Load reads the files now; an error says what is wrong with them.
func Load(certFile, keyFile string) (*Loader, error) {
	l := &Loader{CertFile: certFile, KeyFile: keyFile}
	if _, err := l.get(time.Now()); err != nil {
		return nil, err
	}
	return l, nil
}

// GetCertificate implements tls.Config.GetCertificate. Files that
// changed but do not load (written half way) leave the last good
// certificate in use.
func (l *Loader) GetCertificate(*tls.ClientHelloInfo) (*tls.Certificate, error) {
	return l.get(time.Now())
}

func (l *Loader) get(now time.Time) (*tls.Certificate, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.cert != nil && now.Sub(l.checked) < checkEvery {
		return l.cert, nil
	}
	l.checked = now
	mod, err := newest(l.CertFile, l.KeyFile)
	if err != nil {
		if l.cert != nil {
			return l.cert, nil
		}
		return nil, err
	}
	if l.cert != nil && mod.Equal(l.modTime) {
		return l.cert, nil
	}
	cert, err := tls.LoadX509KeyPair(l.CertFile, l.KeyFile)
	if err != nil {
		if l.cert != nil {
			return l.cert, nil
		}
		return nil, fmt.Errorf("load TLS certificate %s and key %s: %w", l.CertFile, l.KeyFile, err)
	}
	l.cert, l.modTime = &cert, mod
	return l.cert, nil
}

// newest is the later modification time of the files.
func newest(paths ...string) (time.Time, error) {
	var t time.Time
	for _, p := range paths {
		fi, err := os.Stat(p)
		if err != nil {
			return time.Time{}, fmt.Errorf("TLS file: %w", err)
		}
		if fi.ModTime().After(t) {
			t = fi.ModTime()
		}
	}
	return t, nil
}
