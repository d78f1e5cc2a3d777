package jointokens

import (
	"context"
	_ "embed"
	"fmt"
	"io"
	"strings"
	"sync"
	"text/template"

	"github.com/kubebyon/kubebyon/internal/locale"
)

//go:embed join.sh.tmpl
var joinScriptSource string

// parseScript parses the join script for l's language: its msg function
// translates with l.
func parseScript(l *locale.Localizer) *template.Template {
	return template.Must(template.New("join.sh").Funcs(template.FuncMap{
		"q":   shellQuote,
		"msg": func(id string) string { return shellQuote(l.T(id)) },
	}).Parse(joinScriptSource))
}

// scripts is the join script parsed once per language, on its first use
// (parsing it is most of a join request's work). A language's localizers
// all translate alike, so the first one's serves the language.
type scripts struct {
	byLang sync.Map // language tag → *template.Template
}

// get returns the join script for the request's language.
func (s *scripts) get(ctx context.Context) *template.Template {
	l := locale.From(ctx)
	if !l.Translates() { // outside a request: messages show as their ids
		return parseScript(l)
	}
	if t, ok := s.byLang.Load(l.Tag()); ok {
		return t.(*template.Template)
	}
	t, _ := s.byLang.LoadOrStore(l.Tag(), parseScript(l))
	return t.(*template.Template)
}

// ScriptData is what the join script needs: where to report, the control
// plane's endpoint (host:port) and the CA (PEM) its certificate must be
// signed by, and the token.
type ScriptData struct {
	EventsURL string
	Endpoint  string
	CACert    string
	Token     string
}

// WriteScript renders the join script in the request's language.
func (s *Service) WriteScript(ctx context.Context, w io.Writer, d ScriptData) error {
	if err := s.scripts.get(ctx).Execute(w, d); err != nil {
		return fmt.Errorf("render join script: %w", err)
	}
	return nil
}

// WriteRefusal renders the script a refused token gets: it prints why and
// exits 1.
func WriteRefusal(ctx context.Context, w io.Writer, reason error) error {
	_, err := fmt.Fprintf(w, "#!/bin/sh\nprintf 'kubebyon: %%s\\n' %s >&2\nexit 1\n", shellQuote(locale.T(ctx, reason.Error())))
	return err
}

// shellQuote makes s one single-quoted sh word.
func shellQuote(s string) string {
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}
