// Package locale is the translation catalog (go-i18n) and the per-request
// choice of language. Every user-facing string goes through it.
package locale

import (
	"context"
	"embed"
	"encoding/json"
	"fmt"
	"io/fs"
	"strings"

	"github.com/nicksnyder/go-i18n/v2/i18n"
	"golang.org/x/text/language"
)

//go:embed messages/*.json
var messageFiles embed.FS

// Supported languages; the first is the fallback.
var (
	English           = language.English
	SimplifiedChinese = language.MustParse("zh-CN")
)

// Catalog holds every message in every supported language.
type Catalog struct {
	matcher language.Matcher
	tags    []language.Tag
	// plain is, per language, every message without template actions
	// already translated (go-i18n matches languages and looks the message
	// up again on every call: a page has dozens).
	plain map[language.Tag]map[string]string
	// simple is, per language, the messages whose template actions are
	// all plain field references ({{.Name}}), as parts filled in without
	// text/template.
	simple map[language.Tag]map[string][]part
	// localizers holds one Localizer per language, shared by the requests
	// (they only read it).
	localizers map[language.Tag]*Localizer
	// byName finds a language's Localizer by its tag as written ("en",
	// "zh-CN"): the admins' default language for visitors is one, and
	// requests without Accept-Language (the join script, probes) would
	// otherwise parse and match it on every request.
	byName map[string]*Localizer
}

// New loads the embedded message files.
func New() (*Catalog, error) {
	b := i18n.NewBundle(English)
	b.RegisterUnmarshalFunc("json", json.Unmarshal)
	paths, err := fs.Glob(messageFiles, "messages/*.json")
	if err != nil {
		return nil, fmt.Errorf("list message files: %w", err)
	}
	// Every message id, and those that take template data or a plural
	// count in any language.
	ids, templated := map[string]bool{}, map[string]bool{}
	simple := map[language.Tag]map[string][]part{}
	for _, p := range paths {
		mf, err := b.LoadMessageFileFS(messageFiles, p)
		if err != nil {
			return nil, fmt.Errorf("load %s: %w", p, err)
		}
		for _, m := range mf.Messages {
			ids[m.ID] = true
			plural := m.Zero != "" || m.One != "" || m.Two != "" || m.Few != "" || m.Many != ""
			if strings.Contains(m.Other, "{{") || plural {
				templated[m.ID] = true
			}
			if parts, ok := parseSimple(m.Other); ok && !plural && strings.Contains(m.Other, "{{") {
				if simple[mf.Tag] == nil {
					simple[mf.Tag] = map[string][]part{}
				}
				simple[mf.Tag][m.ID] = parts
			}
		}
	}
	tags := []language.Tag{English, SimplifiedChinese}
	c := &Catalog{matcher: language.NewMatcher(tags), tags: tags, plain: map[language.Tag]map[string]string{}, simple: simple}
	for _, tag := range tags {
		l := i18n.NewLocalizer(b, tag.String())
		c.plain[tag] = map[string]string{}
		for id := range ids {
			if templated[id] {
				continue
			}
			s, err := l.Localize(&i18n.LocalizeConfig{MessageID: id})
			if err != nil {
				return nil, fmt.Errorf("translate %s to %s: %w", id, tag, err)
			}
			c.plain[tag][id] = s
		}
	}
	c.localizers = make(map[language.Tag]*Localizer, len(tags))
	c.byName = make(map[string]*Localizer, len(tags))
	for _, tag := range tags {
		c.localizers[tag] = &Localizer{tag: tag, l: i18n.NewLocalizer(b, tag.String()), plain: c.plain[tag], simple: c.simple[tag]}
		c.byName[tag.String()] = c.localizers[tag]
	}
	return c, nil
}

// Localizer translates for one language.
type Localizer struct {
	tag    language.Tag
	l      *i18n.Localizer
	plain  map[string]string
	simple map[string][]part
}

// part is a piece of a simple message: literal text, or the template
// data's field (printed as text/template prints it).
type part struct {
	text, field string
}

