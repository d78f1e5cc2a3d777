package handlers

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"

	"github.com/labstack/echo/v4"

	"github.com/kubebyon/kubebyon/internal/accounts"
	"github.com/kubebyon/kubebyon/internal/adminauth"
	"github.com/kubebyon/kubebyon/internal/avatars"
	"github.com/kubebyon/kubebyon/queries"
	"github.com/kubebyon/kubebyon/views"
)

// The avatar upload takes a larger body than other requests: a 2 MB file
// and the multipart envelope around it.
const (
	avatarUploadRoute = "/avatar"
	avatarBodyLimit   = "2560K"
)

// avatarCacheControl lets the browser keep an avatar for an hour. Pages
// link to it with its ETag in the query (avatarURL), so a new picture shows
// at once; the response is private because only some users may see it.
const avatarCacheControl = "private, max-age=3600"

// avatarCSP forbids everything to an avatar opened as a document: the
// generated SVG must not run script or load anything even if its text were
// ever crafted.
const avatarCSP = "default-src 'none'; frame-ancestors 'none'; sandbox"

// isAvatarUpload reports whether the request is the avatar upload, the
// console's or the API's, whose body limit is avatarBodyLimit instead of
// bodyLimit.
func isAvatarUpload(c echo.Context) bool {
	return c.Path() == "/settings"+avatarUploadRoute || (c.Path() == apiAvatarPath && c.Request().Method == http.MethodPut)
}

func (h *Handlers) uploadAvatar(c echo.Context) error {
	u, _ := currentUser(c)
	f := views.NewForm()
	page, err := h.profilePage(c, u, avatarSlot)
	if err != nil {
		return err
	}
	if done, err := h.limit(c, avatarUploadPerUser, userKey(u), &f, page); done {
		return err
	}
	data, msgID, err := readUpload(c, "avatar", avatars.MaxBytes)
	if err != nil {
		return err
	}
	if msgID != "" {
		f.Errors["avatar"] = msgID
		return render(c, http.StatusUnprocessableEntity, page(f))
	}
	if err := h.Accounts.SetAvatar(c.Request().Context(), u.ID, data, actor(c)); err != nil {
		return profileFailed(c, page, f, err)
	}
	h.flash(c, "FlashAvatarSaved")
	return redirect(c, "/settings/profile")
}

// readUpload reads a multipart file field of at most limit bytes. A
// missing or oversized file is a message ID for the form, not an error.
func readUpload(c echo.Context, field string, limit int64) ([]byte, string, error) {
	fh, err := c.FormFile(field)
	if err != nil {
		return nil, "ErrAvatarMissing", nil
	}
	if fh.Size > limit {
		return nil, avatars.ErrTooLarge.Error(), nil
	}
	file, err := fh.Open()
	if err != nil {
		return nil, "", fmt.Errorf("open upload: %w", err)
	}
	defer file.Close()
	data, err := io.ReadAll(io.LimitReader(file, limit+1))
	if err != nil {
		return nil, "", fmt.Errorf("read upload: %w", err)
	}
	if int64(len(data)) > limit {
		return nil, avatars.ErrTooLarge.Error(), nil
	}
	return data, "", nil
}

func (h *Handlers) removeAvatar(c echo.Context) error {
	u, _ := currentUser(c)
	if err := h.Accounts.RemoveAvatar(c.Request().Context(), u.ID, actor(c)); err != nil {
		return err
	}
	h.flash(c, "FlashAvatarRemoved")
	return redirect(c, "/settings/profile")
}

// avatarURL is where u's avatar is, with its version so that a changed
// picture is fetched again; has tells whether it was uploaded.
func (h *Handlers) avatarURL(ctx context.Context, u queries.User) (url string, has bool, err error) {
	etag, has, err := h.Accounts.AvatarETag(ctx, u)
	if err != nil {
		return "", false, err
	}
	return fmt.Sprintf("/avatars/%d?v=%s", u.ID, etag), has, nil
}

// showAvatar serves a user's picture, or their generated initials. Users
// see their own; admins see anyone's (the admin pages list users). Anyone
// else gets 404, which does not tell whether the user exists.
func (h *Handlers) showAvatar(c echo.Context) error {
	viewer, ok := currentUser(c)
	id, err := strconv.ParseInt(c.Param("id"), 10, 64)
	if !ok || err != nil || (id != viewer.ID && viewer.Role != adminauth.RoleAdmin) {
		return echo.ErrNotFound
	}
	a, err := h.Accounts.Avatar(c.Request().Context(), id)
	if errors.Is(err, accounts.ErrUserNotFound) {
		return echo.ErrNotFound
	}
	if err != nil {
		return err
	}
	hdr := c.Response().Header()
	hdr.Set("ETag", `"`+a.ETag+`"`)
	hdr.Set("Cache-Control", avatarCacheControl)
	hdr.Set("Content-Security-Policy", avatarCSP)
	if etagMatches(c.Request().Header.Get("If-None-Match"), a.ETag) {
		return c.NoContent(http.StatusNotModified)
	}
	return c.Blob(http.StatusOK, a.ContentType, a.Body)
}

// etagMatches reports whether an If-None-Match header names etag (weak
// comparison, as RFC 9110 asks for If-None-Match).
func etagMatches(header, etag string) bool {
	for _, candidate := range strings.Split(header, ",") {
		candidate = strings.TrimPrefix(strings.TrimSpace(candidate), "W/")
		if candidate == "*" || candidate == `"`+etag+`"` {
			return true
		}
	}
	return false
}
