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

// TestScript renders the join script in each language, in turns so
// that each language's parsed script is used again after the other's, and
// compares it with the per-call rendering byte for byte.
func TestScript(t *testing.T) {
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
			var want bytes.Buffer
			require.NoError(t, perCallScript(tt.ctx).Execute(&want, data))
			got, err := svc.Script(tt.ctx, data)
			require.NoError(t, err)
			require.Equal(t, want.String(), string(got), "%s, round %d", tt.name, round+1)
			require.Contains(t, string(got), tt.contains, tt.name)
		}
	}
}

// TestScriptPieces: the join script of each language is put together from
// its pieces (the test above compares what they write with the template's
// output), and a script the pieces cannot express is left to the template.
func TestScriptPieces(t *testing.T) {
	t.Parallel()
	catalog, err := locale.New()
	require.NoError(t, err)
	for _, lang := range []string{"en", "zh-CN"} {
		sc := newScript(catalog.For(lang))
		require.NotNil(t, sc.pieces, lang)
		require.Len(t, sc.pieces.fields, 4, "%s: the four values", lang)
	}

	data := ScriptData{EventsURL: "https://e.test/x", Endpoint: "c.test:443", CACert: "CA", Token: "a.b"}
	tests := []struct {
		name, src string
		cut       bool
	}{
		{"text and values", `echo {{q .Token}} {{"fixed"}} {{q .Endpoint}}`, true},
		{"a condition", `{{if .Token}}echo {{q .Token}}{{end}}`, false},
		{"a value without q", `echo {{.Token}}`, false},
		{"another function", `echo {{printf "%s" .Token}}`, false},
		{"a variable", `{{$t := .Token}}echo {{q $t}}`, false},
	}
	for _, tt := range tests {
		tmpl := template.Must(template.New("t").Funcs(template.FuncMap{"q": shellQuote}).Parse(tt.src))
		p := cut(tmpl)
		require.Equal(t, tt.cut, p != nil, tt.name)
		if p == nil {
			continue
		}
		var want bytes.Buffer
		require.NoError(t, tmpl.Execute(&want, data))
		require.Equal(t, want.String(), string(p.render(data)), tt.name)
	}
}
