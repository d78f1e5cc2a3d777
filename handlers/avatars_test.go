package handlers_test

import (
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"image/color"
	"image/png"
	"net/http"
	"net/url"
	"regexp"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/kubebyon/kubebyon/handlers/handlerstest"
)

// bombPNG is a valid PNG header announcing 100000 x 100000 pixels.
func bombPNG() []byte { return pngHeader(100_000, 100_000, 8, 6, 0) }

// pngHeader is a PNG signature and an IHDR chunk announcing w x h pixels of
// the bit depth and colour type (6: RGBA), interlaced (Adam7) if interlace
// is 1, and nothing else.
func pngHeader(w, h uint32, depth, colorType, interlace byte) []byte {
	var ihdr bytes.Buffer
	ihdr.WriteString("IHDR")
	_ = binary.Write(&ihdr, binary.BigEndian, [2]uint32{w, h})
	ihdr.Write([]byte{depth, colorType, 0, 0, interlace})
	var b bytes.Buffer
	b.WriteString("\x89PNG\r\n\x1a\n")
	_ = binary.Write(&b, binary.BigEndian, uint32(13))
	b.Write(ihdr.Bytes())
	_ = binary.Write(&b, binary.BigEndian, crc32.ChecksumIEEE(ihdr.Bytes()))
	return b.Bytes()
}

// progressiveCMYKHeader is the headers of a progressive CMYK JPEG of w x h
// pixels, up to its first scan, where image/jpeg starts allocating.
func progressiveCMYKHeader(w, h int) []byte {
	b := []byte("\xff\xd8\xff\xee\x00\x0eAdobe\x00\x64\x00\x00\x00\x00\x00")         // SOI, APP14: CMYK
	b = append(b, 0xff, 0xc2, 0, 20, 8, byte(h>>8), byte(h), byte(w>>8), byte(w), 4) // SOF2: progressive
	for id := byte(1); id <= 4; id++ {
		b = append(b, id, 0x11, 0)
	}
	return append(b, 0xff, 0xda, 0, 2) // SOS
}

var avatarSrc = regexp.MustCompile(`src="(/avatars/\d+\?v=[0-9a-f]+)"`)

func TestAvatarUploadAndServe(t *testing.T) {
	t.Parallel()
	b := handlerstest.Setup(t)
	c, email := b.SignedUpUser(t, "owner")
	id := b.UserID(t, email)
	resp := c.Post(handlerstest.ProfilePage, handlerstest.ProfilePage, url.Values{"name": {"Pic Owner"}})
	require.Equal(t, http.StatusSeeOther, resp.StatusCode)
	own := fmt.Sprintf("/avatars/%d", id)

	// Before any upload: the initials, as a locked-down SVG.
	resp, body := c.Fetch(own, nil)
	require.Equal(t, http.StatusOK, resp.StatusCode)
	require.Equal(t, "image/svg+xml", resp.Header.Get("Content-Type"))
	require.Equal(t, "default-src 'none'; frame-ancestors 'none'; sandbox", resp.Header.Get("Content-Security-Policy"))
	require.Equal(t, "nosniff", resp.Header.Get("X-Content-Type-Options"))
	require.Contains(t, string(body), ">PO</text>")
	_, page := c.Get(handlerstest.ProfilePage)
	require.NotContains(t, page, `data-testid="avatar-remove"`)

	resp = c.Upload(handlerstest.ProfilePage, "/settings/avatar", "avatar", "me.png", handlerstest.SolidPNG(t, 400, 300, color.NRGBA{0, 128, 0, 255}))
	require.Equal(t, http.StatusSeeOther, resp.StatusCode, handlerstest.ReadBody(t, resp))
	require.Contains(t, b.Audits(t, id), "user.update_avatar")

	_, page = c.Get(handlerstest.ProfilePage)
	require.Contains(t, page, `data-testid="avatar-remove"`)
	src := avatarSrc.FindStringSubmatch(page)
	require.NotNil(t, src, "the page shows the avatar with its version")
	resp, body = c.Fetch(src[1], nil)
	require.Equal(t, http.StatusOK, resp.StatusCode)
	require.Equal(t, "image/png", resp.Header.Get("Content-Type"))
	require.Equal(t, "private, max-age=3600", resp.Header.Get("Cache-Control"))
	etag := resp.Header.Get("ETag")
	require.Regexp(t, `^"[0-9a-f]{32}"$`, etag)
	cfg, err := png.DecodeConfig(bytes.NewReader(body))
	require.NoError(t, err)
	require.Equal(t, [2]int{256, 256}, [2]int{cfg.Width, cfg.Height})

	for _, inm := range []string{etag, "W/" + etag, `"other", ` + etag, "*"} {
		resp, body = c.Fetch(own, http.Header{"If-None-Match": {inm}})
		require.Equal(t, http.StatusNotModified, resp.StatusCode, inm)
		require.Empty(t, body)
		require.Equal(t, etag, resp.Header.Get("ETag"))
	}
	resp, _ = c.Fetch(own, http.Header{"If-None-Match": {`"stale"`}})
	require.Equal(t, http.StatusOK, resp.StatusCode)

	// Only its owner and admins see it.
	stranger, _ := b.SignedUpUser(t, "stranger")
	resp, _ = stranger.Fetch(own, nil)
	require.Equal(t, http.StatusNotFound, resp.StatusCode)
	resp, _ = b.Client(t).Fetch(own, nil)
	require.Equal(t, http.StatusNotFound, resp.StatusCode)
	admin, adminEmail := b.SignedUpUser(t, "admin")
	_, err = b.Pool.Exec(context.Background(), "UPDATE users SET role = 'admin' WHERE lower(email) = lower($1)", adminEmail)
	require.NoError(t, err)
	resp, _ = admin.Fetch(own, nil)
	require.Equal(t, http.StatusOK, resp.StatusCode)
	resp, _ = admin.Fetch("/avatars/999999", nil)
	require.Equal(t, http.StatusNotFound, resp.StatusCode)

	resp = c.Post(handlerstest.ProfilePage, "/settings/avatar/remove", nil)
	require.Equal(t, http.StatusSeeOther, resp.StatusCode)
	resp, _ = c.Fetch(own, http.Header{"If-None-Match": {etag}})
	require.Equal(t, http.StatusOK, resp.StatusCode, "the old picture's ETag no longer matches")
	require.Equal(t, "image/svg+xml", resp.Header.Get("Content-Type"))
	require.Contains(t, b.Audits(t, id), "user.remove_avatar")
}

