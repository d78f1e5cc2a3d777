package avatars

import (
	"bytes"
	"compress/zlib"
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"image"
	"image/color"
	"image/jpeg"
	"image/png"
	"math/rand/v2"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"
)

// progressiveCMYK is a progressive CMYK JPEG of w x h pixels (multiples of
// 8) with one scan, the DC coefficients, all zero: one bit a block, so 4000
// x 4000 takes 122 KB. Decoding it takes four 1-byte planes, four
// coefficient buffers of 4 bytes a pixel (what progressive decoding keeps
// between scans) and a CMYK copy: 24 bytes a pixel, 384 MB.
func progressiveCMYK(w, h int) []byte {
	var b bytes.Buffer
	segment := func(marker byte, data []byte) {
		b.Write([]byte{0xff, marker})
		_ = binary.Write(&b, binary.BigEndian, uint16(len(data)+2))
		b.Write(data)
	}
	b.Write([]byte{0xff, 0xd8})                                      // SOI
	segment(0xee, []byte("Adobe\x00\x64\x00\x00\x00\x00\x00"))       // APP14, transform 0: CMYK
	segment(0xdb, append([]byte{0}, bytes.Repeat([]byte{1}, 64)...)) // DQT
	sof := []byte{8, byte(h >> 8), byte(h), byte(w >> 8), byte(w), 4}
	sos := []byte{4}
	for id := byte(1); id <= 4; id++ {
		sof = append(sof, id, 0x11, 0) // full resolution, table 0
		sos = append(sos, id, 0x00)
	}
	segment(0xc2, sof) // SOF2: progressive
	// DC table 0: a single 1-bit code, for "no difference".
	segment(0xc4, append([]byte{0x00, 1}, make([]byte, 16)...))
	segment(0xda, append(sos, 0, 0, 0)) // the DC scan of all four
	b.Write(make([]byte, (w/8*h/8*4+7)/8))
	b.Write([]byte{0xff, 0xd9}) // EOI
	return b.Bytes()
}

// writePNGChunk appends a PNG chunk with its length and CRC.
func writePNGChunk(b *bytes.Buffer, typ string, data []byte) {
	_ = binary.Write(b, binary.BigEndian, uint32(len(data)))
	crc := crc32.NewIEEE()
	crc.Write([]byte(typ))
	crc.Write(data)
	b.WriteString(typ)
	b.Write(data)
	_ = binary.Write(b, binary.BigEndian, crc.Sum32())
}

// interlaced16 is an Adam7-interlaced 16-bit RGBA PNG of w x h black
// pixels, whose rows compress a thousandfold: 4000 x 4000 takes 125 KB.
// Decoding it takes a 64-bit image for each pass and one for the whole:
// 16 bytes a pixel, 256 MB.
func interlaced16(w, h int) []byte {
	var idat bytes.Buffer
	z, err := zlib.NewWriterLevel(&idat, zlib.BestCompression)
	if err != nil {
		panic(err)
	}
	// Each pass's first column and row, and its steps.
	passes := [7][4]int{{0, 0, 8, 8}, {4, 0, 8, 8}, {0, 4, 4, 8}, {2, 0, 4, 4}, {0, 2, 2, 4}, {1, 0, 2, 2}, {0, 1, 1, 2}}
	for _, p := range passes {
		pw, ph := (w-p[0]+p[2]-1)/p[2], (h-p[1]+p[3]-1)/p[3]
		row := make([]byte, 1+8*pw) // filter byte, then 8 bytes a pixel
		for range ph {
			_, _ = z.Write(row)
		}
	}
	if err := z.Close(); err != nil {
		panic(err)
	}
	b := bytes.NewBuffer(pngHeaderOf(uint32(w), uint32(h), 16, 6, 1)) // 16-bit RGBA, Adam7
	writePNGChunk(b, "IDAT", idat.Bytes())
	writePNGChunk(b, "IEND", nil)
	return b.Bytes()
}

// bombs are the two files of issue 35: small uploads within the pixel
// limits that Go's decoders unpacked into 417 and 289 MB (the scaling
// included) before their costs were reckoned.
var bombs = sync.OnceValue(func() map[string][]byte {
	return map[string][]byte{
		"progressive CMYK JPEG": progressiveCMYK(4000, 4000),
		"interlaced 16-bit PNG": interlaced16(4000, 4000),
	}
})

