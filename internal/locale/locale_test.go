package locale_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"sort"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/kubebyon/kubebyon/internal/locale"
)

// TestCatalogsHaveTheSameMessages keeps every string in both languages.
func TestCatalogsHaveTheSameMessages(t *testing.T) {
	t.Parallel()
	// Messages are split by area: <area>.<language>.json.
	keys := func(lang string) []string {
		files, err := filepath.Glob(filepath.Join("messages", "*."+lang+".json"))
		require.NoError(t, err)
		require.NotEmpty(t, files)
		var out []string
		seen := map[string]string{}
		for _, file := range files {
			b, err := os.ReadFile(file)
			require.NoError(t, err)
			var m map[string]string
			require.NoError(t, json.Unmarshal(b, &m), file)
			for k, v := range m {
				require.NotEmpty(t, v, "%s: %s is empty", file, k)
				if other, dup := seen[k]; dup {
					t.Errorf("%s is in both %s and %s", k, other, file)
				}
				seen[k] = file
				out = append(out, k)
			}
		}
		sort.Strings(out)
		return out
	}
	require.Equal(t, keys("en"), keys("zh-CN"))
}

func TestFor(t *testing.T) {
	t.Parallel()
	c, err := locale.New()
	require.NoError(t, err)
	tests := []struct {
		prefs []string
		want  string
		home  string
	}{
		{nil, "en", "Home"},
		{[]string{""}, "en", "Home"},
		{[]string{"zh-CN"}, "zh-CN", "首页"},
		{[]string{"zh-Hans-CN,zh;q=0.9"}, "zh-CN", "首页"},
		{[]string{"de-DE,de;q=0.9"}, "en", "Home"},
		{[]string{"garbage;;q=x"}, "en", "Home"},
		{[]string{"en", "zh-CN"}, "en", "Home"},
	}
	for _, tt := range tests {
		l := c.For(tt.prefs...)
		require.Equal(t, tt.want, l.Tag(), "%v", tt.prefs)
		require.Equal(t, tt.home, l.T("NavHome"), "%v", tt.prefs)
	}

	// Views read the localizer from the request context.
	ctx := locale.With(context.Background(), c.For("zh-CN"))
	require.Equal(t, "首页", locale.T(ctx, "NavHome"))
	require.Equal(t, "zh-CN", locale.Lang(ctx))
	require.Equal(t, "NoSuchMessage", locale.T(ctx, "NoSuchMessage"))
}