func TestAvatarBadUploads(t *testing.T) {
	t.Parallel()
	b := handlerstest.Setup(t)
	c, email := b.SignedUpUser(t, "uploader")
	good := handlerstest.SolidPNG(t, 64, 64, color.NRGBA{200, 0, 0, 255})
	overTwoMB := append(append([]byte{}, good...), make([]byte, 2<<20)...)

	tests := []struct {
		name, filename string
		data           []byte
		msg            string
	}{
		{"text file named .png", "notes.png", []byte("just some notes, not a picture\n"), "Upload a PNG, JPEG or WebP picture."},
		{"svg", "logo.svg", []byte(`<svg xmlns="http://www.w3.org/2000/svg"/>`), "Upload a PNG, JPEG or WebP picture."},
		{"truncated", "cut.png", good[:len(good)-20], "The picture could not be read"},
		{"decompression bomb", "bomb.png", bombPNG(), "The picture has too many pixels"},
		{"16-bit RGBA, 320 MB decoded", "deep.png", pngHeader(8000, 5000, 16, 6, 0), "The picture takes too much memory to unpack"},
		// Issue 35: within the pixel limits, but 448 and 256 MB to decode.
		{"progressive CMYK", "cmyk.jpg", progressiveCMYKHeader(4000, 4000), "The picture takes too much memory to unpack"},
		{"interlaced 16-bit", "adam7.png", pngHeader(4000, 4000, 16, 6, 1), "The picture takes too much memory to unpack"},
		{"over 2 MB", "big.png", overTwoMB, "The picture is larger than 2 MB."},
		{"no file", "", nil, "Choose a picture to upload."},
	}
	for _, tt := range tests {
		field := "avatar"
		if tt.filename == "" {
			field = ""
		}
		resp := c.Upload(handlerstest.ProfilePage, "/settings/avatar", field, tt.filename, tt.data)
		require.Equal(t, http.StatusUnprocessableEntity, resp.StatusCode, tt.name)
		require.Contains(t, handlerstest.ReadBody(t, resp), `data-testid="error-avatar">`+tt.msg, tt.name)
	}

	// A body over the upload limit is refused before it is read.
	resp := c.Upload(handlerstest.ProfilePage, "/settings/avatar", "avatar", "huge.png", make([]byte, 3<<20))
	require.Equal(t, http.StatusRequestEntityTooLarge, resp.StatusCode)
	// Other routes keep the 1 MB limit.
	resp = c.Upload(handlerstest.ProfilePage, "/settings/profile", "avatar", "a.png", overTwoMB[:3<<19])
	require.Equal(t, http.StatusRequestEntityTooLarge, resp.StatusCode)

	var n int
	require.NoError(t, b.Pool.QueryRow(context.Background(), "SELECT count(*) FROM user_avatars").Scan(&n))
	require.Zero(t, n)
	require.NotContains(t, b.Audits(t, b.UserID(t, email)), "user.update_avatar")
}
