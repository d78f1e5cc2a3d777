package handlers_test

import (
	"bufio"
	"context"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/kubebyon/kubebyon/handlers"
	"github.com/kubebyon/kubebyon/handlers/handlerstest"
	"github.com/kubebyon/kubebyon/internal/clusters"
	"github.com/kubebyon/kubebyon/internal/livefeed"
	"github.com/kubebyon/kubebyon/queries"
)

// sseMessage is one event of a text/event-stream: its name, id and data.
type sseMessage struct{ event, id, data string }

// readSSE sends the messages of a stream to a channel, until it ends.
func readSSE(resp *http.Response) <-chan sseMessage {
	out := make(chan sseMessage, 16)
	go func() {
		defer close(out)
		sc := bufio.NewScanner(resp.Body)
		sc.Buffer(make([]byte, 0, 64*1024), 4<<20)
		var m sseMessage
		var data []string
		for sc.Scan() {
			line := sc.Text()
			switch {
			case line == "":
				if m.event != "" || len(data) > 0 {
					m.data = strings.Join(data, "\n")
					out <- m
				}
				m, data = sseMessage{}, nil
			case strings.HasPrefix(line, "event: "):
				m.event = strings.TrimPrefix(line, "event: ")
			case strings.HasPrefix(line, "id: "):
				m.id = strings.TrimPrefix(line, "id: ")
			case strings.HasPrefix(line, "data: "):
				data = append(data, strings.TrimPrefix(line, "data: "))
			}
		}
	}()
	return out
}

func nextSSE(t *testing.T, ch <-chan sseMessage, within time.Duration) sseMessage {
	t.Helper()
	select {
	case m, ok := <-ch:
		require.True(t, ok, "the stream ended")
		return m
	case <-time.After(within):
		t.Fatal("no message in time")
		return sseMessage{}
	}
}

// TestClusterStream: the live cluster page's stream sends the page's
// updates at once, then each new event as it is written, with the state
// out of band as the poller's answers; the last once the cluster is
// settled, and then ends. Another's cluster is not found, and a stream
// opened again takes up after the last event it sent (Last-Event-ID).
func TestClusterStream(t *testing.T) {
	t.Parallel()
	b := handlerstest.Setup(t, func(d *handlers.Deps) { d.StreamLifetime = time.Minute })
	c, email := b.SignedUpUser(t, "stream")
	other, _ := b.SignedUpUser(t, "stream-other")
	cl := b.Cluster(t, b.InsertCluster(t, b.UserID(t, email), "streamed", "streamed-x1", "v1.34.0", "nodeport", "pending"))
	q := queries.New(b.Pool)
	ctx := t.Context()
	path := fmt.Sprintf("/clusters/%d", cl.ID)

	_, page := c.Get(path)
	require.Contains(t, page, fmt.Sprintf(`sse-connect="%s/stream?after=`, path), "the live page connects to its stream")
	require.Contains(t, page, `data-live-stream="cluster-stream"`, "and its poller rests while it is open")

	status, _ := other.Get(path + "/stream?after=0")
	require.Equal(t, http.StatusNotFound, status)

	require.Eventually(t, b.Live.Listening, 10*time.Second, 20*time.Millisecond)
	open := func(lastID string) (*http.Response, <-chan sseMessage) {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, c.Base+path+"/stream?after=0", nil)
		require.NoError(t, err)
		req.Header.Set("Accept", "text/event-stream")
		if lastID != "" {
			req.Header.Set("Last-Event-ID", lastID)
		}
		resp, err := c.HTTP.Do(req)
		require.NoError(t, err)
		t.Cleanup(func() { resp.Body.Close() })
		require.Equal(t, http.StatusOK, resp.StatusCode)
		require.Equal(t, "text/event-stream", resp.Header.Get("Content-Type"))
		require.Empty(t, resp.Header.Get("Content-Encoding"), "not held back by the compressor")
		return resp, readSSE(resp)
	}
	_, msgs := open("")
	first := nextSSE(t, msgs, 10*time.Second)
	require.Equal(t, "update", first.event)
	require.Contains(t, first.data, `id="cluster-state" data-testid="cluster-state" hx-swap-oob="true"`)
	require.Contains(t, first.data, `id="cluster-poller"`, "the poller, moved on")

	require.NoError(t, clusters.Event(ctx, q, cl.ID, "info", "Installing", "vcluster 0.30.0"))
	m := nextSSE(t, msgs, 10*time.Second)
	require.Contains(t, m.data, `data-reason="Installing"`)
	require.NotEmpty(t, m.id)
	installing := m.id

	require.NoError(t, q.ClusterMarkFailed(ctx, queries.ClusterMarkFailedParams{ID: cl.ID, StatusMessage: "gave up"}))
	m = nextSSE(t, msgs, 10*time.Second)
	require.Contains(t, m.data, `data-status="failed"`)
	require.Contains(t, m.data, `<div id="cluster-stream" hx-swap-oob="delete">`, "settled: the page closes the stream")
	require.NotContains(t, m.data, `data-reason="Installing"`, "sent once")
	_, ok := <-msgs
	require.False(t, ok, "and the server ends it")

	// Opened again after the Installing event: only what came later.
	require.NoError(t, clusters.Event(ctx, q, cl.ID, "warning", "Failed", "gave up"))
	_, msgs = open(installing)
	m = nextSSE(t, msgs, 10*time.Second)
	require.Contains(t, m.data, `data-reason="Failed"`)
	require.NotContains(t, m.data, `data-reason="Installing"`)
}

