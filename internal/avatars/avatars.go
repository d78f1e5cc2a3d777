// Package avatars turns an uploaded picture into the platform's avatar: a
// 256x256 PNG cropped to a centred square. Only PNG, JPEG and WebP are
// accepted, told apart by their bytes, never by a file name. The size the
// header claims, and the memory its pixels take at the colour depth it
// declares, are checked before anything is decoded, so a small file that
// would unpack into gigabytes of pixels is refused without allocating them.
// Re-encoding drops everything but the pixels (EXIF, GPS, comments).
package avatars

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"image"
	"image/color"
	"image/jpeg"
	"image/png"
	"io"

	"github.com/disintegration/imaging"
	"golang.org/x/image/draw"
	"golang.org/x/image/webp"
)

// Limits on what is accepted, and the size of what is made.
const (
	MaxBytes  = 2 << 20    // an upload's size
	MaxSide   = 8000       // pixels, either side
	MaxPixels = 40_000_000 // width x height
	Size      = 256        // the avatar's side
)

// MaxDecodedBytes caps the memory the decoded pixels take (width x height x
// bytes per pixel, see decodedBytes): a 16-bit RGBA picture at MaxPixels
// would take 320 MB.
const MaxDecodedBytes = 128 << 20

// Errors users see, as catalog message IDs.
var (
	ErrTooLarge    = errors.New("ErrAvatarTooLarge")
	ErrUnsupported = errors.New("ErrAvatarType")
	ErrCorrupt     = errors.New("ErrAvatarCorrupt")
	ErrDimensions  = errors.New("ErrAvatarDimensions")
	ErrDecodedSize = errors.New("ErrAvatarDecodedSize")
)

// format is a decoder for one kind of image.
type format struct {
	name         string
	decodeConfig func(io.Reader) (image.Config, error)
	decode       func(io.Reader) (image.Image, error)
	// turns says the decoder may turn the image a quarter (EXIF
	// orientation), so that its width and height swap.
	turns bool
}

var (
	pngFormat  = format{"png", png.DecodeConfig, png.Decode, false}
	jpegFormat = format{"jpeg", jpeg.DecodeConfig, decodeJPEG, true}
	webpFormat = format{"webp", webp.DecodeConfig, webp.Decode, false}
)

// decodeJPEG applies the EXIF orientation a camera wrote: a phone photo
// taken upright is stored sideways with a tag that says so.
func decodeJPEG(r io.Reader) (image.Image, error) {
	return imaging.Decode(r, imaging.AutoOrientation(true))
}

// sniff picks the decoder from the file's signature.
func sniff(b []byte) (format, bool) {
	switch {
	case bytes.HasPrefix(b, []byte("\x89PNG\r\n\x1a\n")):
		return pngFormat, true
	case bytes.HasPrefix(b, []byte("\xff\xd8\xff")):
		return jpegFormat, true
	case len(b) >= 12 && string(b[:4]) == "RIFF" && string(b[8:12]) == "WEBP":
		return webpFormat, true
	}
	return format{}, false
}

// Process checks an upload and returns the avatar as PNG. Its errors are
// ErrTooLarge, ErrUnsupported, ErrCorrupt or ErrDimensions (wrapped).
func Process(upload []byte) ([]byte, error) {
	if len(upload) > MaxBytes {
		return nil, ErrTooLarge
	}
	f, ok := sniff(upload)
	if !ok {
		return nil, ErrUnsupported
	}
	cfg, err := f.decodeConfig(bytes.NewReader(upload))
	if err != nil {
		return nil, fmt.Errorf("%w: read %s header: %v", ErrCorrupt, f.name, err)
	}
	if err := checkDimensions(cfg.Width, cfg.Height); err != nil {
		return nil, err
	}
	if n := decodedBytes(f, cfg); n > MaxDecodedBytes {
		return nil, fmt.Errorf("%w: %dx%d %s takes %d bytes decoded", ErrDecodedSize, cfg.Width, cfg.Height, f.name, n)
	}
	img, err := f.decode(bytes.NewReader(upload))
	if err != nil {
		return nil, fmt.Errorf("%w: decode %s: %v", ErrCorrupt, f.name, err)
	}
	// The decoders check the header against the data, but a decoded image
	// of another size than announced must not slip past the limits.
	b := img.Bounds()
	asAnnounced := b.Dx() == cfg.Width && b.Dy() == cfg.Height
	turned := f.turns && b.Dx() == cfg.Height && b.Dy() == cfg.Width
	if !asAnnounced && !turned {
		return nil, fmt.Errorf("%w: %s is %dx%d, header said %dx%d", ErrCorrupt, f.name, b.Dx(), b.Dy(), cfg.Width, cfg.Height)
	}
	var out bytes.Buffer
	enc := png.Encoder{CompressionLevel: png.BestCompression}
	if err := enc.Encode(&out, squareThumbnail(img)); err != nil {
		return nil, fmt.Errorf("encode avatar: %w", err)
	}
	return out.Bytes(), nil
}

func checkDimensions(w, h int) error {
	if w <= 0 || h <= 0 || w > MaxSide || h > MaxSide || w*h > MaxPixels {
		return fmt.Errorf("%w: %dx%d", ErrDimensions, w, h)
	}
	return nil
}

// decodedBytes is the memory the decoder takes for the pixels of an image
// of cfg's size and colour model. A JPEG the decoder turns (EXIF
// orientation) is copied once more, as NRGBA.
func decodedBytes(f format, cfg image.Config) int {
	n := cfg.Width * cfg.Height * bytesPerPixel(cfg.ColorModel)
	if f.turns {
		n += cfg.Width * cfg.Height * 4
	}
	return n
}

// bytesPerPixel is what the image type a decoder makes for model takes per
// pixel; YCbCr counts as unsubsampled (4:4:4), the most it can take.
func bytesPerPixel(model color.Model) int {
	if _, ok := model.(color.Palette); ok {
		return 1
	}
	switch model {
	case color.GrayModel, color.AlphaModel:
		return 1
	case color.Gray16Model, color.Alpha16Model:
		return 2
	case color.YCbCrModel:
		return 3
	case color.RGBAModel, color.NRGBAModel, color.CMYKModel, color.NYCbCrAModel:
		return 4
	}
	// RGBA64 and NRGBA64, and anything else: the widest pixel there is.
	return 8
}

// squareThumbnail crops the largest centred square and scales it to Size.
func squareThumbnail(src image.Image) *image.RGBA {
	b := src.Bounds()
	side := min(b.Dx(), b.Dy())
	x0 := b.Min.X + (b.Dx()-side)/2
	y0 := b.Min.Y + (b.Dy()-side)/2
	crop := image.Rect(x0, y0, x0+side, y0+side)
	dst := image.NewRGBA(image.Rect(0, 0, Size, Size))
	draw.CatmullRom.Scale(dst, dst.Bounds(), src, crop, draw.Src, nil)
	return dst
}

// ETag names a version of an avatar's bytes, for HTTP caching.
func ETag(b []byte) string {
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:16])
}
