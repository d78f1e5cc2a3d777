// Package avatars turns an uploaded picture into the platform's avatar: a
// 256x256 PNG cropped to a centred square. Only PNG, JPEG and WebP are
// accepted, told apart by their bytes, never by a file name. What making
// the avatar will allocate is reckoned from the headers before anything is
// decoded (processBytes), so a small file that would unpack into hundreds
// of MB is refused without allocating them. Re-encoding drops everything but the
// pixels (EXIF, GPS, comments).
package avatars

import (
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"image"
	"image/jpeg"
	"image/png"
	"io"
	"runtime"

	"github.com/disintegration/imaging"
	"golang.org/x/image/webp"
)

// Limits on what is accepted, and the size of what is made.
const (
	MaxBytes  = 2 << 20    // an upload's size
	MaxSide   = 8000       // pixels, either side
	MaxPixels = 40_000_000 // width x height
	Size      = 256        // the avatar's side
)

// MaxProcessBytes caps what making one avatar allocates, as processBytes
// reckons it. accounts makes two at a time (AvatarsAtOnce), and Go's
// collector lets the heap grow to about twice what is live, so avatars take
// at most about 100 MB of a server's memory. 24 MB still takes a
// 10-megapixel photo from a phone (a baseline JPEG, 1.5 bytes a pixel), a
// 4-megapixel screenshot (an 8-bit PNG, 4 bytes a pixel) or a 2.5-megapixel
// progressive JPEG (7.5 bytes a pixel).
const MaxProcessBytes = 24 << 20

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
	// decodeBytes is what decode allocates for upload, whose header said
	// cfg: an upper bound, from the way the decoder works.
	decodeBytes func(upload []byte, cfg image.Config) (int, error)
	// orientation is how the picture is to be turned (EXIF, 1 to 8).
	orientation func(upload []byte) int
}

