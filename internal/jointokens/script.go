package jointokens

import (
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
