package avatars_test

import (
	"bytes"
	"encoding/binary"
	"hash/crc32"
	"image"
	"image/color"
	"image/gif"
	"image/jpeg"
	"image/png"
	"os"
	"runtime"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/kubebyon/kubebyon/internal/avatars"
)

var (
	red  = color.NRGBA{255, 0, 0, 255}
	blue = color.NRGBA{0, 0, 255, 255}
)

// banded is a w x h picture, red in the centred square and blue outside
// it, so that a correct crop comes out all red.
func banded(w, h int) *image.NRGBA {
	img := image.NewNRGBA(image.Rect(0, 0, w, h))
	side := min(w, h)
	x0, y0 := (w-side)/2, (h-side)/2
	for y := 0; y < h; y++ {
		for x := 0; x < w; x++ {
			c := blue
			if x >= x0 && x < x0+side && y >= y0 && y < y0+side {
				c = red
			}
			img.SetNRGBA(x, y, c)
		}
	}
	return img
}

func encodePNG(t *testing.T, img image.Image) []byte {
	t.Helper()
	var b bytes.Buffer
	require.NoError(t, png.Encode(&b, img))
	return b.Bytes()
}

func encodeJPEG(t *testing.T, img image.Image) []byte {
	t.Helper()
	var b bytes.Buffer
	require.NoError(t, jpeg.Encode(&b, img, &jpeg.Options{Quality: 95}))
	return b.Bytes()
}

// requireAvatar decodes Process's output and checks it is a Size x Size
// PNG whose corners and centre are (nearly) red: the crop kept only the
// centred square.
func requireAvatar(t *testing.T, out []byte) {
	t.Helper()
	cfg, format, err := image.DecodeConfig(bytes.NewReader(out))
	require.NoError(t, err)
	require.Equal(t, "png", format)
	require.Equal(t, avatars.Size, cfg.Width)
	require.Equal(t, avatars.Size, cfg.Height)
	img, err := png.Decode(bytes.NewReader(out))
	require.NoError(t, err)
	for _, p := range []image.Point{{0, 0}, {avatars.Size - 1, 0}, {0, avatars.Size - 1}, {avatars.Size - 1, avatars.Size - 1}, {avatars.Size / 2, avatars.Size / 2}} {
		r, g, b, _ := img.At(p.X, p.Y).RGBA()
		require.Greater(t, r>>8, uint32(200), "red at %v", p)
		require.Less(t, g>>8, uint32(40), "no green at %v", p)
		require.Less(t, b>>8, uint32(40), "no blue at %v (outside the crop)", p)
	}
}

func TestProcessDecodesEachFormat(t *testing.T) {
	t.Parallel()
	webpSample, err := os.ReadFile("testdata/sample.webp") // 48x32, made with cwebp -lossless
	require.NoError(t, err)
	tests := []struct {
		name string
		in   []byte
	}{
		{"png landscape", encodePNG(t, banded(600, 300))},
		{"png portrait, small", encodePNG(t, banded(40, 90))},
		{"jpeg", encodeJPEG(t, banded(320, 480))},
		{"jpeg, a 10-megapixel phone photo", encodeJPEG(t, banded(3648, 2736))},
		{"webp", webpSample},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out, err := avatars.Process(tt.in)
			require.NoError(t, err)
			requireAvatar(t, out)
		})
	}
}

// pngHeader is a PNG signature and a valid IHDR chunk announcing w x h
// 8-bit RGBA pixels, and nothing else.
func pngHeader(w, h uint32) []byte { return pngHeaderOf(w, h, 8, 6) }

// pngHeaderOf is pngHeader with another bit depth and colour type (0 grey,
// 6 RGBA).
func pngHeaderOf(w, h uint32, depth, colorType byte) []byte {
	var ihdr bytes.Buffer
	ihdr.WriteString("IHDR")
	_ = binary.Write(&ihdr, binary.BigEndian, w)
	_ = binary.Write(&ihdr, binary.BigEndian, h)
	ihdr.Write([]byte{depth, colorType, 0, 0, 0}) // no interlace
	var b bytes.Buffer
	b.WriteString("\x89PNG\r\n\x1a\n")
	_ = binary.Write(&b, binary.BigEndian, uint32(ihdr.Len()-4))
	b.Write(ihdr.Bytes())
	_ = binary.Write(&b, binary.BigEndian, crc32.ChecksumIEEE(ihdr.Bytes()))
	return b.Bytes()
}

