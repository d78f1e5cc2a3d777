package accounts_test

import (
	"slices"
	"strings"
	"testing"
	"unicode"
	"unicode/utf8"

	"github.com/stretchr/testify/require"

	"github.com/kubebyon/kubebyon/internal/accounts"
)

func TestProfileInputValidate(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, lang string
		errs       accounts.FieldErrors
	}{
		{"Ada", "", nil},
		{"  张三  ", "zh-CN", nil},
		{strings.Repeat("é", 100), "en", nil},
		{strings.Repeat("é", 101), "en", accounts.FieldErrors{"name": "ErrNameTooLong"}},
		{" \t ", "", accounts.FieldErrors{"name": "ErrNameRequired"}},
		{"Ada\nLovelace", "", accounts.FieldErrors{"name": "ErrNameInvalid"}},
		{"Ada\x00", "", accounts.FieldErrors{"name": "ErrNameInvalid"}},
		{"Ada \xc3", "", accounts.FieldErrors{"name": "ErrNameInvalid"}},
		{"Ada", "EN", accounts.FieldErrors{"language": "ErrLanguageInvalid"}},
		{"", "de", accounts.FieldErrors{"name": "ErrNameRequired", "language": "ErrLanguageInvalid"}},
	}
	for _, tt := range tests {
		in := accounts.ProfileInput{Name: tt.name, Language: tt.lang}
		err := in.Validate()
		if tt.errs == nil {
			require.NoError(t, err, "%q", tt.name)
			require.Equal(t, strings.TrimSpace(tt.name), in.Name)
			continue
		}
		require.Equal(t, tt.errs, err, "%q %q", tt.name, tt.lang)
	}
}

// FuzzProfileInputValidate checks that whatever a form sends, an accepted
// profile is one the database and the pages can hold: a trimmed name of 1
// to 100 characters of valid UTF-8 without control characters, and a
// supported language; and that a refusal names only the fields' errors.
func FuzzProfileInputValidate(f *testing.F) {
	f.Add("Ada Lovelace", "")
	f.Add("  张三 ", "zh-CN")
	f.Add("", "en")
	f.Add("a\x00b", "zh-cn")
	f.Add("\xff\xfe", "en-US")
	f.Add(strings.Repeat("x", 101), "")
	f.Add("\u00a0Ada\u2028", "en")
	f.Fuzz(func(t *testing.T, name, lang string) {
		in := accounts.ProfileInput{Name: name, Language: lang}
		err := in.Validate()
		if err != nil {
			fe, ok := err.(accounts.FieldErrors)
			require.True(t, ok, "%T", err)
			require.NotEmpty(t, fe)
			for field := range fe {
				require.Contains(t, []string{"name", "language"}, field)
			}
			return
		}
		require.True(t, utf8.ValidString(in.Name))
		require.Equal(t, strings.TrimSpace(in.Name), in.Name)
		n := utf8.RuneCountInString(in.Name)
		require.True(t, n >= 1 && n <= 100, "%d characters", n)
		require.Negative(t, strings.IndexFunc(in.Name, unicode.IsControl))
		require.True(t, slices.Contains(accounts.Languages, in.Language))
	})
}
