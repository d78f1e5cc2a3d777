package testenv

import (
	"bufio"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"io"
	"math/big"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// SelfSignedServer is a server certificate of its own for host, valid for
// an hour around now, and a pool that trusts it.
func SelfSignedServer(t testing.TB, host string) (tls.Certificate, *x509.CertPool) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	require.NoError(t, err)
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(time.Now().UnixNano()), Subject: pkix.Name{CommonName: host},
		DNSNames:  []string{host},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	require.NoError(t, err)
	leaf, err := x509.ParseCertificate(der)
	require.NoError(t, err)
	roots := x509.NewCertPool()
	roots.AddCert(leaf)
	return tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key, Leaf: leaf}, roots
}

// TLSEcho serves TLS on 127.0.0.1 with a certificate of its own for host,
// as a control plane behind the edge does: to each client it says
// greeting and a new line, then echoes what it gets until the client
// goes. It returns its port and a pool that trusts its certificate.
func TLSEcho(t testing.TB, host, greeting string) (int, *x509.CertPool) {
	t.Helper()
	cert, roots := SelfSignedServer(t, host)
	ln, err := tls.Listen("tcp", "127.0.0.1:0", &tls.Config{Certificates: []tls.Certificate{cert}})
	require.NoError(t, err)
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				if _, err := io.WriteString(c, greeting+"\n"); err == nil {
					_, _ = io.Copy(c, c)
				}
			}()
		}
	}()
	return ln.Addr().(*net.TCPAddr).Port, roots
}

// TLSGreeting connects to addr over TLS for host, verifying its
// certificate with roots, and reads a TLSEcho's greeting. The connection
// stays open (for 20 seconds at most), to echo through.
func TLSGreeting(addr, host string, roots *x509.CertPool) (*tls.Conn, *bufio.Reader, string, error) {
	c, err := tls.DialWithDialer(&net.Dialer{Timeout: 5 * time.Second}, "tcp", addr, &tls.Config{ServerName: host, RootCAs: roots})
	if err != nil {
		return nil, nil, "", err
	}
	_ = c.SetDeadline(time.Now().Add(20 * time.Second))
	r := bufio.NewReader(c)
	line, err := r.ReadString('\n')
	if err != nil {
		c.Close()
		return nil, nil, "", err
	}
	return c, r, strings.TrimSuffix(line, "\n"), nil
}
