package testenv

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestSweepStaleRemovesOnlyTheDead checks that sweepStale removes the
// directories whose process is gone, and keeps those of a process that
// runs and those just made.
func TestSweepStaleRemovesOnlyTheDead(t *testing.T) {
	tmp := t.TempDir()
	t.Setenv("TMPDIR", tmp)

	live, err := tempDir("kubebyon-kube-") // this process's, locked
	require.NoError(t, err)
	mk := func(name string, owner bool, age time.Duration) string {
		dir := filepath.Join(tmp, name)
		require.NoError(t, os.Mkdir(dir, 0o700))
		if owner { // an owner file nobody holds: its process ended
			require.NoError(t, os.WriteFile(filepath.Join(dir, ownerFile), nil, 0o600))
		}
		at := time.Now().Add(-age)
		require.NoError(t, os.Chtimes(dir, at, at))
		return dir
	}
	dead := mk("kubebyon-testpg-dead", true, 0)
	oldUnowned := mk("kubebyon-mailpit-old", false, 2*unownedAge)
	newUnowned := mk("kubebyon-testpg-new", false, time.Minute) // being made
	other := mk("someone-else-dead", true, 2*unownedAge)

	sweepStale()
	for dir, want := range map[string]bool{live: true, dead: false, oldUnowned: false, newUnowned: true, other: true} {
		_, err := os.Stat(dir)
		require.Equal(t, want, err == nil, "%s kept", filepath.Base(dir))
	}
}
