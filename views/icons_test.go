package views

import (
	"os"
	"path/filepath"
	"regexp"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/kubebyon/kubebyon/static"
)

// TestIconsInSprite: every icon the views name (Icon("x"), a tab's or an
// empty state's icon, the navigation's) is a symbol of the sprite 'make
// assets' builds (tools/icons), so none draws as nothing.
func TestIconsInSprite(t *testing.T) {
	t.Parallel()
	sprite, err := static.FS.ReadFile("dist/icons.svg")
	require.NoError(t, err, "make assets builds the sprite")
	named := regexp.MustCompile(`(?:Icon\(|Icon: |EmptyState\(|navLink\("[^"]*", )"([a-z0-9-]+)"`)
	files, err := filepath.Glob("*.templ")
	require.NoError(t, err)
	more, err := filepath.Glob("*.go")
	require.NoError(t, err)
	seen := 0
	for _, f := range append(files, more...) {
		b, err := os.ReadFile(f)
		require.NoError(t, err)
		for _, m := range named.FindAllSubmatch(b, -1) {
			seen++
			require.Contains(t, string(sprite), `<symbol id="`+string(m[1])+`"`, "%s names icon %q", f, m[1])
		}
	}
	require.Greater(t, seen, 20)
}