// waitSSE reads messages until one has want, and returns it: the messages
// are the page's state, each whole, and one may come for a change made
// before the one awaited.
func waitSSE(t *testing.T, ch <-chan sseMessage, want string) sseMessage {
	t.Helper()
	deadline := time.After(10 * time.Second)
	for {
		select {
		case m, ok := <-ch:
			require.True(t, ok, "the stream ended before %s", want)
			if strings.Contains(m.data, want) {
				return m
			}
		case <-deadline:
			t.Fatalf("no message with %s", want)
		}
	}
}

// openSSE opens path's stream as c, and reads it until the test ends.
func openSSE(t *testing.T, c *handlerstest.Client, path string) <-chan sseMessage {
	t.Helper()
	req, err := http.NewRequestWithContext(t.Context(), http.MethodGet, c.Base+path, nil)
	require.NoError(t, err)
	req.Header.Set("Accept", "text/event-stream")
	resp, err := c.HTTP.Do(req)
	require.NoError(t, err)
	t.Cleanup(func() { resp.Body.Close() })
	require.Equal(t, http.StatusOK, resp.StatusCode)
	require.Equal(t, "text/event-stream", resp.Header.Get("Content-Type"))
	return readSSE(resp)
}

// TestNodeOperationStream: a drain's panel, sent again as its progress
// grows, until it is over; then the stream removes itself and ends.
func TestNodeOperationStream(t *testing.T) {
	t.Parallel()
	b := handlerstest.Setup(t, func(d *handlers.Deps) { d.StreamLifetime = time.Minute })
	c, email := b.SignedUpUser(t, "drainer")
	other, _ := b.SignedUpUser(t, "drainer-other")
	id := b.InsertCluster(t, b.UserID(t, email), "drained", "drained-x1", "v1.34.0", "nodeport", "ready")
	q := queries.New(b.Pool)
	ctx := t.Context()
	op, err := q.NodeOperationCreate(ctx, queries.NodeOperationCreateParams{ClusterID: id, NodeName: "worker-1", Kind: "drain"})
	require.NoError(t, err)
	path := fmt.Sprintf("/clusters/%d/nodes/worker-1/operations/%d/stream", id, op.ID)

	status, _ := other.Get(path)
	require.Equal(t, http.StatusNotFound, status)
	status, _ = c.Get(fmt.Sprintf("/clusters/%d/nodes/worker-2/operations/%d/stream", id, op.ID))
	require.Equal(t, http.StatusNotFound, status, "another node's path")

	require.Eventually(t, b.Live.Listening, 10*time.Second, 20*time.Millisecond)
	msgs := openSSE(t, c, path)
	m := nextSSE(t, msgs, 10*time.Second)
	require.Contains(t, m.data, `id="node-operation"`)
	require.Contains(t, m.data, `data-status="running"`)
	require.Contains(t, m.data, `data-live-stream="node-operation-stream"`)

	require.NoError(t, q.NodeOperationAppend(ctx, queries.NodeOperationAppendParams{ID: op.ID, Line: "pod/web evicted"}))
	waitSSE(t, msgs, "pod/web evicted")

	require.NoError(t, q.NodeOperationFinish(ctx, queries.NodeOperationFinishParams{ID: op.ID, Status: "succeeded"}))
	m = waitSSE(t, msgs, `data-status="succeeded"`)
	require.Contains(t, m.data, `<div id="node-operation-stream" hx-swap-oob="delete">`)
	_, ok := <-msgs
	require.False(t, ok, "over: the stream ends")
}

