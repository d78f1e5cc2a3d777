package handlers

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/a-h/templ"
	"github.com/jackc/pgx/v5/pgtype"
	"github.com/labstack/echo/v4"

	"github.com/kubebyon/kubebyon/internal/locale"
	"github.com/kubebyon/kubebyon/views"
)

// The helpers every area's handlers share: answering with HTML, reading
// forms and path parameters.

// render writes a component with the given status.
func render(c echo.Context, status int, comp templ.Component) error {
	return renderTo(c.Request().Context(), c.Response(), status, comp)
}

// renderTo renders a component into a buffer, then writes it with its
// Content-Length in one write: templates write in small pieces, each of
// which would otherwise go to the connection (or the compressor) on its
// own. A component that fails writes nothing, so the error page can
// still be written in its place.
func renderTo(ctx context.Context, w http.ResponseWriter, status int, comp templ.Component) error {
	buf := renderBuffers.Get().(*bytes.Buffer)
	defer putRenderBuffer(buf)
	if err := comp.Render(viewContext(ctx), buf); err != nil {
		return fmt.Errorf("render: %w", err)
	}
	w.Header().Set(echo.HeaderContentType, echo.MIMETextHTMLCharsetUTF8)
	w.Header().Set(echo.HeaderContentLength, strconv.Itoa(buf.Len()))
	w.WriteHeader(status)
	if _, err := w.Write(buf.Bytes()); err != nil {
		return fmt.Errorf("write response: %w", err)
	}
	return nil
}

// viewContext is ctx for rendering views: they look the language and the
// page up in the context for every string they show, so both go on top of
// the request's dozen layers.
func viewContext(ctx context.Context) context.Context {
	return locale.With(views.WithPage(ctx, views.PageOf(ctx)), locale.From(ctx))
}

// renderBuffers holds the buffers pages are rendered into, for reuse: a
// pool of empty buffers, no state.
var renderBuffers = sync.Pool{New: func() any { return new(bytes.Buffer) }}

// maxPooledBuffer is the largest buffer kept for reuse: an unusually large
// page's buffer is left to the garbage collector.
const maxPooledBuffer = 1 << 20

func putRenderBuffer(buf *bytes.Buffer) {
	if buf.Cap() > maxPooledBuffer {
		return
	}
	buf.Reset()
	renderBuffers.Put(buf)
}

// wantsFragment reports whether htmx asks for part of a page. A history
// restore (the page was not in htmx's cache) needs the whole page.
func wantsFragment(c echo.Context) bool {
	r := c.Request()
	return r.Header.Get("HX-Request") == "true" && r.Header.Get("HX-History-Restore-Request") != "true"
}

// renderPageOrFragment renders the fragment for htmx, the page otherwise.
// Caches must keep the two apart, as they share a URL.
func renderPageOrFragment(c echo.Context, page, fragment templ.Component) error {
	c.Response().Header().Add("Vary", "HX-Request")
	if wantsFragment(c) {
		return render(c, http.StatusOK, fragment)
	}
	return render(c, http.StatusOK, page)
}

// queryID reads a keyset cursor; a missing or malformed one is the start.
func queryID(c echo.Context, name string) int64 {
	id, err := strconv.ParseInt(c.QueryParam(name), 10, 64)
	if err != nil || id < 0 {
		return 0
	}
	return id
}

// formFrom copies the named form fields.
func formFrom(c echo.Context, names ...string) views.Form {
	f := views.NewForm()
	for _, n := range names {
		f.Values[n] = c.FormValue(n)
	}
	return f
}

// clusterIDParam is the :id of the path; a malformed one is not found.
func clusterIDParam(c echo.Context) (int64, error) { return pathID(c, "id", errClusterNotFound) }

// pathID is the path's id parameter name; a malformed one is notFound.
func pathID(c echo.Context, name string, notFound error) (int64, error) {
	id, err := strconv.ParseInt(c.Param(name), 10, 64)
	if err != nil {
		return 0, notFound
	}
	return id, nil
}

// timeOf is a nullable time; NULL is the zero time.
func timeOf(t pgtype.Timestamptz) time.Time {
	if !t.Valid {
		return time.Time{}
	}
	return t.Time
}

// optionalTime is a nullable time as the API shows it: in UTC, NULL is
// null.
func optionalTime(t pgtype.Timestamptz) *time.Time {
	if !t.Valid {
		return nil
	}
	u := t.Time.UTC()
	return &u
}