// TestProcessRefusesIssue35Bombs: each file is refused from its headers,
// without unpacking it. It is not parallel: it measures the heap.
func TestProcessRefusesIssue35Bombs(t *testing.T) {
	for name, bomb := range bombs() {
		require.Less(t, len(bomb), 130<<10, name)
		var before, after runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&before)
		_, err := Process(bomb)
		runtime.ReadMemStats(&after)
		require.ErrorIs(t, err, ErrDecodedSize, name)
		require.Less(t, after.TotalAlloc-before.TotalAlloc, uint64(1<<20), "bytes allocated: %s", name)
	}
}

// TestProcessTakes800x800OfAnyKind: ErrAvatarDecodedSize tells users that
// 800x800 pixels will do; so it does for the kinds that take the most
// memory a pixel.
func TestProcessTakes800x800OfAnyKind(t *testing.T) {
	t.Parallel()
	for name, in := range map[string][]byte{
		"progressive CMYK JPEG": progressiveCMYK(800, 800),
		"interlaced 16-bit PNG": interlaced16(800, 800),
	} {
		_, err := Process(in)
		require.NoError(t, err, name)
	}
}

// memoryHelperEnv makes the test binary run parallelBombUploads instead of
// its tests, in a process of its own whose peak memory is theirs alone.
const memoryHelperEnv = "AVATARS_TEST_MEMORY_HELPER"

// TestParallelBombUploadsMemory: ten uploads of each file at once keep the
// process's peak resident memory (VmHWM) under 300 MB.
func TestParallelBombUploadsMemory(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("reads /proc/self/status")
	}
	if os.Getenv(memoryHelperEnv) != "" {
		parallelBombUploads(t)
		return
	}
	t.Parallel()
	cmd := exec.Command(os.Args[0], "-test.run=^TestParallelBombUploadsMemory$", "-test.count=1")
	cmd.Env = append(os.Environ(), memoryHelperEnv+"=1")
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "%s", out)
	_, after, ok := strings.Cut(string(out), "peak VmHWM kB: ")
	require.True(t, ok, "%s", out)
	peakKB, err := strconv.Atoi(strings.Fields(after)[0])
	require.NoError(t, err)
	t.Logf("peak resident memory of 10 parallel uploads of each file: %d MB", peakKB>>10)
	require.Less(t, peakKB, 300<<10, "peak resident memory, kB")
}

func parallelBombUploads(t *testing.T) {
	for _, bomb := range bombs() {
		var wg sync.WaitGroup
		for range 10 {
			wg.Go(func() { _, _ = Process(bomb) })
		}
		wg.Wait()
	}
	status, err := os.ReadFile("/proc/self/status")
	require.NoError(t, err)
	_, after, ok := strings.Cut(string(status), "VmHWM:")
	require.True(t, ok, "no VmHWM in /proc/self/status")
	fmt.Printf("peak VmHWM kB: %s\n", strings.Fields(after)[0])
}

// TestProcessBytesBoundsAllocations: for pictures of each format and colour
// model, what Process allocates is within what processBytes said, and not
// far below it. It is not parallel: it measures the heap.
func TestProcessBytesBoundsAllocations(t *testing.T) {
	noise := func(img interface{ Set(x, y int, c color.Color) }, w, h int) {
		for y := range h {
			for x := range w {
				img.Set(x, y, color.NRGBA{uint8(x * 7), uint8(y * 13), uint8(x ^ y), uint8(128 + x%128)})
			}
		}
	}
	rgba := image.NewNRGBA(image.Rect(0, 0, 1200, 900))
	noise(rgba, 1200, 900)
	deep := image.NewNRGBA64(image.Rect(0, 0, 900, 1200))
	noise(deep, 900, 1200)
	grey := image.NewGray(image.Rect(0, 0, 1600, 1000))
	noise(grey, 1600, 1000)
	grey16 := image.NewGray16(image.Rect(0, 0, 1000, 800))
	noise(grey16, 1000, 800)
	paletted := image.NewPaletted(image.Rect(0, 0, 1500, 1500), color.Palette{color.Black, color.White})
	noise(paletted, 1500, 1500)
	opaque := image.NewRGBA(image.Rect(0, 0, 1600, 1200))
	noise(opaque, 1600, 1200)
	webpSample, err := os.ReadFile("testdata/sample.webp")
	require.NoError(t, err)
	// Noise the size of the avatar: the PNG encoder cannot compress it.
	random := image.NewNRGBA(image.Rect(0, 0, Size, Size))
	_, _ = rand.NewChaCha8([32]byte{}).Read(random.Pix)

	tests := []struct {
		name string
		in   []byte
	}{
		{"png, 8-bit RGBA", encodePNG(t, rgba)},
		{"png, random pixels", encodePNG(t, random)},
		{"png, 16-bit RGBA", encodePNG(t, deep)},
		{"png, grey", encodePNG(t, grey)},
		{"png, grey with a transparent colour (decoded as NRGBA)", withPNGChunk(encodePNG(t, grey), "tRNS", []byte{0, 0})},
		{"png, 16-bit grey with a transparent colour (NRGBA64)", withPNGChunk(encodePNG(t, grey16), "tRNS", []byte{0, 0})},
		{"png, paletted", encodePNG(t, paletted)},
		{"png, interlaced 16-bit", interlaced16(800, 600)},
		{"jpeg, YCbCr 4:2:0", encodeJPEG(t, opaque)},
		{"jpeg, grey", encodeJPEG(t, grey)},
		{"jpeg, RGB (Adobe transform 0)", withJPEGSegment(encodeJPEG(t, opaque), 0xee, []byte("Adobe\x00\x64\x00\x00\x00\x00\x00"))},
		{"jpeg, progressive CMYK", progressiveCMYK(640, 480)},
		{"webp, lossless", webpSample},
	}
	for _, tt := range tests {
		f, ok := sniff(tt.in)
		require.True(t, ok, tt.name)
		cfg, err := f.decodeConfig(bytes.NewReader(tt.in))
		require.NoError(t, err, tt.name)
		bound, err := processBytes(f, tt.in, cfg)
		require.NoError(t, err, tt.name)

		var before, after runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&before)
		_, err = Process(tt.in)
		runtime.ReadMemStats(&after)
		require.NoError(t, err, tt.name)
		allocated := int(after.TotalAlloc - before.TotalAlloc)
		t.Logf("%s: %d bytes allocated, %d reckoned", tt.name, allocated, bound)
		require.LessOrEqual(t, allocated, bound, tt.name)
		require.Less(t, bound-allocated, fixedProcessBytes, "reckoned far above what it takes: %s", tt.name)
	}
}

