package input_test

import (
	"net/url"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/stretchr/testify/require"

	"github.com/kubebyon/kubebyon/internal/input"
)

func TestCheckValues(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		in   url.Values
		want input.Errors
	}{
		{"clean", url.Values{"name": {"ab cd", "名字"}, "empty": {""}}, nil},
		{"nul", url.Values{"name": {"ab\x00cd"}, "ok": {"x"}}, input.Errors{"name": input.ErrUnstorable}},
		{"invalid utf-8", url.Values{"email": {"a\xffb@x.test"}}, input.Errors{"email": input.ErrUnstorable}},
		{"second value", url.Values{"uses": {"1", "\x00"}}, input.Errors{"uses": input.ErrUnstorable}},
		{"bad name", url.Values{"n\xffm\x00": {"v"}}, input.Errors{"n\uFFFDm\uFFFD": input.ErrUnstorable}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			require.Equal(t, tc.want, input.CheckValues(tc.in))
		})
	}
}

// FuzzStorable checks the rule against its definition and that what
// Printable makes of any text is storable and unchanged when it already was.
func FuzzStorable(f *testing.F) {
	for _, s := range []string{"", "ab\x00cd", "a\xffb@x.test", "名字", "\xed\xa0\x80", "\uFFFD", "a%00b"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		want := utf8.ValidString(s) && !strings.Contains(s, "\x00")
		require.Equal(t, want, input.Storable(s))
		p := input.Printable(s)
		require.True(t, input.Storable(p), "%q", p)
		if want {
			require.Equal(t, s, p)
		}
		h := input.HeaderValue(s)
		require.True(t, input.Storable(h), "%q", h)
		require.LessOrEqual(t, len(h), input.MaxHeaderBytes)
		require.True(t, strings.HasPrefix(p, h), "%q is a prefix of %q", h, p)
		errs := input.CheckValues(url.Values{s: {"ok"}, "v": {s}})
		if want {
			require.Empty(t, errs)
		} else {
			require.Equal(t, input.Errors{p: input.ErrUnstorable, "v": input.ErrUnstorable}, errs)
		}
	})
}

func TestHeaderValue(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name, in, want string
	}{
		{"clean", "Mozilla/5.0 (X11; Linux x86_64)", "Mozilla/5.0 (X11; Linux x86_64)"},
		{"empty", "", ""},
		{"nul", "a\x00b", "a\uFFFDb"},
		{"invalid utf-8", "a\xff\xfeb", "a\uFFFDb"},
		{"at the cap", strings.Repeat("x", 512), strings.Repeat("x", 512)},
		{"over the cap", strings.Repeat("x", 1<<20), strings.Repeat("x", 512)},
		{"cut before a character", strings.Repeat("x", 511) + "名", strings.Repeat("x", 511)},
		{"cut after replacing", strings.Repeat("\xff", 600), "\uFFFD"},
		{"replacements cut whole", strings.Repeat("\x00", 200), strings.Repeat("\uFFFD", 170)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			require.Equal(t, tc.want, input.HeaderValue(tc.in))
		})
	}
}

func TestSecretChange(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name        string
		change      input.SecretChange
		stored      string
		want        string
		contradicts bool
	}{
		{name: "kept", stored: "old", want: "old"},
		{name: "replaced", change: input.SecretChange{Value: "new"}, stored: "old", want: "new"},
		{name: "cleared", change: input.SecretChange{Clear: true}, stored: "old", want: ""},
		{name: "replaced and cleared", change: input.SecretChange{Value: "new", Clear: true}, stored: "old", want: "new", contradicts: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			require.Equal(t, tc.want, tc.change.Apply(tc.stored))
			require.Equal(t, tc.contradicts, tc.change.Contradicts())
		})
	}
}

func TestEmail(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		in, want string
		ok       bool
	}{
		{"ada@example.com", "ada@example.com", true},
		{"  ada@example.com\n", "ada@example.com", true},
		{"Ada <ada@example.com>", "Ada <ada@example.com>", false},
		{"ada@localhost", "ada@localhost", false},
		{"ada@example.com, bob@example.com", "ada@example.com, bob@example.com", false},
		{"not an address", "not an address", false},
		{strings.Repeat("a", 243) + "@example.com", strings.Repeat("a", 243) + "@example.com", false},
	} {
		got, ok := input.Email(tc.in)
		require.Equal(t, tc.want, got, tc.in)
		require.Equal(t, tc.ok, ok, tc.in)
	}
}
