package jointokens

import (
	"bytes"
	"context"
	"testing"
	"text/template"

	"github.com/stretchr/testify/require"

	"github.com/kubebyon/kubebyon/internal/locale"
)

// perCallScript is how the join script was rendered before it was parsed
// once per language: parsed on every call, translating with the request's
// localizer.
func perCallScript(ctx context.Context) *template.Template {
	return template.Must(template.New("join.sh").Funcs(template.FuncMap{
		"q":   shellQuote,
		"msg": func(id string) string { return shellQuote(locale.T(ctx, id)) },
	}).Parse(joinScriptSource))
}

// TestWriteScript renders the join script in each language, in turns so
// that each language's parsed script is used again after the other's, and
// compares it with the per-call rendering byte for byte.
func TestWriteScript(t *testing.T) {
	t.Parallel()
	catalog, err := locale.New()
	require.NoError(t, err)
	data := ScriptData{
		EventsURL: "https://kubebyon.test/join/abcdef.0123456789abcdef/events",
		Endpoint:  "c1.kubebyon.test:443",
		CACert:    "-----BEGIN CERTIFICATE-----\nMIIB'it's'\n-----END CERTIFICATE-----\n",
		Token:     "abcdef.0123456789abcdef",
	}
	tests := []struct {
		name     string
		ctx      context.Context
		contains string
	}{
		{"en", locale.With(context.Background(), catalog.For("en")), "This script must run as root"},
		{"zh-CN", locale.With(context.Background(), catalog.For("zh-CN")), "此脚本"},
		{"zh-CN from Accept-Language", locale.With(context.Background(), catalog.For("zh-Hans-CN,zh;q=0.9")), "此脚本"},
		{"en by fallback", locale.With(context.Background(), catalog.For("de-DE")), "This script must run as root"},
		{"outside a request", context.Background(), "JoinScriptNotRoot"},
	}
	svc := &Service{}
	for round := range 2 {
		for _, tt := range tests {
			var want, got bytes.Buffer
			require.NoError(t, perCallScript(tt.ctx).Execute(&want, data))
			require.NoError(t, svc.WriteScript(tt.ctx, &got, data))
			require.Equal(t, want.String(), got.String(), "%s, round %d", tt.name, round+1)
			require.Contains(t, got.String(), tt.contains, tt.name)
		}
	}
}