// jpegFrame is a JPEG's SOI, frame header (SOF0, or SOF2 when
// progressive) for components with the sampling factors hv (0x22 is 2x2),
// and the marker of the first scan, where DecodeConfig stops.
func jpegFrame(progressive bool, w, h int, ids string, hv ...byte) []byte {
	sof := []byte{8, byte(h >> 8), byte(h), byte(w >> 8), byte(w), byte(len(hv))}
	for i, f := range hv {
		sof = append(sof, ids[i], f, 0)
	}
	marker := byte(0xc0)
	if progressive {
		marker = 0xc2
	}
	return withJPEGSegment([]byte{0xff, 0xd8, 0xff, 0xda, 0, 2}, marker, sof)
}

func TestDecodeBytesByFormat(t *testing.T) {
	t.Parallel()
	adobeRGB := func(j []byte) []byte { return withJPEGSegment(j, 0xee, []byte("Adobe\x00\x64\x00\x00\x00\x00\x00")) }
	webpSample, err := os.ReadFile("testdata/sample.webp")
	require.NoError(t, err)
	// DecodeConfig reads a paletted PNG up to its data.
	paletted := bytes.NewBuffer(pngHeaderOf(1000, 1000, 8, 3, 0))
	writePNGChunk(paletted, "PLTE", []byte{0, 0, 0})
	writePNGChunk(paletted, "IDAT", nil)
	tests := []struct {
		name string
		f    format
		in   []byte
		want int
	}{
		// 4:2:0: 16x16 MCUs of 6 blocks, 64 bytes each; 1001 pixels is 63 MCUs.
		{"jpeg 4:2:0", jpegFormat, jpegFrame(false, 1001, 1001, "\x01\x02\x03", 0x22, 0x11, 0x11), 64 * 6 * 63 * 63},
		{"jpeg 4:2:0, progressive", jpegFormat, jpegFrame(true, 1001, 1001, "\x01\x02\x03", 0x22, 0x11, 0x11), (64 + 256) * 6 * 63 * 63},
		{"jpeg grey, sampling ignored", jpegFormat, jpegFrame(false, 1001, 1001, "\x01", 0x22), 64 * 126 * 126},
		{"jpeg RGB by its ids", jpegFormat, jpegFrame(false, 1000, 1000, "RGB", 0x11, 0x11, 0x11), 3*1000*1000 + 4*1000*1000},
		{"jpeg RGB by Adobe's transform", jpegFormat, adobeRGB(jpegFrame(false, 1000, 1000, "\x01\x02\x03", 0x11, 0x11, 0x11)), 3*1000*1000 + 4*1000*1000},
		{"jpeg, issue 35's progressive CMYK", jpegFormat, bombs()["progressive CMYK JPEG"], (4 + 16 + 8) * 4000 * 4000},
		{"webp lossless, 48x32", webpFormat, webpSample, 7 * 51 * 35},
		// Its 10 bytes of data, then macroblocks of 16x16.
		{"webp lossy", webpFormat, webpLossy(1001, 1001, false), 10 + 388*63*63},
		{"webp lossy, compressed alpha", webpFormat, webpLossy(1001, 1001, true), 5*1001*1001 + 7*1004*1004 + 10 + 388*63*63},
		{"png 8-bit RGBA", pngFormat, pngHeaderOf(1000, 1000, 8, 6, 0), 4 * 1000 * 1000},
		{"png 16-bit grey", pngFormat, pngHeaderOf(1000, 1000, 16, 0, 0), 2 * 1000 * 1000},
		{"png 16-bit grey, a transparent colour", pngFormat, withPNGChunk(pngHeaderOf(1000, 1000, 16, 0, 0), "tRNS", []byte{0, 0}), 8 * 1000 * 1000},
		{"png 1-bit grey", pngFormat, pngHeaderOf(1000, 1000, 1, 0, 0), 1000 * 1000},
		{"png paletted", pngFormat, paletted.Bytes(), 1000 * 1000},
		// The passes of 9x9: 2x2, 1x2, 3x1, 2x3, 5x2, 4x5, 9x4 pixels.
		{"png interlaced", pngFormat, pngHeaderOf(9, 9, 8, 6, 1), 4 * (81 + 4 + 2 + 3 + 6 + 10 + 20 + 36)},
		{"png, issue 35's interlaced 16-bit", pngFormat, bombs()["interlaced 16-bit PNG"], 2 * 8 * 4000 * 4000},
	}
	for _, tt := range tests {
		cfg, err := tt.f.decodeConfig(bytes.NewReader(tt.in))
		require.NoError(t, err, tt.name)
		got, err := tt.f.decodeBytes(tt.in, cfg)
		require.NoError(t, err, tt.name)
		require.Equal(t, tt.want, got, tt.name)
	}
}

