package main_test

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// containerUID is the user the image runs as (Dockerfile).
const containerUID = 10001

// TestDataDirOwnedByAnotherUser is the single container with a bind-mounted
// /data that belongs to someone else: serve stops at once, with one line
// that names the chown to run, instead of PostgreSQL failing on each start.
// Root may write anywhere, so under root (CI) the command runs as the
// image's uid, and the directories belong to another uid; as a normal user
// the test can only take its own write permission away (chmod), and a
// directory of another uid cannot be made.
func TestDataDirOwnedByAnotherUser(t *testing.T) {
	t.Parallel()
	root := os.Geteuid() == 0
	tests := []struct {
		name string
		// prepare makes data (the data dir) and returns what the error
		// names.
		prepare  func(t *testing.T, data string) string
		onlyRoot bool
	}{
		{
			name: "data dir not writable",
			prepare: func(t *testing.T, data string) string {
				require.NoError(t, os.Mkdir(data, 0o755))
				if !root {
					require.NoError(t, os.Chmod(data, 0o555))
					t.Cleanup(func() { _ = os.Chmod(data, 0o755) })
				}
				// As root the directory stays root's: another user's.
				if root {
					return "chown -R 10001:10001' on the directory"
				}
				return fmt.Sprintf("chown -R %d:%d' on the directory", os.Geteuid(), os.Getegid())
			},
		},
		{
			name: "PostgreSQL's data of another uid",
			prepare: func(t *testing.T, data string) string {
				pgdata := filepath.Join(data, "postgres", "pgdata")
				require.NoError(t, os.MkdirAll(pgdata, 0o700))
				require.NoError(t, os.WriteFile(filepath.Join(pgdata, "PG_VERSION"), []byte("15\n"), 0o600))
				for _, p := range []string{data, filepath.Join(data, "postgres")} {
					require.NoError(t, os.Chown(p, containerUID, containerUID))
				}
				require.NoError(t, os.Chown(pgdata, containerUID+1, containerUID+1))
				require.NoError(t, os.Chown(filepath.Join(pgdata, "PG_VERSION"), containerUID+1, containerUID+1))
				return "owned by uid 10002, but PostgreSQL runs as uid 10001 here"
			},
			onlyRoot: true,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			if tt.onlyRoot && !root {
				t.Skip("files of another uid can only be made as root")
			}
			// Directories the image's user can reach: t.TempDir is root's
			// and closed to others.
			base, err := os.MkdirTemp("", "kubebyon-datadir-")
			require.NoError(t, err)
			t.Cleanup(func() { _ = os.RemoveAll(base) })
			require.NoError(t, os.Chmod(base, 0o755))
			bin := filepath.Join(base, "kubebyon")
			copyFile(t, binary, bin, 0o755)
			data := filepath.Join(base, "data")
			want := tt.prepare(t, data)

			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			cmd := exec.CommandContext(ctx, bin, "serve", "--listen", freeAddr(t), "--metrics-listen", freeAddr(t))
			cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + base, "KUBEBYON_DATA_DIR=" + data}
			if root {
				cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: containerUID, Gid: containerUID, NoSetGroups: true}}
			}
			start := time.Now()
			out, err := cmd.CombinedOutput()
			var ee *exec.ExitError
			require.ErrorAs(t, err, &ee, "serve did not fail: %s", out)
			require.Equal(t, 1, ee.ExitCode(), string(out))
			require.Less(t, time.Since(start), 10*time.Second, "serve took its time to fail")
			lines := strings.Split(strings.TrimSpace(string(out)), "\n")
			last := lines[len(lines)-1]
			require.Contains(t, last, want, string(out))
			require.Contains(t, last, data)
			require.NotContains(t, string(out), "initdb", "PostgreSQL should not have been tried")
		})
	}
}

func copyFile(t *testing.T, from, to string, mode os.FileMode) {
	t.Helper()
	b, err := os.ReadFile(from)
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(to, b, mode))
}
