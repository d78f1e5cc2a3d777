package branding

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/xml"
	"errors"
	"fmt"
	"image"
	"image/png"
	"io"
	"strings"
	"unicode/utf8"

	"golang.org/x/image/webp"
)

// Limits on a logo.
const (
	MaxLogoBytes = 256 << 10
	// MaxLogoSide bounds a bitmap logo's sides in pixels, so that a small
	// file cannot unpack into a large picture.
	MaxLogoSide = 2048
)

// Logo content types.
const (
	TypePNG  = "image/png"
	TypeWebP = "image/webp"
	TypeSVG  = "image/svg+xml"
)

// Errors users see, as catalog message IDs.
var (
	ErrLogoTooLarge    = errors.New("ErrBrandingLogoTooLarge")
	ErrLogoType        = errors.New("ErrBrandingLogoType")
	ErrLogoCorrupt     = errors.New("ErrBrandingLogoCorrupt")
	ErrLogoDimensions  = errors.New("ErrBrandingLogoDimensions")
	ErrLogoSVGContents = errors.New("ErrBrandingLogoSVGContents")
)

// Logo is an uploaded logo that passed CheckLogo.
type Logo struct {
	Image       []byte
	ContentType string
	ETag        string
}

// CheckLogo tells a logo's type by its bytes (never a file name) and
// checks it: a PNG or WebP picture that decodes, no larger than
// MaxLogoSide either way; or an SVG document with nothing active in it
// (scripts, event handlers, foreign content, entities), which the server
// also serves under a policy that lets nothing run. Errors: the Err*
// above, wrapped.
func CheckLogo(b []byte) (Logo, error) {
	if len(b) > MaxLogoBytes {
		return Logo{}, ErrLogoTooLarge
	}
	var ct string
	switch {
	case bytes.HasPrefix(b, []byte("\x89PNG\r\n\x1a\n")):
		ct = TypePNG
		if err := checkBitmap(b, png.DecodeConfig, png.Decode); err != nil {
			return Logo{}, err
		}
	case len(b) >= 12 && string(b[:4]) == "RIFF" && string(b[8:12]) == "WEBP":
		ct = TypeWebP
		if err := checkBitmap(b, webp.DecodeConfig, webp.Decode); err != nil {
			return Logo{}, err
		}
	case looksLikeSVG(b):
		ct = TypeSVG
		if err := checkSVG(b); err != nil {
			return Logo{}, err
		}
	default:
		return Logo{}, ErrLogoType
	}
	sum := sha256.Sum256(b)
	return Logo{Image: b, ContentType: ct, ETag: hex.EncodeToString(sum[:16])}, nil
}

func checkBitmap(b []byte, config func(io.Reader) (image.Config, error), decode func(io.Reader) (image.Image, error)) error {
	cfg, err := config(bytes.NewReader(b))
	if err != nil {
		return fmt.Errorf("%w: %v", ErrLogoCorrupt, err)
	}
	if cfg.Width <= 0 || cfg.Height <= 0 || cfg.Width > MaxLogoSide || cfg.Height > MaxLogoSide {
		return fmt.Errorf("%w: %dx%d", ErrLogoDimensions, cfg.Width, cfg.Height)
	}
	if _, err := decode(bytes.NewReader(b)); err != nil {
		return fmt.Errorf("%w: %v", ErrLogoCorrupt, err)
	}
	return nil
}

// looksLikeSVG reports whether b is text that starts as XML or an <svg>
// element would (after a byte order mark and blanks).
func looksLikeSVG(b []byte) bool {
	b = bytes.TrimPrefix(b, []byte("\xef\xbb\xbf"))
	b = bytes.TrimLeft(b, " \t\r\n")
	return bytes.HasPrefix(b, []byte("<?xml")) || bytes.HasPrefix(b, []byte("<svg")) || bytes.HasPrefix(b, []byte("<!--"))
}

// svgForbidden are elements that run or embed what the logo must not.
var svgForbidden = map[string]bool{
	"script": true, "foreignobject": true, "iframe": true, "embed": true, "object": true, "handler": true, "listener": true,
}

// checkSVG accepts well-formed UTF-8 XML whose root is an <svg> element,
// without a DOCTYPE (entities), forbidden elements, event handler
// attributes (on*), or links that are not within the document.
func checkSVG(b []byte) error {
	if !utf8.Valid(b) {
		return fmt.Errorf("%w: not UTF-8", ErrLogoCorrupt)
	}
	d := xml.NewDecoder(bytes.NewReader(b))
	depth, roots := 0, 0
	for {
		tok, err := d.Token()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return fmt.Errorf("%w: %v", ErrLogoCorrupt, err)
		}
		switch t := tok.(type) {
		case xml.Directive:
			return fmt.Errorf("%w: a DOCTYPE or other directive", ErrLogoSVGContents)
		case xml.ProcInst:
			if t.Target != "xml" {
				return fmt.Errorf("%w: processing instruction %s", ErrLogoSVGContents, t.Target)
			}
		case xml.StartElement:
			if depth == 0 {
				roots++
				if t.Name.Local != "svg" || roots > 1 {
					return fmt.Errorf("%w: root element %s", ErrLogoType, t.Name.Local)
				}
			}
			depth++
			if svgForbidden[strings.ToLower(t.Name.Local)] {
				return fmt.Errorf("%w: <%s>", ErrLogoSVGContents, t.Name.Local)
			}
			for _, a := range t.Attr {
				name := strings.ToLower(a.Name.Local)
				if strings.HasPrefix(name, "on") {
					return fmt.Errorf("%w: attribute %s", ErrLogoSVGContents, a.Name.Local)
				}
				if name == "href" && !strings.HasPrefix(strings.TrimSpace(a.Value), "#") {
					return fmt.Errorf("%w: link %q", ErrLogoSVGContents, a.Value)
				}
			}
		case xml.EndElement:
			depth--
		case xml.CharData:
			if depth == 0 && len(bytes.TrimSpace(t)) > 0 {
				return fmt.Errorf("%w: text outside the root element", ErrLogoCorrupt)
			}
		}
	}
	if roots != 1 {
		return fmt.Errorf("%w: no <svg> element", ErrLogoType)
	}
	return nil
}
