// Package input is the error a form's input gets: what is wrong with each
// field, as catalog message IDs, for the handlers to show next to it.
package input

import (
	"fmt"
	"net/mail"
	"net/url"
	"sort"
	"strings"
	"unicode/utf8"
)

// Errors maps field names to message IDs. The domain packages name it
// FieldErrors (an alias, so one errors.As finds any of them).
type Errors map[string]string

func (f Errors) Error() string { return fmt.Sprintf("invalid fields: %v", map[string]string(f)) }

// ErrUnstorable is the message ID of a field whose text PostgreSQL cannot
// store.
const ErrUnstorable = "ErrFieldUnstorable"

// Storable reports whether s can be PostgreSQL text: valid UTF-8 without
// NUL, which PostgreSQL refuses in text and would turn into a server error.
func Storable(s string) bool {
	return utf8.ValidString(s) && !strings.ContainsRune(s, 0)
}

// CheckValues finds the fields of a form or query whose name or values
// cannot be stored; a name that cannot be shown as it is gets its bad
// bytes replaced.
func CheckValues(v url.Values) Errors {
	var errs Errors
	for name, values := range v {
		ok := Storable(name)
		for _, s := range values {
			ok = ok && Storable(s)
		}
		if ok {
			continue
		}
		if errs == nil {
			errs = Errors{}
		}
		errs[Printable(name)] = ErrUnstorable
	}
	return errs
}

// Names are the field names, sorted.
func (f Errors) Names() []string {
	names := make([]string, 0, len(f))
	for n := range f {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// Printable is s with invalid UTF-8 and NUL replaced by U+FFFD, so that it
// can be stored and shown.
func Printable(s string) string {
	return strings.ReplaceAll(strings.ToValidUTF8(s, "\uFFFD"), "\x00", "\uFFFD")
}

// Truncate cuts s to at most n bytes, at the start of a character, so
// that a stored message never ends in half a character.
func Truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n]
}

// MaxHeaderBytes is the most of a request header's value that is stored
// (the User-Agent of sessions and audit events): more than any browser
// sends, and not the megabyte a request may carry, in every event.
const MaxHeaderBytes = 512

// HeaderValue is a request header's value as it is stored: Printable, since
// the header is the client's to fill, and cut to MaxHeaderBytes.
func HeaderValue(s string) string {
	return Truncate(Printable(s), MaxHeaderBytes)
}

// SecretChange is what a settings form asks of a stored secret, which it
// never shows: a new Value, to Clear it, or neither to keep it.
type SecretChange struct {
	Value string
	Clear bool
}

// Apply is the secret once the change is made to stored.
func (sc SecretChange) Apply(stored string) string {
	switch {
	case sc.Value != "":
		return sc.Value
	case sc.Clear:
		return ""
	}
	return stored
}

// Contradicts reports whether the change both replaces and clears the
// secret.
func (sc SecretChange) Contradicts() bool { return sc.Value != "" && sc.Clear }

// likeEscaper escapes what LIKE reads as wildcards, and its escape.
var likeEscaper = strings.NewReplacer(`\`, `\\`, "%", `\%`, "_", `\_`)

// Contains is the LIKE pattern of the texts that contain s as it is: its
// %, _ and \ match themselves.
func Contains(s string) string {
	return "%" + likeEscaper.Replace(s) + "%"
}

// Email trims an address and checks its form: one address alone, at most
// 254 characters, with a dot in its domain.
func Email(raw string) (string, bool) {
	e := strings.TrimSpace(raw)
	a, err := mail.ParseAddress(e)
	if err != nil || a.Address != e || len(e) > 254 || !strings.Contains(e[strings.LastIndexByte(e, '@'):], ".") {
		return e, false
	}
	return e, true
}