// webpLossy is a WebP file with a lossy key frame's header and no data,
// after an extended header and a compressed alpha channel's first byte if
// alpha.
func webpLossy(w, h int, alpha bool) []byte {
	var chunks []byte
	chunk := func(typ string, data []byte) {
		chunks = append(chunks, typ...)
		chunks = binary.LittleEndian.AppendUint32(chunks, uint32(len(data)))
		chunks = append(chunks, data...)
		if len(data)%2 == 1 {
			chunks = append(chunks, 0)
		}
	}
	if alpha {
		chunk("VP8X", []byte{0x10, 0, 0, 0, byte(w - 1), byte((w - 1) >> 8), 0, byte(h - 1), byte((h - 1) >> 8), 0})
		chunk("ALPH", []byte{1}) // compressed (lossless)
	}
	// A shown key frame, its start code, and its size.
	chunk("VP8 ", []byte{0x10, 0, 0, 0x9d, 0x01, 0x2a, byte(w), byte(w >> 8), byte(h), byte(h >> 8)})
	out := binary.LittleEndian.AppendUint32([]byte("RIFF"), uint32(4+len(chunks)))
	return append(append(out, "WEBP"...), chunks...)
}

// pngHeaderOf is a PNG signature and an IHDR chunk, and nothing else.
func pngHeaderOf(w, h uint32, depth, colorType, interlace byte) []byte {
	var b bytes.Buffer
	b.WriteString("\x89PNG\r\n\x1a\n")
	ihdr := binary.BigEndian.AppendUint32(nil, w)
	ihdr = binary.BigEndian.AppendUint32(ihdr, h)
	writePNGChunk(&b, "IHDR", append(ihdr, depth, colorType, 0, 0, interlace))
	return b.Bytes()
}

// withPNGChunk inserts a chunk after a PNG's IHDR.
func withPNGChunk(p []byte, typ string, data []byte) []byte {
	var b bytes.Buffer
	b.Write(p[:33]) // signature and IHDR
	writePNGChunk(&b, typ, data)
	b.Write(p[33:])
	return b.Bytes()
}

// withJPEGSegment inserts a segment after a JPEG's SOI marker.
func withJPEGSegment(j []byte, marker byte, data []byte) []byte {
	out := append([]byte{0xff, 0xd8, 0xff, marker}, byte((len(data)+2)>>8), byte(len(data)+2))
	out = append(out, data...)
	return append(out, j[2:]...)
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
	require.NoError(t, jpeg.Encode(&b, img, &jpeg.Options{Quality: 90}))
	return b.Bytes()
}