// TestProcessRejectsDecompressionBomb is not parallel: it measures the
// heap, which other tests would disturb.
func TestProcessRejectsDecompressionBomb(t *testing.T) {
	tests := []struct {
		name string
		bomb []byte
		want error
	}{
		// 100000 x 100000 RGBA would be 40 GB.
		{"too many pixels", pngHeader(100_000, 100_000), avatars.ErrDimensions},
		// Within the pixel limits, but 16-bit RGBA: 320 MB decoded.
		{"too deep for its pixels", pngHeaderOf(8000, 5000, 16, 6), avatars.ErrDecodedSize},
	}
	for _, tt := range tests {
		_, err := png.DecodeConfig(bytes.NewReader(tt.bomb))
		require.NoError(t, err, "the crafted header is a valid PNG header")
		var before, after runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&before)
		_, err = avatars.Process(tt.bomb)
		runtime.ReadMemStats(&after)
		require.ErrorIs(t, err, tt.want, tt.name)
		// Reading the header takes a few KB.
		require.Less(t, after.TotalAlloc-before.TotalAlloc, uint64(1<<20), "bytes allocated: %s", tt.name)
	}
}

func TestProcessRejectsBadUploads(t *testing.T) {
	t.Parallel()
	good := encodePNG(t, banded(64, 64))
	var gifData bytes.Buffer
	require.NoError(t, gif.Encode(&gifData, banded(16, 16), nil))

	tests := []struct {
		name string
		in   []byte
		want error
	}{
		{"text file named .png", []byte("name,email\nAda,ada@example.com\n"), avatars.ErrUnsupported},
		{"empty", nil, avatars.ErrUnsupported},
		{"svg", []byte(`<svg xmlns="http://www.w3.org/2000/svg"><script>alert(1)</script></svg>`), avatars.ErrUnsupported},
		{"gif", gifData.Bytes(), avatars.ErrUnsupported},
		{"truncated png", good[:len(good)/2], avatars.ErrCorrupt},
		{"png signature only", good[:8], avatars.ErrCorrupt},
		{"jpeg signature then garbage", append([]byte("\xff\xd8\xff\xe0"), bytes.Repeat([]byte{0x42}, 100)...), avatars.ErrCorrupt},
		{"riff webp garbage", []byte("RIFF\x10\x00\x00\x00WEBPVP8 garbage!"), avatars.ErrCorrupt},
		{"too wide", pngHeader(avatars.MaxSide+1, 10), avatars.ErrDimensions},
		{"too many pixels", pngHeader(7000, 7000), avatars.ErrDimensions},
		{"8-bit RGBA, 144 MB decoded", pngHeader(6000, 6000), avatars.ErrDecodedSize},
		{"16-bit grey, 2000x2000: 8 MB decoded", pngHeaderOf(2000, 2000, 16, 0), avatars.ErrCorrupt},
		{"16-bit grey, 8000x5000: 80 MB decoded", pngHeaderOf(8000, 5000, 16, 0), avatars.ErrDecodedSize},
		{"16-bit RGBA, 8000x5000: 320 MB decoded", pngHeaderOf(8000, 5000, 16, 6), avatars.ErrDecodedSize},
		{"zero height", pngHeader(10, 0), avatars.ErrCorrupt},
		{"over 2 MB", append(good, make([]byte, avatars.MaxBytes)...), avatars.ErrTooLarge},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := avatars.Process(tt.in)
			require.ErrorIs(t, err, tt.want)
		})
	}
}

// TestProcessStripsMetadata feeds a JPEG carrying an EXIF segment (with a
// GPS-like marker) and checks none of it reaches the avatar.
func TestProcessStripsMetadata(t *testing.T) {
	t.Parallel()
	plain := encodeJPEG(t, banded(200, 100))
	marker := "GPS 51.5007N 0.1246W secret-location"
	exif := append([]byte("Exif\x00\x00MM\x00\x2a\x00\x00\x00\x08"), marker...)
	segment := []byte{0xff, 0xe1, 0, 0}
	binary.BigEndian.PutUint16(segment[2:], uint16(len(exif)+2))
	withExif := append(append(append([]byte{}, plain[:2]...), segment...), exif...)
	withExif = append(withExif, plain[2:]...)
	require.Contains(t, string(withExif), marker)

	out, err := avatars.Process(withExif)
	require.NoError(t, err)
	requireAvatar(t, out)
	require.NotContains(t, string(out), "Exif")
	require.NotContains(t, string(out), marker)
}

