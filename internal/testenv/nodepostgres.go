//go:build linux

package testenv

import (
	"context"
	"crypto/rand"
	"fmt"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/kubebyon/kubebyon/internal/pgserver"
)

// NodePostgres starts a PostgreSQL of t's own that node's pods reach: it
// listens on the host's end of the node's link (HostIP, port 5432) as
// well as its socket, and takes password (SCRAM) logins from the node's
// address, which its pods' traffic leaves the node with (the CNI bridge
// masquerades it), and from HostIP itself (the test process, with the same
// URL). It returns the URL of an empty database, with the
// password, for the pods; the server stops when t ends.
func NodePostgres(t testing.TB, node *Node) string {
	t.Helper()
	skipInShort(t, "PostgreSQL for a node")
	dir, err := tempDir("kubebyon-nodepg-")
	if err != nil {
		t.Fatalf("testenv: node PostgreSQL: %v", err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(dir) })
	// pg_hba.conf of its own: the socket and loopback as initdb's
	// (trust), the node by password.
	hba := filepath.Join(dir, "pg_hba.conf")
	err = os.WriteFile(hba, fmt.Appendf(nil, "local all all trust\nhost all all 127.0.0.1/32 trust\nhost all all %s/32 scram-sha-256\nhost all all %s/32 scram-sha-256\n", node.IP, node.HostIP), 0o644)
	if err != nil {
		t.Fatalf("testenv: node PostgreSQL: %v", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	srv, err := pgserver.Start(ctx, pgserver.Options{
		Dir:      filepath.Join(dir, "pg"),
		Database: "kubebyon",
		Settings: map[string]string{
			"listen_addresses":    node.HostIP,
			"hba_file":            hba,
			"password_encryption": "scram-sha-256",
			"fsync":               "off", "synchronous_commit": "off", "full_page_writes": "off",
			"max_connections": "200",
		},
	})
	if err != nil {
		t.Fatalf("testenv: node PostgreSQL: %v", err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		_ = srv.Stop(ctx)
	})
	conn, err := pgx.Connect(ctx, srv.URL())
	if err != nil {
		t.Fatalf("testenv: node PostgreSQL: %v", err)
	}
	defer conn.Close(ctx)
	password := rand.Text()
	if _, err := conn.Exec(ctx, "ALTER ROLE kubebyon PASSWORD "+quoteLiteral(password)); err != nil {
		t.Fatalf("testenv: node PostgreSQL: set the password: %v", err)
	}
	if _, err := conn.Exec(ctx, "CREATE DATABASE platform"); err != nil {
		t.Fatalf("testenv: node PostgreSQL: %v", err)
	}
	u := url.URL{
		Scheme:   "postgres",
		User:     url.UserPassword("kubebyon", password),
		Host:     net.JoinHostPort(node.HostIP, "5432"),
		Path:     "/platform",
		RawQuery: "sslmode=disable",
	}
	return u.String()
}

// quoteLiteral quotes s as an SQL string literal.
func quoteLiteral(s string) string {
	return "'" + strings.ReplaceAll(s, "'", "''") + "'"
}
