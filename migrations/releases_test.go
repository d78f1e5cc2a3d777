package migrations_test

import (
	"bufio"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestReleasedMigrationsUnchanged: a migration that shipped in a release
// has run on databases we cannot reach again, so its file may never change.
// Each releases/<tag>.sha256 (sha256sum's format) lists the files of that
// release; a change fails here, and the fix is a new migration instead.
func TestReleasedMigrationsUnchanged(t *testing.T) {
	t.Parallel()
	lists, err := filepath.Glob("releases/*.sha256")
	require.NoError(t, err)
	require.NotEmpty(t, lists, "no release is recorded under migrations/releases")
	for _, list := range lists {
		t.Run(strings.TrimSuffix(filepath.Base(list), ".sha256"), func(t *testing.T) {
			t.Parallel()
			f, err := os.Open(list)
			require.NoError(t, err)
			defer f.Close()
			n := 0
			sc := bufio.NewScanner(f)
			for sc.Scan() {
				want, name, ok := strings.Cut(sc.Text(), "  ")
				require.True(t, ok, "%s: line %q is not '<sha256>  <file>'", list, sc.Text())
				n++
				// Released migrations are numbered from 001 with no gap
				// (tern refuses one).
				require.True(t, strings.HasPrefix(name, fmt.Sprintf("%03d_", n)), "%s: line %d names %s", list, n, name)
				b, err := os.ReadFile(name)
				require.NoError(t, err, "%s was released in %s and must stay", name, list)
				sum := sha256.Sum256(b)
				require.Equal(t, want, hex.EncodeToString(sum[:]),
					"%s changed after it was released (%s): released migrations are immutable; put the change in a new migration", name, list)
			}
			require.NoError(t, sc.Err())
			require.Positive(t, n, "%s lists no migration", list)
		})
	}
}