// TestJoinTokensStream: the page's live tokens, out of band, again as
// machines report with them, until none is live; another's token, or
// none, is not found.
func TestJoinTokensStream(t *testing.T) {
	t.Parallel()
	b := handlerstest.Setup(t, func(d *handlers.Deps) { d.StreamLifetime = time.Minute })
	c, email := b.SignedUpUser(t, "joiner")
	other, _ := b.SignedUpUser(t, "joiner-other")
	id := b.InsertCluster(t, b.UserID(t, email), "joined", "joined-x1", "v1.34.0", "nodeport", "ready")
	q := queries.New(b.Pool)
	ctx := t.Context()
	tok, err := q.JoinTokenCreate(ctx, queries.JoinTokenCreateParams{
		ClusterID: id, TokenID: "abcdef", TokenHash: b.Box.MAC("join-token", []byte("joined")),
		SealedToken: b.Box.Seal([]byte("abcdef.0123456789abcdef")),
	})
	require.NoError(t, err)
	path := fmt.Sprintf("/clusters/%d/tokens/stream?ids=%d", id, tok.ID)

	_, page := c.Get(fmt.Sprintf("/clusters/%d/tokens", id))
	require.Contains(t, page, fmt.Sprintf(`sse-connect="/clusters/%d/tokens/stream?ids=%d"`, id, tok.ID))
	status, _ := other.Get(path)
	require.Equal(t, http.StatusNotFound, status)
	status, _ = c.Get(fmt.Sprintf("/clusters/%d/tokens/stream?ids=", id))
	require.Equal(t, http.StatusNotFound, status)

	require.Eventually(t, b.Live.Listening, 10*time.Second, 20*time.Millisecond)
	msgs := openSSE(t, c, path)
	m := nextSSE(t, msgs, 10*time.Second)
	live := fmt.Sprintf(`id="join-token-live-%d"`, tok.ID)
	require.Contains(t, m.data, live)
	require.Contains(t, m.data, `hx-swap-oob="true"`)

	_, err = q.JoinEventCreate(ctx, queries.JoinEventCreateParams{TokenID: tok.ID, Step: "root", Status: "failed", Message: "not root", Host: "rack1-a"})
	require.NoError(t, err)
	waitSSE(t, msgs, `data-host="rack1-a"`)

	_, err = b.Pool.Exec(ctx, "UPDATE join_tokens SET revoked_at = now() WHERE id = $1", tok.ID)
	require.NoError(t, err)
	m = waitSSE(t, msgs, `<div id="join-tokens-stream" hx-swap-oob="delete">`)
	require.Contains(t, m.data, live)
	_, ok := <-msgs
	require.False(t, ok, "none live: the stream ends")
}

