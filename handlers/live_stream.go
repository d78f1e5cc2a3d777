package handlers

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/a-h/templ"
	"github.com/labstack/echo/v4"

	"github.com/kubebyon/kubebyon/views"
)

const (
	// defaultStreamLifetime is how long a live page's stream lasts when
	// Deps does not say (StreamLifetime); the browser then connects again,
	// to whichever replica, and the stream takes up where it was.
	defaultStreamLifetime = 10 * time.Minute
	// streamHeartbeat is how often an idle stream says it is alive, before
	// proxies give up on a quiet connection.
	streamHeartbeat = 15 * time.Second
	// streamRetry is how long the browser waits before it connects again
	// after the stream ended (the SSE retry field, in milliseconds).
	streamRetry = 2000
)

// liveMessage is one message of a live page's stream: the fragment to
// swap, its id (where a new connection takes up: Last-Event-ID) and
// whether the page is settled, which ends the stream.
type liveMessage struct {
	html []byte
	id   string
	done bool
}

// streamLive serves a live page's updates of cluster id as server-sent
// events (event "update"), each made by next: one at once, then one each
// time the database says the cluster changed (internal/livefeed), until
// next says done, the client leaves, the stream has lasted its lifetime
// or the feed stops listening. The first message is made before anything is written: a
// cluster the user may not read is refused as the poller's fragment is.
// While this process does not listen to the database, the stream is
// refused (503) and the page keeps polling.
func (h *Handlers) streamLive(c echo.Context, clusterID int64, next func() (liveMessage, error)) error {
	if h.Live == nil || !h.Live.Listening() {
		return echo.NewHTTPError(http.StatusServiceUnavailable)
	}
	// Subscribed before the first message: a change made while it is
	// made wakes the stream again.
	changed, unsubscribe := h.Live.Subscribe(clusterID)
	defer unsubscribe()
	msg, err := next()
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(c.Request().Context(), h.StreamLifetime)
	defer cancel()
	res := c.Response()
	res.Header().Set(echo.HeaderContentType, "text/event-stream")
	res.Header().Set("Cache-Control", "no-store")
	// No proxy may hold a message back (nor the compressor, which
	// passes the streams by: compress).
	res.Header().Set("X-Accel-Buffering", "no")
	res.WriteHeader(http.StatusOK)
	if _, err := fmt.Fprintf(res, "retry: %d\n\n", streamRetry); err != nil {
		return nil
	}
	heartbeat := time.NewTicker(streamHeartbeat)
	defer heartbeat.Stop()
	var sent []byte
	for {
		// A change the page does not show (a column it does not read)
		// sends nothing.
		if !bytes.Equal(msg.html, sent) || msg.done {
			if err := writeLiveMessage(res, msg); err != nil || msg.done {
				// A client gone is no error of the server's.
				return nil
			}
			sent = msg.html
		}
		select {
		case <-ctx.Done():
			return nil
		case <-heartbeat.C:
			if _, err := res.Write([]byte(": alive\n\n")); err != nil {
				return nil
			}
			res.Flush()
			continue
		case <-changed:
		}
		if !h.Live.Listening() {
			// The feed lost the database, or the process is stopping
			// (serve's shutdown waits for no stream): the page polls, and
			// its stream comes back, to whichever replica listens.
			return nil
		}
		if msg, err = next(); err != nil {
			if ctx.Err() != nil {
				return nil
			}
			// The headers are sent: the error can only be logged, and
			// the stream ended; the page polls meanwhile.
			h.Logger.WarnContext(ctx, "live stream ended", "cluster_id", clusterID, "error", err)
			return nil
		}
	}
}

// writeLiveMessage writes msg as an SSE event "update", a data line for
// each of its lines, and sends it at once.
func writeLiveMessage(res *echo.Response, msg liveMessage) error {
	var b strings.Builder
	b.WriteString("event: update\n")
	if msg.id != "" {
		b.WriteString("id: " + msg.id + "\n")
	}
	for line := range strings.SplitSeq(strings.TrimRight(string(msg.html), "\n"), "\n") {
		b.WriteString("data: ")
		b.WriteString(strings.TrimSuffix(line, "\r"))
		b.WriteString("\n")
	}
	b.WriteString("\n")
	if _, err := res.Write([]byte(b.String())); err != nil {
		return err
	}
	res.Flush()
	return nil
}

// isLiveStream reports whether the request is for a live page's stream,
// which outlasts the request timeout (Deps.StreamLifetime bounds it) and
// is not compressed: its messages are small, and each must go at once.
func isLiveStream(c echo.Context) bool {
	return c.Request().Method == http.MethodGet && strings.HasSuffix(c.Request().URL.Path, "/stream")
}

// renderHTML renders a fragment as render does, into memory.
func renderHTML(ctx context.Context, comp templ.Component) ([]byte, error) {
	var buf bytes.Buffer
	if err := comp.Render(viewContext(ctx), &buf); err != nil {
		return nil, fmt.Errorf("render: %w", err)
	}
	return buf.Bytes(), nil
}

// lastEventID is where a stream takes up: the browser's Last-Event-ID when
// it connects again, else the page's ?after=.
func lastEventID(c echo.Context) int64 {
	if id, err := strconv.ParseInt(c.Request().Header.Get("Last-Event-ID"), 10, 64); err == nil && id > 0 {
		return id
	}
	return queryID(c, "after")
}

// streamClusterUpdates is GET /clusters/:id/stream: the live cluster
// page's updates (ClusterUpdatesFragment) as they happen, from the event
// after the last the page has.
func (h *Handlers) streamClusterUpdates(c echo.Context) error {
	who, err := h.acting(c)
	if err != nil {
		return err
	}
	id, err := clusterIDParam(c)
	if err != nil {
		return err
	}
	after := lastEventID(c)
	return h.streamLive(c, id, func() (liveMessage, error) {
		m, err := h.clusterUpdates(c, who, id, after)
		if err != nil {
			return liveMessage{}, err
		}
		html, err := renderHTML(c.Request().Context(), views.ClusterUpdatesFragment(m))
		if err != nil {
			return liveMessage{}, err
		}
		after = m.After
		return liveMessage{html: html, id: strconv.FormatInt(after, 10), done: m.Done}, nil
	})
}
