package testenv

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sync"
	"testing"
	"time"
)

// StripeMockKey is a secret key stripe-mock accepts: it takes any key that
// looks like a test-mode one and refuses live-mode keys.
const StripeMockKey = "sk_test_kubebyon"

var stripeMockBin struct {
	once sync.Once
	path string
	err  error
}

// stripeMockListening is the line stripe-mock prints once its HTTP
// listener is bound.
var stripeMockListening = regexp.MustCompile(`Listening for HTTP at address: (\S+)`)

// StripeMock starts a stripe-mock of its own for t (Stripe's mock of its
// API, which validates requests against Stripe's OpenAPI spec and answers
// with fixtures) and returns its base URL, such as "http://127.0.0.1:port".
// It is stopped when t ends; its log is shown if t failed.
func StripeMock(t testing.TB) string {
	t.Helper()
	stripeMockBin.once.Do(func() { stripeMockBin.path, stripeMockBin.err = stripeMockBinary() })
	if stripeMockBin.err != nil {
		t.Fatalf("testenv: stripe-mock: %v (run 'make bin/stripe-mock' and set STRIPE_MOCK=$PWD/bin/stripe-mock)", stripeMockBin.err)
	}

	var logs Output
	// Port 0 on both listeners: stripe-mock prints the ports it got. Without
	// -https-addr it would also listen for HTTPS on its fixed default port,
	// which parallel tests would fight over.
	cmd := exec.Command(stripeMockBin.path, "-http-addr", "127.0.0.1:0", "-https-addr", "127.0.0.1:0")
	cmd.Stdout, cmd.Stderr = &logs, &logs
	cmd.SysProcAttr = dieWithTests()
	if err := cmd.Start(); err != nil {
		t.Fatalf("testenv: start stripe-mock %s: %v", stripeMockBin.path, err)
	}
	done := make(chan struct{})
	go func() { _ = cmd.Wait(); close(done) }()
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		<-done
		if t.Failed() {
			t.Logf("testenv: stripe-mock log:\n%s", tail(logs.String(), 4000))
		}
	})

	deadline := time.Now().Add(30 * time.Second)
	var baseURL string
	for {
		select {
		case <-done:
			t.Fatalf("testenv: stripe-mock exited: %s\n%s", cmd.ProcessState, tail(logs.String(), 4000))
		default:
		}
		if baseURL == "" {
			if m := stripeMockListening.FindStringSubmatch(logs.String()); m != nil {
				baseURL = "http://" + m[1]
			}
		}
		if baseURL != "" && stripeMockAnswers(baseURL) {
			return baseURL
		}
		if time.Now().After(deadline) {
			t.Fatalf("testenv: stripe-mock did not answer within 30s\n%s", tail(logs.String(), 4000))
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func stripeMockAnswers(baseURL string) bool {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, baseURL+"/v1/balance", nil)
	if err != nil {
		return false
	}
	req.Header.Set("Authorization", "Bearer "+StripeMockKey)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return false
	}
	resp.Body.Close()
	return resp.StatusCode == http.StatusOK
}

// stripeMockBinary is $STRIPE_MOCK ('make test' builds bin/stripe-mock),
// else built from tools/stripe-mock (toolBinary).
func stripeMockBinary() (string, error) {
	return toolBinary("STRIPE_MOCK", "stripe-mock", "stripe-mock", "github.com/stripe/stripe-mock")
}

// toolBinary is the test tool binary $env names, else the package pkg of
// the module tools/<module> built now into a cache outside the
// repository, keyed by that module's files, so later runs reuse it.
func toolBinary(env, module, name, pkg string) (string, error) {
	if p := os.Getenv(env); p != "" {
		return p, nil
	}
	dir := filepath.Join(repoRoot(), "tools", module)
	h := sha256.New()
	for _, f := range []string{"go.mod", "go.sum"} {
		b, err := os.ReadFile(filepath.Join(dir, f))
		if err != nil {
			return "", err
		}
		h.Write(b)
	}
	cache, err := os.UserCacheDir()
	if err != nil {
		return "", err
	}
	bin := filepath.Join(cache, "kubebyon", name+"-"+hex.EncodeToString(h.Sum(nil))[:16])
	if _, err := os.Stat(bin); err == nil {
		return bin, nil
	}
	if err := os.MkdirAll(filepath.Dir(bin), 0o755); err != nil {
		return "", err
	}
	// Built under a name of its own and renamed: test binaries that build
	// it at the same time never run a half-written file.
	tmp := fmt.Sprintf("%s.tmp-%d", bin, os.Getpid())
	cmd := exec.Command("go", "build", "-o", tmp, pkg)
	cmd.Dir = dir
	if out, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("build %s: %w: %s", name, err, out)
	}
	if err := os.Rename(tmp, bin); err != nil {
		_ = os.Remove(tmp)
		return "", err
	}
	return bin, nil
}
