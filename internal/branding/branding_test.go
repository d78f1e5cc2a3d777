package branding

import (
	"bytes"
	"image"
	"image/color"
	"image/png"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/kubebyon/kubebyon/internal/input"
	"github.com/kubebyon/kubebyon/internal/testenv"
)

func TestMain(m *testing.M) { testenv.Main(m) }

func TestValidate(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		change func(*Settings)
		field  string // "" when valid
	}{
		{"defaults", func(*Settings) {}, ""},
		{"everything set", func(s *Settings) {
			s.ProductName, s.SupportContact, s.FooterText, s.DefaultLanguage = "Acme Cloud", "help@acme.example", "© Acme\nAll rights reserved.", "zh-CN"
		}, ""},
		{"support URL", func(s *Settings) { s.SupportContact = "https://acme.example/help" }, ""},
		{"shortest sessions", func(s *Settings) { s.SessionLifetime, s.IdleTimeout = time.Hour, 15*time.Minute }, ""},
		{"longest sessions", func(s *Settings) { s.SessionLifetime, s.IdleTimeout = 90*24*time.Hour, 90*24*time.Hour }, ""},
		{"no product name", func(s *Settings) { s.ProductName = " " }, FieldProductName},
		{"product name too long", func(s *Settings) { s.ProductName = strings.Repeat("x", MaxProductName+1) }, FieldProductName},
		{"product name of 60 Chinese characters", func(s *Settings) { s.ProductName = strings.Repeat("云", MaxProductName) }, ""},
		{"product name on two lines", func(s *Settings) { s.ProductName = "Acme\nCloud" }, FieldProductName},
		{"product name with NUL", func(s *Settings) { s.ProductName = "Acme\x00" }, FieldProductName},
		{"support address with a name", func(s *Settings) { s.SupportContact = "Help <help@acme.example>" }, FieldSupportContact},
		{"support not an address", func(s *Settings) { s.SupportContact = "call us" }, FieldSupportContact},
		{"support javascript URL", func(s *Settings) { s.SupportContact = "javascript://alert(1)" }, FieldSupportContact},
		{"support URL with credentials", func(s *Settings) { s.SupportContact = "https://u:p@acme.example/" }, FieldSupportContact},
		{"support too long", func(s *Settings) { s.SupportContact = "https://acme.example/" + strings.Repeat("a", MaxSupportContact) }, FieldSupportContact},
		{"footer too long", func(s *Settings) { s.FooterText = strings.Repeat("x", MaxFooterText+1) }, FieldFooterText},
		{"footer with control characters", func(s *Settings) { s.FooterText = "a\x1b[31mb" }, FieldFooterText},
		{"language", func(s *Settings) { s.DefaultLanguage = "fr" }, FieldDefaultLanguage},
		{"lifetime too short", func(s *Settings) { s.SessionLifetime = 59 * time.Minute }, FieldSessionLifetime},
		{"lifetime too long", func(s *Settings) { s.SessionLifetime = 91 * 24 * time.Hour }, FieldSessionLifetime},
		{"idle too short", func(s *Settings) { s.IdleTimeout = 14 * time.Minute }, FieldIdleTimeout},
		{"idle beyond the lifetime", func(s *Settings) { s.SessionLifetime, s.IdleTimeout = 2*time.Hour, 3*time.Hour }, FieldIdleTimeout},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			s := Defaults()
			tt.change(&s)
			err := s.Validate()
			if tt.field == "" {
				require.NoError(t, err)
				return
			}
			var errs input.Errors
			require.ErrorAs(t, err, &errs)
			require.Contains(t, errs, tt.field)
			require.Len(t, errs, 1, "%v", errs)
		})
	}
}

// pngOf is a w x h PNG.
func pngOf(t *testing.T, w, h int) []byte {
	t.Helper()
	img := image.NewNRGBA(image.Rect(0, 0, w, h))
	img.Set(0, 0, color.NRGBA{R: 255, A: 255})
	var b bytes.Buffer
	require.NoError(t, png.Encode(&b, img))
	return b.Bytes()
}

func TestCheckLogo(t *testing.T) {
	t.Parallel()
	webpSample, err := os.ReadFile("testdata/sample.webp") // 48x32
	require.NoError(t, err)
	const svg = `<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 10 10"><style>rect{fill:red}</style><rect width="10" height="10"/></svg>`
	bigPNG := pngOf(t, 2049, 1)
	tests := []struct {
		name     string
		data     []byte
		wantType string
		err      error
	}{
		{"png", pngOf(t, 64, 32), TypePNG, nil},
		{"webp", webpSample, TypeWebP, nil},
		{"svg", []byte(svg), TypeSVG, nil},
		{"svg with a declaration", []byte(`<?xml version="1.0" encoding="UTF-8"?>` + "\n" + svg), TypeSVG, nil},
		{"svg with an inner link", []byte(`<svg xmlns="http://www.w3.org/2000/svg" xmlns:xlink="http://www.w3.org/1999/xlink"><defs><rect id="r" width="1" height="1"/></defs><use xlink:href="#r"/></svg>`), TypeSVG, nil},
		{"too large", append(pngOf(t, 1, 1), make([]byte, MaxLogoBytes)...), "", ErrLogoTooLarge},
		{"jpeg", []byte("\xff\xd8\xff\xe0\x00\x10JFIF\x00"), "", ErrLogoType},
		{"text", []byte("hello"), "", ErrLogoType},
		{"html", []byte("<html><script>alert(1)</script></html>"), "", ErrLogoType},
		{"xml that is not svg", []byte(`<?xml version="1.0"?><html/>`), "", ErrLogoType},
		{"truncated png", pngOf(t, 8, 8)[:40], "", ErrLogoCorrupt},
		{"png too wide", bigPNG, "", ErrLogoDimensions},
		{"svg script", []byte(`<svg xmlns="http://www.w3.org/2000/svg"><script>alert(1)</script></svg>`), "", ErrLogoSVGContents},
		{"svg event handler", []byte(`<svg xmlns="http://www.w3.org/2000/svg" onload="alert(1)"/>`), "", ErrLogoSVGContents},
		{"svg foreign object", []byte(`<svg xmlns="http://www.w3.org/2000/svg"><foreignObject><div/></foreignObject></svg>`), "", ErrLogoSVGContents},
		{"svg outside link", []byte(`<svg xmlns="http://www.w3.org/2000/svg"><image href="https://evil.example/x.png"/></svg>`), "", ErrLogoSVGContents},
		{"svg entities", []byte(`<?xml version="1.0"?><!DOCTYPE svg [<!ENTITY a "aaaa">]><svg xmlns="http://www.w3.org/2000/svg">&a;</svg>`), "", ErrLogoSVGContents},
		{"svg not well formed", []byte(`<svg xmlns="http://www.w3.org/2000/svg"><rect></svg>`), "", ErrLogoCorrupt},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			logo, err := CheckLogo(tt.data)
			if tt.err != nil {
				require.ErrorIs(t, err, tt.err)
				return
			}
			require.NoError(t, err)
			require.Equal(t, tt.wantType, logo.ContentType)
			require.Equal(t, tt.data, logo.Image, "kept as uploaded")
			require.Len(t, logo.ETag, 32)
		})
	}
}
