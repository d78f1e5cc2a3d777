package locale

import (
	"testing"

	"github.com/nicksnyder/go-i18n/v2/i18n"
	"github.com/stretchr/testify/require"
)

// TestSimpleMessagesAsTemplates: every message filled in without
// text/template reads as go-i18n's template makes it, in every language,
// with text and with numbers; a field missing from the data goes through
// go-i18n.
func TestSimpleMessagesAsTemplates(t *testing.T) {
	t.Parallel()
	c, err := New()
	require.NoError(t, err)
	n := 0
	for tag, msgs := range c.simple {
		l := c.localizers[tag]
		for id, parts := range msgs {
			for _, value := range []any{"x<&>y", 42, int64(-3)} {
				data := map[string]any{}
				for _, p := range parts {
					if p.field != "" {
						data[p.field] = value
					}
				}
				want, err := l.l.Localize(&i18n.LocalizeConfig{MessageID: id, TemplateData: data})
				require.NoError(t, err)
				require.Equal(t, want, l.T(id, data), "%s in %s", id, tag)
				n++
			}
		}
	}
	require.Greater(t, n, 100, "most templated messages are simple")
	_, ok := fill([]part{{text: "a "}, {field: "Name"}}, map[string]any{})
	require.False(t, ok)
	for _, msg := range []string{"{{if .A}}x{{end}}", "{{.A.B}}", "{{ .A | printf }}", "{{$x}}", "{{.A"} {
		_, ok := parseSimple(msg)
		require.False(t, ok, msg)
	}
	parts, ok := parseSimple("Hello {{ .Name }}, {{.N}}!")
	require.True(t, ok)
	require.Equal(t, []part{{text: "Hello "}, {field: "Name"}, {text: ", "}, {field: "N"}, {text: "!"}}, parts)
}
