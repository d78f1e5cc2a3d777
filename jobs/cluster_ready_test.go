package jobs

import (
	"os"
	"path"
	"reflect"
	"regexp"
	"runtime"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestOnReadyDocumented: the architecture page names the steps of
// onReady, in their order, so that it says what happens when a cluster
// becomes ready.
func TestOnReadyDocumented(t *testing.T) {
	t.Parallel()
	raw, err := os.ReadFile("../docs/developers/architecture.md")
	require.NoError(t, err)
	doc := string(raw)
	start := strings.Index(doc, "- What happens when a cluster becomes ready")
	require.NotEqual(t, -1, start, "the architecture page describes onReady")
	para, _, _ := strings.Cut(doc[start:], "\n- ")
	var documented []string
	for _, m := range regexp.MustCompile("`([a-z]+\\.[A-Z][A-Za-z]+)`").FindAllStringSubmatch(para, -1) {
		documented = append(documented, m[1])
	}
	var steps []string
	for _, step := range onReady {
		steps = append(steps, path.Base(runtime.FuncForPC(reflect.ValueOf(step).Pointer()).Name()))
	}
	require.Equal(t, steps, documented)
}
