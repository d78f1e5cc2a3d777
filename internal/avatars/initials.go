package avatars

import (
	"bytes"
	"encoding/xml"
	"fmt"
	"math"
	"strings"
	"unicode"
)

// Initials are what stands for a name on a generated avatar: the first
// letter of its first and last words ("Ada Lovelace" → "AL"), or of its
// only word ("张三" → "张"); "?" for a name without letters or digits.
func Initials(name string) string {
	var firsts []rune
	for _, w := range strings.Fields(name) {
		for _, r := range w {
			if unicode.IsLetter(r) || unicode.IsDigit(r) {
				firsts = append(firsts, unicode.ToUpper(r))
				break
			}
		}
	}
	switch len(firsts) {
	case 0:
		return "?"
	case 1:
		return string(firsts[0])
	}
	return string([]rune{firsts[0], firsts[len(firsts)-1]})
}

// InitialsSVG is the avatar of a user who has not uploaded one: their
// initials in white on a colour that depends on the user's id, so that it
// stays the same when the name changes and differs between neighbours.
// The SVG has no script, style or links.
func InitialsSVG(userID int64, name string) []byte {
	var text bytes.Buffer
	// Writing to a bytes.Buffer does not fail.
	_ = xml.EscapeText(&text, []byte(Initials(name)))
	// Successive ids step round the colour wheel by the golden angle.
	hue := math.Mod(float64(uint64(userID))*137.508, 360)
	return fmt.Appendf(nil, `<svg xmlns="http://www.w3.org/2000/svg" width="%[1]d" height="%[1]d" viewBox="0 0 %[1]d %[1]d">`+
		`<rect width="%[1]d" height="%[1]d" fill="%[2]s"/>`+
		`<text x="50%%" y="50%%" dy=".35em" text-anchor="middle" font-family="system-ui, sans-serif" font-size="104" font-weight="600" fill="#ffffff">%[3]s</text>`+
		`</svg>`, Size, hslHex(hue, 0.55, 0.38), text.String())
}

// hslHex converts a colour given as hue (degrees), saturation and lightness
// (0-1) to #rrggbb.
func hslHex(h, s, l float64) string {
	c := (1 - math.Abs(2*l-1)) * s
	x := c * (1 - math.Abs(math.Mod(h/60, 2)-1))
	m := l - c/2
	var r, g, b float64
	switch {
	case h < 60:
		r, g, b = c, x, 0
	case h < 120:
		r, g, b = x, c, 0
	case h < 180:
		r, g, b = 0, c, x
	case h < 240:
		r, g, b = 0, x, c
	case h < 300:
		r, g, b = x, 0, c
	default:
		r, g, b = c, 0, x
	}
	to8 := func(v float64) int { return int(math.Round((v + m) * 255)) }
	return fmt.Sprintf("#%02x%02x%02x", to8(r), to8(g), to8(b))
}
