package pglisten_test

import (
	"context"
	"io"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/kubebyon/kubebyon/internal/pglisten"
	"github.com/kubebyon/kubebyon/internal/testenv"
)

func TestMain(m *testing.M) { testenv.Main(m) }

// eventually bounds a notification's trip through the database, and a
// listen again after RelistenAfter.
const eventually = 10 * time.Second

// recorder keeps what Run told it.
type recorder struct {
	mu        sync.Mutex
	listening []bool
	payloads  []string
}

func (r *recorder) setListening(on bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.listening = append(r.listening, on)
}

func (r *recorder) notified(payload string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.payloads = append(r.payloads, payload)
}

func (r *recorder) states() []bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]bool(nil), r.listening...)
}

func (r *recorder) got() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]string(nil), r.payloads...)
}

// TestRun: Run says when it listens, hands on the channel's payloads in
// order (and no other channel's), listens again after losing its
// connection, and returns when its context ends, not listening.
func TestRun(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool := testenv.DB(t)
	r := &recorder{}
	runCtx, stop := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		pglisten.Run(runCtx, pool, slog.New(slog.NewTextHandler(io.Discard, nil)), "kubebyon_test", r.setListening, r.notified)
		close(done)
	}()
	require.Eventually(t, func() bool { return len(r.states()) == 1 }, eventually, 10*time.Millisecond)
	require.Equal(t, []bool{true}, r.states())

	for _, n := range []struct{ channel, payload string }{
		{"kubebyon_test", "1"}, {"kubebyon_other", "not for it"}, {"kubebyon_test", "2"}, {"kubebyon_test", "3"},
	} {
		_, err := pool.Exec(ctx, `SELECT pg_notify($1, $2)`, n.channel, n.payload)
		require.NoError(t, err)
	}
	require.Eventually(t, func() bool { return len(r.got()) == 3 }, eventually, 10*time.Millisecond)
	require.Equal(t, []string{"1", "2", "3"}, r.got())

	var killed int
	require.NoError(t, pool.QueryRow(ctx, `
SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity
WHERE datname = current_database() AND pid <> pg_backend_pid() AND query LIKE 'LISTEN %'`).Scan(&killed))
	require.Equal(t, 1, killed, "Run's one listening connection")
	require.Eventually(t, func() bool { return len(r.states()) == 3 }, eventually, 10*time.Millisecond)
	require.Equal(t, []bool{true, false, true}, r.states(), "not listening, then listening again")
	_, err := pool.Exec(ctx, `SELECT pg_notify('kubebyon_test', '4')`)
	require.NoError(t, err)
	require.Eventually(t, func() bool { return len(r.got()) == 4 }, eventually, 10*time.Millisecond)
	require.Equal(t, "4", r.got()[3])

	stop()
	select {
	case <-done:
	case <-time.After(eventually):
		t.Fatal("Run did not return when its context ended")
	}
	require.Equal(t, []bool{true, false, true, false}, r.states())
}