// TestNodeRowsStream: the nodes page's stream sends the table's rows at
// once, then again when the cluster's recorded nodes change (a node
// recorded, gone) or its control plane stops answering, but not for the
// health check's pass that only saw the same nodes again. Another's
// cluster is not found.
func TestNodeRowsStream(t *testing.T) {
	t.Parallel()
	b := handlerstest.Setup(t, func(d *handlers.Deps) { d.StreamLifetime = time.Minute })
	c, email := b.SignedUpUser(t, "noderows")
	other, _ := b.SignedUpUser(t, "noderows-other")
	id := b.InsertCluster(t, b.UserID(t, email), "rowed", "rowed-x1", "v1.34.0", "nodeport", "ready")
	ctx := t.Context()
	path := fmt.Sprintf("/clusters/%d", id)

	_, page := c.Get(path + "/nodes?sort=name&dir=desc")
	require.Contains(t, page, fmt.Sprintf(`sse-connect="%s/node-rows/stream?dir=desc&amp;sort=name"`, path), "the page streams its rows, sorted as it is")
	require.Contains(t, page, `data-live-stream="node-stream"`, "and its poller rests while the stream is open")
	status, _ := other.Get(path + "/node-rows/stream")
	require.Equal(t, http.StatusNotFound, status)

	require.Eventually(t, b.Live.Listening, 10*time.Second, 20*time.Millisecond)
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, c.Base+path+"/node-rows/stream", nil)
	require.NoError(t, err)
	resp, err := c.HTTP.Do(req)
	require.NoError(t, err)
	t.Cleanup(func() { resp.Body.Close() })
	require.Equal(t, http.StatusOK, resp.StatusCode)
	msgs := readSSE(resp)
	first := nextSSE(t, msgs, 10*time.Second)
	require.Contains(t, first.data, `id="node-rows"`)
	require.NotContains(t, first.data, "worker-7")

	_, err = b.Pool.Exec(ctx, `INSERT INTO nodes (cluster_id, name, ready) VALUES ($1, 'worker-7', true)`, id)
	require.NoError(t, err)
	m := nextSSE(t, msgs, 10*time.Second)
	require.Contains(t, m.data, "worker-7", "a node recorded")

	// The health check's pass that saw it again: nothing new to show.
	_, err = b.Pool.Exec(ctx, `UPDATE nodes SET last_seen = now() WHERE cluster_id = $1`, id)
	require.NoError(t, err)
	select {
	case m := <-msgs:
		t.Fatalf("a pass that saw the same node sent %q", m.data)
	case <-time.After(1500 * time.Millisecond):
	}
	_, err = b.Pool.Exec(ctx, `DELETE FROM nodes WHERE cluster_id = $1`, id)
	require.NoError(t, err)
	m = nextSSE(t, msgs, 10*time.Second)
	require.NotContains(t, m.data, "worker-7", "the node gone")

	_, err = b.Pool.Exec(ctx, `INSERT INTO cluster_checks (cluster_id, kind) VALUES ($1, 'node_health')
ON CONFLICT (cluster_id, kind) DO NOTHING`, id)
	require.NoError(t, err)
	_, err = b.Pool.Exec(ctx, `UPDATE cluster_checks SET unreachable_since = now(), last_error = 'dial tcp: i/o timeout' WHERE cluster_id = $1`, id)
	require.NoError(t, err)
	m = nextSSE(t, msgs, 10*time.Second)
	require.Contains(t, m.data, `data-testid="nodes-unreachable"`, "the control plane stopped answering")
}

// TestStreamEndsWithTheFeed: a stream ends when its process's feed stops
// listening (the database connection lost, or serve shutting down, which
// then waits for no stream); the page polls meanwhile.
func TestStreamEndsWithTheFeed(t *testing.T) {
	t.Parallel()
	feedCtx, stopFeed := context.WithCancel(context.Background())
	fed := make(chan struct{})
	var feed *livefeed.Feed
	b := handlerstest.Setup(t, func(d *handlers.Deps) {
		d.StreamLifetime = time.Minute
		feed = livefeed.New(d.Pool, d.Logger)
		d.Live = feed
		go func() { feed.Run(feedCtx); close(fed) }()
	})
	t.Cleanup(func() { stopFeed(); <-fed })
	c, email := b.SignedUpUser(t, "feedless")
	id := b.InsertCluster(t, b.UserID(t, email), "fed", "fed-x1", "v1.34.0", "nodeport", "pending")
	ctx := t.Context()
	require.Eventually(t, feed.Listening, 10*time.Second, 20*time.Millisecond)
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, c.Base+fmt.Sprintf("/clusters/%d/stream?after=0", id), nil)
	require.NoError(t, err)
	resp, err := c.HTTP.Do(req)
	require.NoError(t, err)
	t.Cleanup(func() { resp.Body.Close() })
	require.Equal(t, http.StatusOK, resp.StatusCode)
	msgs := readSSE(resp)
	nextSSE(t, msgs, 10*time.Second)

	stopFeed()
	select {
	case _, ok := <-msgs:
		require.False(t, ok, "the stream ends, with no message")
	case <-time.After(10 * time.Second):
		t.Fatal("the stream outlived its feed")
	}
	status, _ := c.Get(fmt.Sprintf("/clusters/%d/stream?after=0", id))
	require.Equal(t, http.StatusServiceUnavailable, status, "and is refused while nothing listens")
}
