package handlers

import (
	"bytes"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/klauspost/compress/gzhttp"
	"github.com/klauspost/compress/gzip"
	"github.com/labstack/echo/v4"

	"github.com/kubebyon/kubebyon/static"
)

// Cache lifetimes of the static files: a hashed name (what the pages
// link) never changes content, so browsers keep it a year without asking
// again; a plain name (links from before a release, /favicon.ico) an hour,
// then asks with its ETag.
const (
	cacheHashed = "public, max-age=31536000, immutable"
	cachePlain  = "public, max-age=3600"
)

// serveStatic answers /static/<name>, by hashed or plain name; a name
// with another hash than the file's is 404.
func serveStatic(files *static.Files) echo.HandlerFunc {
	return func(c echo.Context) error {
		f, hashed := files.Lookup(c.Param("*"))
		if f == nil {
			return echo.ErrNotFound
		}
		cache := cachePlain
		if hashed {
			cache = cacheHashed
		}
		sendFile(c, f, cache)
		return nil
	}
}

// serveFavicon answers browsers that ask for /favicon.ico without reading
// the page's icon link (and feed readers, bookmarks): the SVG icon.
func serveFavicon(files *static.Files) echo.HandlerFunc {
	return func(c echo.Context) error {
		f, _ := files.Lookup("favicon.svg")
		sendFile(c, f, cachePlain)
		return nil
	}
}

// sendFile writes an embedded file with its content hash as ETag (a 304
// when the browser already has it), gzip-compressed when the file has a
// compressed copy and the client takes gzip. The compressed copy is
// another representation, hence its own ETag.
func sendFile(c echo.Context, f *static.File, cacheControl string) {
	h := c.Response().Header()
	h.Set(echo.HeaderCacheControl, cacheControl)
	h.Set(echo.HeaderContentType, f.ContentType)
	body, etag := f.Body, `"`+f.Hash+`"`
	if f.Gzip != nil {
		h.Add(echo.HeaderVary, echo.HeaderAcceptEncoding)
		if acceptsGzip(c.Request()) {
			body, etag = f.Gzip, `"`+f.Hash+`-gzip"`
			h.Set(echo.HeaderContentEncoding, "gzip")
		}
	}
	h.Set("ETag", etag)
	http.ServeContent(c.Response(), c.Request(), "", time.Time{}, bytes.NewReader(body))
}

// acceptsGzip reports whether the request's Accept-Encoding takes gzip:
// named (or "*") with a q-value above 0. No header means no compression:
// curl without --compressed sends none, and would pipe gzip into sh.
func acceptsGzip(r *http.Request) bool {
	gzipQ, anyQ := -1.0, -1.0
	for _, v := range r.Header.Values(echo.HeaderAcceptEncoding) {
		for part := range strings.SplitSeq(v, ",") {
			coding, params, _ := strings.Cut(part, ";")
			q := 1.0
			for p := range strings.SplitSeq(params, ";") {
				if k, val, ok := strings.Cut(strings.TrimSpace(p), "="); ok && strings.EqualFold(k, "q") {
					if parsed, err := strconv.ParseFloat(val, 64); err == nil {
						q = parsed
					} else {
						q = 0
					}
				}
			}
			switch coding = strings.TrimSpace(coding); {
			case strings.EqualFold(coding, "gzip"), strings.EqualFold(coding, "x-gzip"):
				gzipQ = max(gzipQ, q)
			case coding == "*":
				anyQ = max(anyQ, q)
			}
		}
	}
	if gzipQ >= 0 {
		return gzipQ > 0
	}
	return anyQ > 0
}

// compressMinSize is the smallest response worth compressing.
const compressMinSize = 1024

// compress gzips the other responses (pages, htmx fragments, the API, the
// join script) of 1 KB or more whose type is text, for clients that take
// gzip. A client that does not ask gets them plain: curl without
// --compressed, which pipes the join script into sh. Static files are
// compressed once, ahead (sendFile), and pass by. Since pages carry the
// CSRF token next to what users typed, compressed responses get a few
// bytes of content-dependent padding against BREACH-style guessing from
// their length.
func compress() echo.MiddlewareFunc {
	wrap, err := gzhttp.NewWrapper(
		gzhttp.MinSize(compressMinSize),
		// Pages are made per request and written in one piece (renderTo),
		// most of them a few KB. Stateless compression encodes each write
		// on its own, with no window kept between writes and no encoder
		// state to reset: for such pages it takes about a third less CPU
		// than the fastest stateful level (BestSpeed, itself about 40% less
		// than the default) for the same size within 1%.
		gzhttp.CompressionLevel(gzip.StatelessCompression),
		gzhttp.EnableZstd(false),
		gzhttp.ContentTypeFilter(compressibleType),
		gzhttp.RandomJitter(32, 0, false),
	)
	if err != nil {
		// Only invalid options make it fail.
		panic(err)
	}
	return func(next echo.HandlerFunc) echo.HandlerFunc {
		return func(c echo.Context) error {
			if isStatic(c) || isLiveStream(c) {
				return next(c)
			}
			res := c.Response()
			var err error
			wrap(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				// Echo's response keeps its status and hooks; only what
				// it writes to goes through the compressor, until the
				// handler returns and the compressor is closed.
				plain := res.Writer
				res.Writer = &sizedFlush{ResponseWriter: w}
				defer func() { res.Writer = plain }()
				c.SetRequest(r)
				err = next(c)
			})).ServeHTTP(res.Writer, c.Request())
			return err
		}
	}
}

// sizedFlush passes a flush on to the compressor only once the response
// has compressMinSize bytes: templ flushes at the end of every render, and
// a flush makes the compressor start before it knows the size, which
// would compress tiny fragments. A handler that streams sets the
// gzhttp.HeaderNoCompression header: its flushes pass at once,
// uncompressed. (The live pages' streams do not pass here: isLiveStream.)
type sizedFlush struct {
	http.ResponseWriter
	written int
}

func (w *sizedFlush) Write(b []byte) (int, error) {
	n, err := w.ResponseWriter.Write(b)
	w.written += n
	return n, err
}

func (w *sizedFlush) Flush() {
	if w.written >= compressMinSize || w.Header().Get(gzhttp.HeaderNoCompression) != "" {
		_ = http.NewResponseController(w.ResponseWriter).Flush()
	}
}

func (w *sizedFlush) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// compressibleType reports whether responses of a content type shrink
// with gzip: text, JSON, JavaScript, SVG; not images, which are
// compressed already. Only the media type counts, not its parameters
// (read without mime.ParseMediaType, which builds a map of them for every
// response).
func compressibleType(contentType string) bool {
	mt, _, _ := strings.Cut(contentType, ";")
	mt = strings.ToLower(strings.TrimSpace(mt))
	return (strings.HasPrefix(mt, "text/") && len(mt) > len("text/")) || mt == "application/json" || mt == "application/javascript" || mt == "image/svg+xml"
}

// isStatic reports whether the request is for a static file or the icon.
func isStatic(c echo.Context) bool {
	p := c.Request().URL.Path
	return strings.HasPrefix(p, "/static/") || p == "/favicon.ico"
}
