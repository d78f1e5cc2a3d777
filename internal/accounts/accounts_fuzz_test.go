package accounts_test

import (
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/kubebyon/kubebyon/internal/accounts"
)

// FuzzNormalizeCode: whatever is pasted, a code that passes is six digits.
func FuzzNormalizeCode(f *testing.F) {
	for _, s := range []string{"123456", "123 456", "123-456", " 1234567", "12345", "١٢٣٤٥٦", "12345６", "\x00123456", ""} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, raw string) {
		code, ok := accounts.NormalizeCode(raw)
		if !ok {
			return
		}
		if len(code) != 6 {
			t.Fatalf("accepted %q as %q", raw, code)
		}
		for _, r := range code {
			if r < '0' || r > '9' {
				t.Fatalf("accepted %q as %q", raw, code)
			}
		}
	})
}

// FuzzSignUpInput: validation never panics, and what it accepts is clean.
func FuzzSignUpInput(f *testing.F) {
	f.Add("ada@example.com", "Ada", "correct horse battery")
	f.Add("  ada@example.com ", "  Ada  ", "short")
	f.Add("Ada <ada@example.com>", "A", "xxxxxxxxxxxx")
	f.Add("ada@localhost", strings.Repeat("名", 101), "xxxxxxxxxxxx")
	f.Add("a@b.c\r\nBcc: x@y.z", "\x00", strings.Repeat("p", 300))
	f.Add("ada@example.com", "Ada\xff", "correct horse battery")
	f.Fuzz(func(t *testing.T, email, name, password string) {
		in := accounts.SignUpInput{Email: email, Name: name, Password: password}
		err := in.Validate()
		if err != nil {
			if _, ok := err.(accounts.FieldErrors); !ok {
				t.Fatalf("unexpected error type %T", err)
			}
			return
		}
		if strings.ContainsAny(in.Email, " \r\n<>") || !strings.Contains(in.Email, "@") {
			t.Fatalf("accepted email %q", in.Email)
		}
		if in.Name == "" || utf8.RuneCountInString(in.Name) > 100 || strings.TrimSpace(in.Name) != in.Name ||
			!utf8.ValidString(in.Name) || strings.ContainsRune(in.Name, 0) {
			t.Fatalf("accepted name %q", in.Name)
		}
		if utf8.RuneCountInString(password) < 12 || len(password) > 256 {
			t.Fatalf("accepted password of %d bytes", len(password))
		}
	})
}
