package locale_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/nicksnyder/go-i18n/v2/i18n"
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

// TestForDefault: the default language serves only when no preference
// names a language of the catalog.
func TestForDefault(t *testing.T) {
	t.Parallel()
	c, err := locale.New()
	require.NoError(t, err)
	tests := []struct {
		def   string
		prefs []string
		want  string
	}{
		{"zh-CN", nil, "zh-CN"},
		{"zh-CN", []string{"", ""}, "zh-CN"},
		{"zh-CN", []string{"", "de-DE,de;q=0.9"}, "zh-CN"},
		{"zh-CN", []string{"", "en-US,en;q=0.9"}, "en"},
		{"zh-CN", []string{"en", "zh-CN"}, "en"},
		{"en", []string{"", "zh-Hans-CN"}, "zh-CN"},
		{"en", nil, "en"},
		{"", nil, "en"},
		// A default not written as a catalog tag is matched.
		{"zh-Hans-CN", nil, "zh-CN"},
	}
	for _, tt := range tests {
		require.Equal(t, tt.want, c.ForDefault(tt.def, tt.prefs...).Tag(), "%s %v", tt.def, tt.prefs)
	}
}

// TestPlainMessagesAsGoI18nGivesThem checks that every message, given by
// the catalog's table of messages without template data, reads as go-i18n
// itself translates it, in each language; and that a message with
// template data is still filled in.
func TestPlainMessagesAsGoI18nGivesThem(t *testing.T) {
	t.Parallel()
	c, err := locale.New()
	require.NoError(t, err)
	bundle := i18n.NewBundle(locale.English)
	bundle.RegisterUnmarshalFunc("json", json.Unmarshal)
	files, err := filepath.Glob(filepath.Join("messages", "*.json"))
	require.NoError(t, err)
	ids := map[string]bool{}
	for _, f := range files {
		mf, err := bundle.LoadMessageFile(f)
		require.NoError(t, err)
		for _, m := range mf.Messages {
			ids[m.ID] = true
		}
	}
	require.Greater(t, len(ids), 100)
	for _, lang := range []string{"en", "zh-CN"} {
		want := i18n.NewLocalizer(bundle, lang)
		got := c.For(lang)
		for id := range ids {
			w, err := want.Localize(&i18n.LocalizeConfig{MessageID: id})
			require.NoError(t, err, "%s in %s", id, lang)
			require.Equal(t, w, got.T(id), "%s in %s", id, lang)
		}
	}
	require.Equal(t, "Nodes of prod", c.For("en").T("NodesPageTitle", map[string]any{"Cluster": "prod"}))
}

// TestChineseAddressesTheReaderPolitely: every zh-CN message says 您,
// never 你, so that the console speaks to the reader in one voice.
func TestChineseAddressesTheReaderPolitely(t *testing.T) {
	t.Parallel()
	files, err := filepath.Glob(filepath.Join("messages", "*.zh-CN.json"))
	require.NoError(t, err)
	require.NotEmpty(t, files)
	for _, file := range files {
		b, err := os.ReadFile(file)
		require.NoError(t, err)
		var m map[string]string
		require.NoError(t, json.Unmarshal(b, &m), file)
		for k, v := range m {
			if strings.Contains(v, "你") {
				t.Errorf("%s: %s says 你 (use 您): %s", file, k, v)
			}
		}
	}
}
