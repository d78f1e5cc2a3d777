package main_test

import (
	"bufio"
	"context"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/kubebyon/kubebyon/internal/testenv"
	"github.com/kubebyon/kubebyon/queries"
)

// TestLiveStreamAcrossReplicas is issue 40's test of the live pages: two
// API processes on one database; a cluster page's stream served by B
// delivers the event of an action served by A, told by PostgreSQL
// (LISTEN/NOTIFY), not by polling: the test reads only B's stream.
func TestLiveStreamAcrossReplicas(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	dbURL := testenv.DBURL(t)
	env := []string{"DATABASE_URL=" + dbURL, "KUBEBYON_DATA_DIR=" + t.TempDir(), "KUBEBYON_SECRET_KEY=" + strings.Repeat("A", 43) + "="}
	a := startServe(t, env, "--workers=false")
	b := startServe(t, env, "--workers=false")
	a.waitReady(t)
	b.waitReady(t)

	const email, password = "ops@example.com", "correct horse battery staple"
	r := kubebyon(t, env, password+"\n", "admin", "create", "--email", email, "--password-stdin")
	require.Equal(t, 0, r.code, r.stderr)
	pool, err := pgxpool.New(ctx, dbURL)
	require.NoError(t, err)
	defer pool.Close()
	q := queries.New(pool)
	user, err := q.UserGetByEmail(ctx, email)
	require.NoError(t, err)
	// Pending, and no worker to move it on: the page stays live.
	cl, err := q.ClusterCreate(ctx, queries.ClusterCreateParams{OwnerID: user.ID, Name: "shared", Slug: "shared-x1", KubernetesVersion: "v1.34.0", PublicAccessMode: "loadbalancer"})
	require.NoError(t, err)
	page := fmt.Sprintf("/clusters/%d", cl.ID)

	onA, onB := newWeb(t, a), newWeb(t, b)
	onA.signIn(email, password)
	onB.signIn(email, password)
	code, body := onB.get(page)
	require.Equal(t, http.StatusOK, code)
	require.Contains(t, body, `sse-connect="`+page+`/stream?after=0"`)

	// B answers the stream once it listens to the database (503 before).
	streamCtx, cancel := context.WithCancel(ctx)
	defer cancel()
	var resp *http.Response
	require.Eventually(t, func() bool {
		req, err := http.NewRequestWithContext(streamCtx, http.MethodGet, onB.base+page+"/stream?after=0", nil)
		require.NoError(t, err)
		req.Header.Set("Accept", "text/event-stream")
		resp, err = onB.http.Do(req)
		require.NoError(t, err)
		if resp.StatusCode != http.StatusOK {
			resp.Body.Close()
			return false
		}
		return true
	}, 30*time.Second, 100*time.Millisecond, "B never served the stream")
	defer resp.Body.Close()
	require.Equal(t, "text/event-stream", resp.Header.Get("Content-Type"))
	msgs := streamMessages(resp)
	first := nextMessage(t, msgs, 10*time.Second)
	require.Contains(t, first, `data-status="pending"`)
	require.NotContains(t, first, `data-reason="DeleteRequested"`)

	// Through A: the delete request records a cluster event.
	res, body := onA.post("/settings/profile", page+"/delete", url.Values{"confirm": {"shared"}})
	require.Equal(t, http.StatusSeeOther, res.StatusCode, body)

	deadline := time.After(10 * time.Second)
	for {
		select {
		case m, ok := <-msgs:
			require.True(t, ok, "B's stream ended before the event came")
			if !strings.Contains(m, `data-reason="DeleteRequested"`) {
				continue
			}
			// SIGTERM with the stream open: B ends it and exits cleanly at
			// once, rather than waiting out its drain for the stream.
			start := time.Now()
			b.stop(t)
			require.Less(t, time.Since(start), 10*time.Second, "the open stream held up B's shutdown")
			select {
			case _, open := <-msgs:
				require.False(t, open, "the stream ended with B")
			case <-time.After(10 * time.Second):
				t.Fatal("the stream outlived B")
			}
			return
		case <-deadline:
			t.Fatalf("B's stream did not deliver A's event: %s", b.stderr)
		}
	}
}

// streamMessages sends the data of each message of a text/event-stream
// to a channel, until it ends.
func streamMessages(resp *http.Response) <-chan string {
	out := make(chan string, 16)
	go func() {
		defer close(out)
		sc := bufio.NewScanner(resp.Body)
		sc.Buffer(make([]byte, 0, 64*1024), 4<<20)
		var data []string
		for sc.Scan() {
			line := sc.Text()
			switch {
			case line == "" && len(data) > 0:
				out <- strings.Join(data, "\n")
				data = nil
			case strings.HasPrefix(line, "data: "):
				data = append(data, strings.TrimPrefix(line, "data: "))
			}
		}
	}()
	return out
}

func nextMessage(t *testing.T, ch <-chan string, within time.Duration) string {
	t.Helper()
	select {
	case m, ok := <-ch:
		require.True(t, ok, "the stream ended")
		return m
	case <-time.After(within):
		t.Fatal("no message in time")
		return ""
	}
}
