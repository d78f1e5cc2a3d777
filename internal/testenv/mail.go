package testenv

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"sync"
	"testing"
	"time"
)

// Mailpit is a real SMTP server (mailpit, built from its Go module in
// tools/mailpit) whose API the tests read messages from.
type Mailpit struct {
	SMTPURL string // smtp://127.0.0.1:port?tls=none (with the credentials, for MailAuth's)
	// Username and Password are the only credentials MailAuth's server
	// takes; empty for Mail's, which takes mail from anyone.
	Username string
	Password string
	apiURL   string
}

// mailpitServer is one mailpit process of the test binary.
type mailpitServer struct {
	once sync.Once
	mp   *Mailpit
	cmd  *exec.Cmd
	dir  string
	err  error
}

var mailpit, mailpitAuth mailpitServer

// Mail returns the test binary's mailpit, starting it on first use. Tests
// tell their messages apart by recipient address.
func Mail(t testing.TB) *Mailpit {
	t.Helper()
	mailpit.once.Do(func() { mailpit.mp, mailpit.err = mailpit.start(false) })
	if mailpit.err != nil {
		t.Fatalf("testenv: mailpit: %v", mailpit.err)
	}
	return mailpit.mp
}

// MailAuth returns a second mailpit of the test binary, one that takes
// mail only after SMTP authentication with its Username and Password
// (PLAIN, allowed without TLS: it is on this machine), so that a wrong
// password is refused for real.
func MailAuth(t testing.TB) *Mailpit {
	t.Helper()
	mailpitAuth.once.Do(func() { mailpitAuth.mp, mailpitAuth.err = mailpitAuth.start(true) })
	if mailpitAuth.err != nil {
		t.Fatalf("testenv: mailpit with authentication: %v", mailpitAuth.err)
	}
	return mailpitAuth.mp
}

func stopMailpit() {
	for _, s := range []*mailpitServer{&mailpit, &mailpitAuth} {
		if s.cmd != nil && s.cmd.Process != nil {
			_ = s.cmd.Process.Kill()
			_ = s.cmd.Wait()
		}
		if s.dir != "" {
			_ = os.RemoveAll(s.dir)
		}
	}
}

// repoRoot is the module root, found from this file's location (internal/testenv).
func repoRoot() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Dir(filepath.Dir(filepath.Dir(file)))
}

// mailpitBinary is $MAILPIT (make test builds it once), or built now.
func mailpitBinary(dir string) (string, error) {
	if p := os.Getenv("MAILPIT"); p != "" {
		return p, nil
	}
	bin := filepath.Join(dir, "mailpit")
	cmd := exec.Command("go", "build", "-o", bin, "github.com/axllent/mailpit")
	cmd.Dir = filepath.Join(repoRoot(), "tools", "mailpit")
	if out, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("build mailpit: %w: %s", err, out)
	}
	return bin, nil
}

func freePort() (int, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port, nil
}

func (s *mailpitServer) start(auth bool) (*Mailpit, error) {
	dir, err := tempDir("kubebyon-mailpit-")
	if err != nil {
		return nil, err
	}
	s.dir = dir
	bin, err := mailpitBinary(dir)
	if err != nil {
		return nil, err
	}
	smtpPort, err := freePort()
	if err != nil {
		return nil, err
	}
	httpPort, err := freePort()
	if err != nil {
		return nil, err
	}
	args := []string{
		"--smtp", fmt.Sprintf("127.0.0.1:%d", smtpPort),
		"--listen", fmt.Sprintf("127.0.0.1:%d", httpPort),
		"--database", filepath.Join(dir, "mailpit.db"),
		"--max", "0",
		"--disable-version-check",
		"--quiet",
	}
	mp := &Mailpit{
		SMTPURL: fmt.Sprintf("smtp://127.0.0.1:%d?tls=none", smtpPort),
		apiURL:  fmt.Sprintf("http://127.0.0.1:%d/api/v1", httpPort),
	}
	if auth {
		mp.Username, mp.Password = "kubebyon", rand.Text()
		// An htpasswd file; mailpit takes plain-text passwords in it.
		file := filepath.Join(dir, "smtp-auth")
		if err := os.WriteFile(file, []byte(mp.Username+":"+mp.Password+"\n"), 0o600); err != nil {
			return nil, fmt.Errorf("write mailpit auth file: %w", err)
		}
		args = append(args, "--smtp-auth-file", file, "--smtp-auth-allow-insecure")
		mp.SMTPURL = fmt.Sprintf("smtp://%s:%s@127.0.0.1:%d?tls=none", mp.Username, mp.Password, smtpPort)
	}
	s.cmd = exec.Command(bin, args...)
	if err := s.cmd.Start(); err != nil {
		return nil, fmt.Errorf("start mailpit: %w", err)
	}
	deadline := time.Now().Add(30 * time.Second)
	for {
		resp, err := http.Get(mp.apiURL + "/info")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return mp, nil
			}
		}
		if time.Now().After(deadline) {
			return nil, fmt.Errorf("mailpit did not start: %v", err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// Message is a received email.
type Message struct {
	ID      string
	Subject string
	Text    string
	To      []string
}

// Messages returns every message sent to addr, oldest first.
func (m *Mailpit) Messages(t testing.TB, addr string) []Message {
	t.Helper()
	var list struct {
		Messages []struct {
			ID      string `json:"ID"`
			Subject string `json:"Subject"`
			To      []struct {
				Address string `json:"Address"`
			} `json:"To"`
		} `json:"messages"`
	}
	m.get(t, "/search?query="+url.QueryEscape(`to:"`+addr+`"`), &list)
	out := make([]Message, 0, len(list.Messages))
	for i := len(list.Messages) - 1; i >= 0; i-- { // the API lists newest first
		s := list.Messages[i]
		var full struct {
			Text string `json:"Text"`
		}
		m.get(t, "/message/"+s.ID, &full)
		msg := Message{ID: s.ID, Subject: s.Subject, Text: full.Text}
		for _, to := range s.To {
			msg.To = append(msg.To, to.Address)
		}
		out = append(out, msg)
	}
	return out
}

// WaitMessages waits until addr has received at least n messages and
// returns them all.
func (m *Mailpit) WaitMessages(t testing.TB, addr string, n int) []Message {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		msgs := m.Messages(t, addr)
		if len(msgs) >= n {
			return msgs
		}
		if time.Now().After(deadline) {
			t.Fatalf("testenv: %s received %d messages, want %d", addr, len(msgs), n)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

func (m *Mailpit) get(t testing.TB, path string, v any) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, m.apiURL+path, nil)
	if err != nil {
		t.Fatalf("testenv: mailpit request: %v", err)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("testenv: mailpit %s: %v", path, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("testenv: mailpit %s: %s", path, resp.Status)
	}
	if err := json.NewDecoder(resp.Body).Decode(v); err != nil {
		t.Fatalf("testenv: mailpit %s: %v", path, err)
	}
}