// parseSimple splits a message whose actions are all {{.Field}} (spaces
// allowed inside the braces) into parts; ok is false for any other
// action, which text/template must run.
func parseSimple(msg string) (parts []part, ok bool) {
	for msg != "" {
		i := strings.Index(msg, "{{")
		if i < 0 {
			return append(parts, part{text: msg}), true
		}
		if i > 0 {
			parts = append(parts, part{text: msg[:i]})
		}
		j := strings.Index(msg[i:], "}}")
		if j < 0 {
			return nil, false
		}
		action := strings.TrimSpace(msg[i+2 : i+j])
		name, isField := strings.CutPrefix(action, ".")
		if !isField || name == "" || strings.ContainsAny(name, " .|()$\"") {
			return nil, false
		}
		parts = append(parts, part{field: name})
		msg = msg[i+j+2:]
	}
	return parts, true
}

// fill fills a simple message in, as text/template would; ok is false
// when data lacks a field.
func fill(parts []part, data map[string]any) (string, bool) {
	var b strings.Builder
	for _, p := range parts {
		if p.field == "" {
			b.WriteString(p.text)
			continue
		}
		v, ok := data[p.field]
		if !ok {
			return "", false
		}
		switch v := v.(type) {
		case string:
			b.WriteString(v)
		default:
			fmt.Fprint(&b, v)
		}
	}
	return b.String(), true
}

// For picks the best supported language for the preferences given, each an
// Accept-Language value or a language tag, most important first.
func (c *Catalog) For(prefs ...string) *Localizer {
	_, i, _ := c.matcher.Match(parsePrefs(prefs)...)
	return c.localizers[c.tags[i]]
}

// parsePrefs reads language preferences, each an Accept-Language value
// or a language tag, most important first; what does not parse is left out.
func parsePrefs(prefs []string) []language.Tag {
	var want []language.Tag
	for _, p := range prefs {
		if tags, _, err := language.ParseAcceptLanguage(p); err == nil {
			want = append(want, tags...)
		}
	}
	return want
}

// ForDefault is For, with def (a language tag) for when none of prefs
// names a language the catalog has: an admin's default for visitors whose
// browser asks for none of ours, or for nothing.
func (c *Catalog) ForDefault(def string, prefs ...string) *Localizer {
	_, i, conf := c.matcher.Match(parsePrefs(prefs)...)
	if conf == language.No && def != "" {
		if l, ok := c.byName[def]; ok {
			return l
		}
		return c.For(def)
	}
	return c.localizers[c.tags[i]]
}

// Tag is the language chosen, for <html lang>.
func (l *Localizer) Tag() string { return l.tag.String() }

// Translates reports whether l translates: false for the localizer From
// returns outside a request, with which messages show as their ids.
func (l *Localizer) Translates() bool { return l.l != nil }

// T translates id, filling in template data when given. A missing message
// shows its id, which the catalog test prevents from shipping.
func (l *Localizer) T(id string, data ...map[string]any) string {
	if len(data) == 0 {
		if s, ok := l.plain[id]; ok {
			return s
		}
	} else if parts, ok := l.simple[id]; ok {
		if s, ok := fill(parts, data[0]); ok {
			return s
		}
	}
	cfg := &i18n.LocalizeConfig{MessageID: id}
	if len(data) > 0 {
		cfg.TemplateData = data[0]
	}
	if l.l == nil {
		return id
	}
	s, err := l.l.Localize(cfg)
	if err != nil {
		return id
	}
	return s
}

type ctxKey struct{}

// With stores l in ctx for the views.
func With(ctx context.Context, l *Localizer) context.Context {
	return context.WithValue(ctx, ctxKey{}, l)
}

// From returns the request's localizer. Without one (a component rendered
// outside a request) messages show as their ids, in English.
func From(ctx context.Context) *Localizer {
	if l, ok := ctx.Value(ctxKey{}).(*Localizer); ok {
		return l
	}
	return &Localizer{tag: English}
}

// T translates id in the request's language.
func T(ctx context.Context, id string, data ...map[string]any) string {
	return From(ctx).T(id, data...)
}

// Lang is the request's language tag.
func Lang(ctx context.Context) string { return From(ctx).Tag() }
