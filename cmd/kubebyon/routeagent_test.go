package main_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/kubebyon/kubebyon/internal/testenv"
)

// TestRouteAgentCommandSettings checks that 'kubebyon route-agent' says
// what is missing, in one line, before it touches anything.
func TestRouteAgentCommandSettings(t *testing.T) {
	t.Parallel()
	if runtime.GOOS != "linux" {
		r := kubebyon(t, nil, "", "route-agent")
		require.Equal(t, 2, r.code)
		require.Contains(t, r.stderr, "runs only on Linux")
		return
	}
	const (
		platform = "KUBEBYON_EDGE_PLATFORM_URL=https://kubebyon.example.com"
		token    = "KUBEBYON_EDGE_TOKEN=kbe_abcdefgh_abcdefghijklmnopqrstuvwxyz234567"
	)
	tests := []struct {
		name string
		env  []string
		args []string
		want string
	}{
		{"no platform", []string{token}, nil, `KUBEBYON_EDGE_PLATFORM_URL (--platform-url) is "": use the platform's URL`},
		{"platform without a scheme", []string{token}, []string{"--platform-url", "kubebyon.example.com"}, `KUBEBYON_EDGE_PLATFORM_URL (--platform-url) is "kubebyon.example.com"`},
		{"no token", []string{platform}, nil, "no edge token: set KUBEBYON_EDGE_TOKEN, or KUBEBYON_EDGE_TOKEN_FILE naming a file that holds it (an admin creates one under Admin → Edge)"},
		{"missing token file", []string{platform, "KUBEBYON_EDGE_TOKEN_FILE=/no/such/token"}, nil, "KUBEBYON_EDGE_TOKEN_FILE (--token-file): /no/such/token: no such file or directory"},
		{"empty node name", []string{platform, token}, []string{"--node-name", " "}, "NODE_NAME (--node-name) is empty"},
		{"bad table", []string{platform, token, "KUBEBYON_ROUTE_AGENT_TABLE=local"}, nil, `KUBEBYON_ROUTE_AGENT_TABLE (--table) is "local": use main or a table number from 1 to 4294967295`},
		{"bad resync", []string{platform, token}, []string{"--resync", "10ms"}, `KUBEBYON_ROUTE_AGENT_RESYNC (--resync) is "10ms": use a duration of a second or more`},
		{"bad log format", []string{platform, token, "KUBEBYON_LOG_FORMAT=xml"}, nil, `KUBEBYON_LOG_FORMAT (--log-format) is "xml"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			r := kubebyon(t, tt.env, "", append([]string{"route-agent"}, tt.args...)...)
			require.Equal(t, 1, r.code, "stdout %q stderr %q", r.stdout, r.stderr)
			lines := strings.Split(strings.TrimSpace(r.stderr), "\n")
			require.Len(t, lines, 1, "want one line, got: %s", r.stderr)
			require.Contains(t, lines[0], "kubebyon route-agent: "+tt.want)
		})
	}
}

// TestRouteAgentRunsUntilSIGTERM starts the agent with a token file and a
// platform that is down: it says so, leaves the host's routes alone (it
// has no routes to converge to before the platform answers) and exits
// cleanly on SIGTERM.
func TestRouteAgentRunsUntilSIGTERM(t *testing.T) {
	t.Parallel()
	if runtime.GOOS != "linux" {
		t.Skip("the route agent runs only on Linux")
	}
	tokenFile := filepath.Join(t.TempDir(), "token")
	require.NoError(t, os.WriteFile(tokenFile, []byte("kbe_abcdefgh_abcdefghijklmnopqrstuvwxyz234567\n"), 0o600))
	stderr := &testenv.Output{}
	cmd := exec.Command(binary, "route-agent", "--platform-url", "http://"+freeAddr(t), "--table", "100")
	cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "KUBEBYON_EDGE_TOKEN_FILE=" + tokenFile, "NODE_NAME=host-1"}
	cmd.Stderr = stderr
	require.NoError(t, cmd.Start())
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		<-done
	})

	require.Eventually(t, func() bool { return strings.Contains(stderr.String(), "cannot reach the platform") }, 30*time.Second, 20*time.Millisecond,
		"the agent starts and tries the platform: %s", stderr)
	require.Contains(t, stderr.String(), `msg="kubebyon route-agent" version=`+testVersion)
	require.Contains(t, stderr.String(), "node=host-1 table=100 protocol=108 resync=5m0s")

	require.NoError(t, cmd.Process.Signal(syscall.SIGTERM))
	select {
	case err := <-done:
		require.NoError(t, err, "route-agent did not exit cleanly: %s", stderr)
		done <- nil // for the cleanup
	case <-time.After(30 * time.Second):
		t.Fatalf("route-agent did not stop after SIGTERM: %s", stderr)
	}
}