var (
	pngFormat = format{
		name: "png", decodeConfig: png.DecodeConfig, decode: png.Decode,
		decodeBytes: pngDecodeBytes, orientation: upright,
	}
	jpegFormat = format{
		name: "jpeg", decodeConfig: jpeg.DecodeConfig, decode: jpeg.Decode,
		decodeBytes: jpegDecodeBytes, orientation: exifOrientation,
	}
	webpFormat = format{
		name: "webp", decodeConfig: webp.DecodeConfig, decode: webp.Decode,
		decodeBytes: webpDecodeBytes, orientation: upright,
	}
)

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
// ErrTooLarge, ErrUnsupported, ErrCorrupt, ErrDimensions or ErrDecodedSize
// (wrapped).
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
	n, err := processBytes(f, upload, cfg)
	if err != nil {
		return nil, err
	}
	if n > MaxProcessBytes {
		return nil, fmt.Errorf("%w: %dx%d %s takes %d bytes to decode", ErrDecodedSize, cfg.Width, cfg.Height, f.name, n)
	}
	img, err := f.decode(bytes.NewReader(upload))
	if err != nil {
		return nil, fmt.Errorf("%w: decode %s: %v", ErrCorrupt, f.name, err)
	}
	// The decoders check the header against the data, but a decoded image
	// of another size than announced must not slip past the limits.
	if b := img.Bounds(); b.Dx() != cfg.Width || b.Dy() != cfg.Height {
		return nil, fmt.Errorf("%w: %s is %dx%d, header said %dx%d", ErrCorrupt, f.name, b.Dx(), b.Dy(), cfg.Width, cfg.Height)
	}
	avatar, err := squareThumbnail(img)
	if err != nil {
		return nil, err
	}
	var out bytes.Buffer
	enc := png.Encoder{CompressionLevel: png.BestCompression}
	if err := enc.Encode(&out, turn(avatar, f.orientation(upload))); err != nil {
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

// fixedProcessBytes is what making an avatar takes whatever the picture's
// size: the decoders' tables and buffers, zlib's window, the PNG encoder.
// That is 0.8 MB, and up to 1.3 MB for an avatar that does not compress.
const fixedProcessBytes = 2 << 20

// processBytes is what Process allocates to make the avatar of upload: the
// decoder's share, then squareThumbnail's.
func processBytes(f format, upload []byte, cfg image.Config) (int, error) {
	n, err := f.decodeBytes(upload, cfg)
	if err != nil {
		return 0, err
	}
	return fixedProcessBytes + n + thumbnailBytes(min(cfg.Width, cfg.Height)), nil
}

// thumbnailBytes is what squareThumbnail allocates for a square of side
// pixels: the square scaled across (Size x side NRGBA), the avatar, the
// filter weights (about 64 bytes a source pixel, each way), and each
// worker's copy of a row and of a column.
func thumbnailBytes(side int) int {
	return side*(4*Size+2*64+2*4*runtime.GOMAXPROCS(0)) + 2*4*Size*Size
}

// pngDecodeBytes: image/png makes an image of the type the header's colour
// type and depth call for (a grey one with a transparent colour becomes
// NRGBA, which DecodeConfig does not say); when interlaced, it makes one
// for each of the seven passes too, then copies them into the whole.
func pngDecodeBytes(upload []byte, cfg image.Config) (int, error) {
	// DecodeConfig read IHDR, which comes first: its bit depth, colour
	// type and interlace method are at these offsets.
	depth, colorType, interlaced := upload[24], upload[25], upload[28] == 1
	transparent := false
	pngChunks(upload, func(typ string, _ []byte) { transparent = transparent || typ == "tRNS" })
	var perPixel int
	switch {
	case colorType == 3: // paletted
		perPixel = 1
	case colorType == 0 && !transparent: // grey
		perPixel = max(1, int(depth)/8)
	case depth == 16:
		perPixel = 8
	default:
		perPixel = 4
	}
	pixels := cfg.Width * cfg.Height
	if interlaced {
		// Each pass's first column and row, and its steps (Adam7).
		for _, p := range [7][4]int{{0, 0, 8, 8}, {4, 0, 8, 8}, {0, 4, 4, 8}, {2, 0, 4, 4}, {0, 2, 2, 4}, {1, 0, 2, 2}, {0, 1, 1, 2}} {
			w := (cfg.Width - p[0] + p[2] - 1) / p[2]
			h := (cfg.Height - p[1] + p[3] - 1) / p[3]
			pixels += w * h
		}
	}
	return pixels * perPixel, nil
}

// pngChunks calls fn with each chunk before the image data.
func pngChunks(b []byte, fn func(typ string, data []byte)) {
	for i := 8; i+8 <= len(b); {
		n := int(binary.BigEndian.Uint32(b[i:]))
		typ := string(b[i+4 : i+8])
		if typ == "IDAT" || n > len(b)-i-12 {
			return
		}
		fn(typ, b[i+8:i+8+n])
		i += 12 + n
	}
}

// jpegDecodeBytes: image/jpeg makes a plane for each component, its
// samples rounded up to whole MCUs (8x8 blocks, times the sampling
// factors); a progressive JPEG keeps every block's coefficients between
// scans too, 64 int32s a block, 4 bytes a sample; and an RGB, CMYK or
// YCbCrK JPEG is copied into a 4-byte-a-pixel image at the end. imaging
// reads CMYK a pixel at a time through image.Image, which boxes each
// pixel: 4 bytes more.
func jpegDecodeBytes(upload []byte, cfg image.Config) (int, error) {
	var sof []byte
	progressive, adobeRGB := false, false
	jpegSegments(upload, func(marker byte, data []byte) {
		switch {
		case marker >= 0xc0 && marker <= 0xc2 && sof == nil: // SOF0, 1, 2
			sof, progressive = data, marker == 0xc2
		case marker == 0xee && len(data) >= 12 && string(data[:5]) == "Adobe" && data[11] == 0: // APP14
			adobeRGB = true
		}
	})
	if len(sof) < 6 || len(sof) != 6+3*int(sof[5]) {
		return 0, fmt.Errorf("%w: no jpeg frame header", ErrCorrupt)
	}
	// An MCU has, for each component, as many blocks as its sampling
	// factors say. The first component's factors are the largest; a grey
	// JPEG's are 1, whatever it says.
	components := int(sof[5])
	h0, v0, blocksPerMCU := 1, 1, 1
	if components > 1 {
		h0, v0, blocksPerMCU = int(sof[7]>>4), int(sof[7]&0x0f), 0
		for i := range components {
			hv := sof[7+3*i]
			blocksPerMCU += int(hv>>4) * int(hv&0x0f)
		}
	}
	if h0 == 0 || v0 == 0 {
		return 0, fmt.Errorf("%w: jpeg sampling factor 0", ErrCorrupt)
	}
	mcus := (cfg.Width + 8*h0 - 1) / (8 * h0) * ((cfg.Height + 8*v0 - 1) / (8 * v0))
	blocks := blocksPerMCU * mcus
	n := 64 * blocks
	if progressive {
		n += 256 * blocks
	}
	switch {
	case components == 4:
		n += 8 * cfg.Width * cfg.Height
	case components == 3 && (adobeRGB || string([]byte{sof[6], sof[9], sof[12]}) == "RGB"):
		n += 4 * cfg.Width * cfg.Height
	}
	return n, nil
}

// jpegSegments calls fn with each marker segment of a JPEG and its data,
// skipping entropy-coded data as image/jpeg does: up to the next 0xff
// byte that is neither a stuffed 0xff00, a fill byte nor a restart marker.
func jpegSegments(b []byte, fn func(marker byte, data []byte)) {
	for i := 2; i+1 < len(b); {
		marker := b[i+1]
		switch {
		case b[i] != 0xff || marker == 0x00 || marker == 0xff:
			i++
			continue
		case marker == 0xd9: // EOI
			return
		case marker >= 0xd0 && marker <= 0xd7: // RSTn, no length
			i += 2
			continue
		}
		if i+4 > len(b) {
			return
		}
		n := int(binary.BigEndian.Uint16(b[i+2:]))
		if n < 2 || i+2+n > len(b) {
			return
		}
		fn(marker, b[i+4:i+2+n])
		i += 2 + n
	}
}

// webpDecodeBytes: x/image/webp copies a lossy picture's data (VP8) and
// decodes it into YCbCr 4:2:0 rounded up to whole 16x16 macroblocks, 384
// bytes each and 4 of filter parameters. Its alpha channel (ALPH) takes a
// byte a pixel, after being decoded as a lossless picture when it is
// compressed, and imaging reads the result a pixel at a time through
// image.Image, which boxes each pixel: 4 bytes more. See vp8lDecodeBytes
// for lossless pictures (VP8L).
func webpDecodeBytes(upload []byte, cfg image.Config) (int, error) {
	w, h, n := cfg.Width, cfg.Height, 0
	for i := 12; i+8 <= len(upload); {
		typ := string(upload[i : i+4])
		size := int(binary.LittleEndian.Uint32(upload[i+4:]))
		data := upload[i+8 : i+8+min(size, len(upload)-i-8)]
		switch typ {
		case "ALPH":
			n += 5 * w * h
			if len(data) > 0 && data[0]&0x03 == 1 {
				n += vp8lDecodeBytes(w, h)
			}
		case "VP8 ":
			return n + len(data) + 388*((w+15)/16)*((h+15)/16), nil
		case "VP8L":
			return n + vp8lDecodeBytes(w, h), nil
		}
		i += 8 + size + size&1
	}
	return n, nil
}

// vp8lDecodeBytes is an upper bound of what x/image/vp8l allocates for the
// pixels of a w x h lossless picture: 4 bytes a pixel, 2 more when pixels
// index a palette (they are unpacked into another image), and the
// sub-images of its transforms and Huffman codes, at most 4 bytes for 16
// pixels each. The Huffman codes themselves are not counted: how many sets
// there are (up to 2600, about 190 MB at worst) is in the data, not the
// header.
func vp8lDecodeBytes(w, h int) int {
	return 7 * (w + 3) * (h + 3)
}

// exifOrientation is the orientation tag of a JPEG's EXIF segment, or 1
// (upright) when there is none.
func exifOrientation(upload []byte) int {
	orientation, seen := 1, false
	jpegSegments(upload, func(marker byte, data []byte) {
		if marker == 0xe1 && !seen && bytes.HasPrefix(data, []byte("Exif\x00\x00")) {
			orientation, seen = tiffOrientation(data[6:]), true
		}
	})
	return orientation
}

// tiffOrientation reads the Orientation tag (0x0112) of a TIFF header's
// first directory, as EXIF stores it.
func tiffOrientation(t []byte) int {
	if len(t) < 8 {
		return 1
	}
	var order binary.ByteOrder
	switch string(t[:2]) {
	case "II":
		order = binary.LittleEndian
	case "MM":
		order = binary.BigEndian
	default:
		return 1
	}
	dir := int(order.Uint32(t[4:]))
	if dir < 8 || dir > len(t)-2 {
		return 1
	}
	for e := dir + 2; e+12 <= len(t) && e < dir+2+12*int(order.Uint16(t[dir:])); e += 12 {
		if order.Uint16(t[e:]) == 0x0112 {
			if o := int(order.Uint16(t[e+8:])); o >= 1 && o <= 8 {
				return o
			}
			return 1
		}
	}
	return 1
}

// upright is the orientation of pictures that have none.
func upright([]byte) int { return 1 }

// turn applies an EXIF orientation to the avatar: a phone photo taken
// upright is stored sideways with a tag that says so. The avatar is the
// centred square, so turning it after the crop is turning the picture
// before it, and takes a 256x256 copy instead of a full-size one.
func turn(avatar *image.NRGBA, orientation int) *image.NRGBA {
	switch orientation {
	case 2:
		return imaging.FlipH(avatar)
	case 3:
		return imaging.Rotate180(avatar)
	case 4:
		return imaging.FlipV(avatar)
	case 5:
		return imaging.Transpose(avatar)
	case 6:
		return imaging.Rotate270(avatar)
	case 7:
		return imaging.Transverse(avatar)
	case 8:
		return imaging.Rotate90(avatar)
	}
	return avatar
}

// squareThumbnail crops the largest centred square and scales it to Size.
// The square is a view into src, not a copy.
func squareThumbnail(src image.Image) (*image.NRGBA, error) {
	b := src.Bounds()
	side := min(b.Dx(), b.Dy())
	x0 := b.Min.X + (b.Dx()-side)/2
	y0 := b.Min.Y + (b.Dy()-side)/2
	sub, ok := src.(interface {
		SubImage(image.Rectangle) image.Image
	})
	if !ok {
		return nil, fmt.Errorf("crop a %T", src)
	}
	square := sub.SubImage(image.Rect(x0, y0, x0+side, y0+side))
	return imaging.Resize(square, Size, Size, imaging.CatmullRom), nil
}

// ETag names a version of an avatar's bytes, for HTTP caching.
func ETag(b []byte) string {
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:16])
}
