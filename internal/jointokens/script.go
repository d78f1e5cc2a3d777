package jointokens

import (
	"bytes"
	"context"
	_ "embed"
	"fmt"
	"io"
	"strconv"
	"strings"
	"sync"
	"text/template"
	"text/template/parse"

	"github.com/kubebyon/kubebyon/internal/locale"
)

//go:embed join.sh.tmpl
var joinScriptSource string

// parseScript parses the join script for l's language: its msg function
// translates with l, and each {{msg "ID"}} is translated once here, into
// the text around it.
func parseScript(l *locale.Localizer) *template.Template {
	msg := func(id string) string { return shellQuote(l.T(id)) }
	t := template.Must(template.New("join.sh").Funcs(template.FuncMap{
		"q":   shellQuote,
		"msg": msg,
	}).Parse(joinScriptSource))
	t.Tree.Root = translateList(t.Tree.Root, msg)
	return t
}

// translateList replaces each {{msg "ID"}} action in list (and in the
// lists of its branches) with msg("ID"), joined to the text before and
// after it: executing the template then calls msg no more. Text nodes are
// edited as html/template edits them; any other use of msg is left alone.
func translateList(list *parse.ListNode, msg func(string) string) *parse.ListNode {
	if list == nil {
		return nil
	}
	nodes := list.Nodes[:0:0]
	// text appends s to the text node ending nodes, if one does.
	text := func(s []byte) bool {
		if len(nodes) == 0 {
			return false
		}
		prev, ok := nodes[len(nodes)-1].(*parse.TextNode)
		if ok {
			prev.Text = append(prev.Text[:len(prev.Text):len(prev.Text)], s...)
		}
		return ok
	}
	for _, n := range list.Nodes {
		switch n := n.(type) {
		case *parse.ActionNode:
			if id, ok := msgID(n); ok {
				tr := msg(id)
				if text([]byte(tr)) {
					continue
				}
				// No text before it: the action prints the translation.
				s := n.Pipe.Cmds[0].Args[1].(*parse.StringNode)
				s.Text, s.Quoted = tr, strconv.Quote(tr)
				n.Pipe.Cmds[0].Args = n.Pipe.Cmds[0].Args[1:]
			}
		case *parse.TextNode:
			if text(n.Text) {
				continue
			}
		case *parse.IfNode:
			n.List, n.ElseList = translateList(n.List, msg), translateList(n.ElseList, msg)
		case *parse.RangeNode:
			n.List, n.ElseList = translateList(n.List, msg), translateList(n.ElseList, msg)
		case *parse.WithNode:
			n.List, n.ElseList = translateList(n.List, msg), translateList(n.ElseList, msg)
		}
		nodes = append(nodes, n)
	}
	list.Nodes = nodes
	return list
}

// msgID is the ID of an action {{msg "ID"}}.
func msgID(n *parse.ActionNode) (string, bool) {
	if len(n.Pipe.Decl) > 0 || len(n.Pipe.Cmds) != 1 || len(n.Pipe.Cmds[0].Args) != 2 {
		return "", false
	}
	fn, ok := n.Pipe.Cmds[0].Args[0].(*parse.IdentifierNode)
	if !ok || fn.Ident != "msg" {
		return "", false
	}
	id, ok := n.Pipe.Cmds[0].Args[1].(*parse.StringNode)
	if !ok {
		return "", false
	}
	return id.Text, true
}

// scripts is the join script parsed once per language, on its first use
// (parsing it is most of a join request's work), and cut into its pieces.
// A language's localizers all translate alike, so the first one's serves
// the language.
type scripts struct {
	byLang sync.Map // language tag → *script
}

// script is the join script of one language: its template and, when the
// template is only text and the {{q .Field}} values (as join.sh.tmpl is
// once its messages are translated), the same as pieces put together
// without text/template, whose reflection was the larger part of a join
// request's rendering.
type script struct {
	tmpl   *template.Template
	pieces *pieces // nil: executed as a template
}

// pieces is a script as text between values: text[i] comes before
// fields[i], and the last text after the last value. Each value is
// shell-quoted into place, as {{q .Field}} does.
type pieces struct {
	text   []string
	fields []func(ScriptData) string
	size   int // of the text
}

// scriptFields are the values a script's pieces may hold.
var scriptFields = map[string]func(ScriptData) string{
	"EventsURL": func(d ScriptData) string { return d.EventsURL },
	"Endpoint":  func(d ScriptData) string { return d.Endpoint },
	"CACert":    func(d ScriptData) string { return d.CACert },
	"Token":     func(d ScriptData) string { return d.Token },
}

// cut returns t as pieces, or nil when it holds anything but text, string
// constants (translated messages) and {{q .Field}} of ScriptData's fields.
func cut(t *template.Template) *pieces {
	p := &pieces{text: []string{""}}
	for _, n := range t.Tree.Root.Nodes {
		switch n := n.(type) {
		case *parse.TextNode:
			p.text[len(p.text)-1] += string(n.Text)
		case *parse.ActionNode:
			if len(n.Pipe.Decl) > 0 || len(n.Pipe.Cmds) != 1 {
				return nil
			}
			args := n.Pipe.Cmds[0].Args
			if len(args) == 1 {
				str, ok := args[0].(*parse.StringNode)
				if !ok {
					return nil
				}
				p.text[len(p.text)-1] += str.Text
				continue
			}
			fn, ok := args[0].(*parse.IdentifierNode)
			if !ok || fn.Ident != "q" || len(args) != 2 {
				return nil
			}
			field, ok := args[1].(*parse.FieldNode)
			if !ok || len(field.Ident) != 1 || scriptFields[field.Ident[0]] == nil {
				return nil
			}
			p.fields = append(p.fields, scriptFields[field.Ident[0]])
			p.text = append(p.text, "")
		default:
			return nil
		}
	}
	for _, s := range p.text {
		p.size += len(s)
	}
	return p
}

// render is the script with d's values.
func (p *pieces) render(d ScriptData) []byte {
	values := make([]string, len(p.fields))
	size := p.size
	for i, f := range p.fields {
		values[i] = shellQuote(f(d))
		size += len(values[i])
	}
	b := make([]byte, 0, size)
	for i, v := range values {
		b = append(b, p.text[i]...)
		b = append(b, v...)
	}
	return append(b, p.text[len(p.text)-1]...)
}

// newScript parses the join script for l's language and cuts it.
func newScript(l *locale.Localizer) *script {
	t := parseScript(l)
	return &script{tmpl: t, pieces: cut(t)}
}

// get returns the join script for the request's language.
func (s *scripts) get(ctx context.Context) *script {
	l := locale.From(ctx)
	if !l.Translates() { // outside a request: messages show as their ids
		return newScript(l)
	}
	if sc, ok := s.byLang.Load(l.Tag()); ok {
		return sc.(*script)
	}
	sc, _ := s.byLang.LoadOrStore(l.Tag(), newScript(l))
	return sc.(*script)
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

// Script renders the join script in the request's language.
func (s *Service) Script(ctx context.Context, d ScriptData) ([]byte, error) {
	sc := s.scripts.get(ctx)
	if sc.pieces != nil {
		return sc.pieces.render(d), nil
	}
	var b bytes.Buffer
	if err := sc.tmpl.Execute(&b, d); err != nil {
		return nil, fmt.Errorf("render join script: %w", err)
	}
	return b.Bytes(), nil
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