func TestETag(t *testing.T) {
	t.Parallel()
	a, b := avatars.ETag([]byte("one")), avatars.ETag([]byte("two"))
	require.Len(t, a, 32)
	require.NotEqual(t, a, b)
	require.Equal(t, a, avatars.ETag([]byte("one")))
}

func TestInitials(t *testing.T) {
	t.Parallel()
	tests := map[string]string{
		"Ada Lovelace":              "AL",
		"ada":                       "A",
		"Grace Brewster Hopper":     "GH",
		"  (Alan)   turing ":        "AT",
		"张三":                        "张",
		"":                          "?",
		"- !":                       "?",
		"élodie durand":             "ÉD",
		"<script>alert(1)</script>": "S",
	}
	for name, want := range tests {
		require.Equal(t, want, avatars.Initials(name), name)
	}
}

func TestInitialsSVG(t *testing.T) {
	t.Parallel()
	svg := string(avatars.InitialsSVG(7, "<Ada> & Lovelace"))
	require.True(t, strings.HasPrefix(svg, `<svg xmlns="http://www.w3.org/2000/svg"`))
	require.Contains(t, svg, ">AL</text>")
	require.NotContains(t, svg, "<Ada>")
	require.NotContains(t, svg, "script")
	require.NotContains(t, svg, "style")

	// The colour follows the id, not the name.
	fill := func(s []byte) string {
		i := bytes.Index(s, []byte(`fill="#`))
		return string(s[i : i+14])
	}
	require.Equal(t, fill(avatars.InitialsSVG(7, "A")), fill(avatars.InitialsSVG(7, "B")))
	require.NotEqual(t, fill(avatars.InitialsSVG(7, "A")), fill(avatars.InitialsSVG(8, "A")))
}

// withOrientation puts an EXIF segment with the orientation tag into a
// JPEG, as a camera does.
func withOrientation(jpg []byte, orientation uint16) []byte {
	exif := []byte("Exif\x00\x00MM\x00\x2a\x00\x00\x00\x08") // TIFF header, first IFD at 8
	exif = append(exif, 0, 1)                                // one entry
	exif = append(exif, 0x01, 0x12, 0, 3, 0, 0, 0, 1)        // Orientation, SHORT, count 1
	exif = binary.BigEndian.AppendUint16(exif, orientation)
	exif = append(exif, 0, 0, 0, 0, 0, 0) // value padding, no next IFD
	segment := []byte{0xff, 0xe1, 0, 0}
	binary.BigEndian.PutUint16(segment[2:], uint16(len(exif)+2))
	out := append(append([]byte{}, jpg[:2]...), segment...)
	out = append(out, exif...)
	return append(out, jpg[2:]...)
}

// TestProcessAppliesEXIFOrientation: a photo stored sideways with the tag
// that says so comes out upright.
func TestProcessAppliesEXIFOrientation(t *testing.T) {
	t.Parallel()
	// 300x200, red above and blue below: turned a quarter clockwise
	// (orientation 6) it is 200x300, blue on the left and red on the right.
	img := image.NewNRGBA(image.Rect(0, 0, 300, 200))
	for y := 0; y < 200; y++ {
		for x := 0; x < 300; x++ {
			c := blue
			if y < 100 {
				c = red
			}
			img.SetNRGBA(x, y, c)
		}
	}
	colorAt := func(out []byte, x, y int) string {
		dec, err := png.Decode(bytes.NewReader(out))
		require.NoError(t, err)
		r, _, b, _ := dec.At(x, y).RGBA()
		switch {
		case r>>8 > 200 && b>>8 < 60:
			return "red"
		case b>>8 > 200 && r>>8 < 60:
			return "blue"
		}
		return "mixed"
	}
	q, tq := avatars.Size/4, avatars.Size*3/4
	tests := []struct {
		orientation          uint16
		topLeft, bottomRight string
	}{
		{1, "red", "blue"},
		{6, "blue", "red"},
		{8, "red", "blue"}, // a quarter counter-clockwise: red on the left
		{3, "blue", "red"},
	}
	for _, tt := range tests {
		out, err := avatars.Process(withOrientation(encodeJPEG(t, img), tt.orientation))
		require.NoError(t, err, "orientation %d", tt.orientation)
		require.Equal(t, tt.topLeft, colorAt(out, q, q), "orientation %d: top left", tt.orientation)
		require.Equal(t, tt.bottomRight, colorAt(out, tq, tq), "orientation %d: bottom right", tt.orientation)
		require.NotContains(t, string(out), "Exif")
	}
}
