// Command icons builds static/dist/icons.svg, the sprite of the icons the
// pages use (views.Icon), from lucide-static's SVG files in node_modules:
// one <symbol> per icon, its id the icon's name. 'make assets' runs it
// from the repository's root (in Go, so that the image's build stage, which
// has no Node.js, can run it too).
package main

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
)

// names are the icons the pages use; a name must be a file of
// node_modules/lucide-static/icons.
var names = []string{
	"activity", "bell", "boxes", "building-2", "chart-line", "check", "chevron-right",
	"circle", "circle-alert", "circle-check", "clipboard-list", "code", "copy",
	"credit-card", "download", "gauge", "globe", "house", "inbox", "key-round",
	"languages", "layers", "layout-dashboard", "list-checks", "log-out", "mail",
	"menu", "network", "panel-left", "plus", "receipt", "refresh-cw", "server",
	"settings", "shield", "terminal", "trash-2", "triangle-alert", "user", "users", "x",
	"arrow-down", "arrow-up", "arrow-up-down",
}

var (
	comment = regexp.MustCompile(`(?s)<!--.*?-->`)
	open    = regexp.MustCompile(`(?s)^.*?<svg[^>]*>`)
	space   = regexp.MustCompile(`\s*\n\s*`)
)

func main() {
	if err := run("node_modules/lucide-static/icons", "static/dist/icons.svg"); err != nil {
		fmt.Fprintln(os.Stderr, "icons:", err)
		os.Exit(1)
	}
}

func run(dir, out string) error {
	var b strings.Builder
	b.WriteString(`<svg xmlns="http://www.w3.org/2000/svg"><!-- lucide-static, ISC licence -->`)
	for _, name := range names {
		svg, err := os.ReadFile(filepath.Join(dir, name+".svg"))
		if err != nil {
			return err
		}
		inner := open.ReplaceAllString(comment.ReplaceAllString(string(svg), ""), "")
		inner = strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(inner), "</svg>"))
		fmt.Fprintf(&b, `<symbol id="%s" viewBox="0 0 24 24">%s</symbol>`, name, space.ReplaceAllString(inner, ""))
	}
	b.WriteString("</svg>\n")
	return os.WriteFile(out, []byte(b.String()), 0o644)
}
