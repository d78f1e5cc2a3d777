package jointokens

import (
	"context"
	_ "embed"
	"fmt"
	"io"
	"strings"
	"text/template"

	"github.com/kubebyon/kubebyon/internal/locale"
)

//go:embed join.sh.tmpl
var joinScriptSource string

// joinScript is parsed per call: its msg function translates into the
// request's language.
func joinScript(ctx context.Context) *template.Template {
	return template.Must(template.New("join.sh").Funcs(template.FuncMap{
		"q":   shellQuote,
		"msg": func(id string) string { return shellQuote(locale.T(ctx, id)) },
	}).Parse(joinScriptSource))
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

// WriteScript renders the join script.
func WriteScript(ctx context.Context, w io.Writer, d ScriptData) error {
	if err := joinScript(ctx).Execute(w, d); err != nil {
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
