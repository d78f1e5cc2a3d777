package edgeagent

import (
	"bytes"
	"context"
	"log/slog"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestHAProxyLogLevels: HAProxy's lines of a reload and of a stop the
// edge asked for are INFO, whatever HAProxy tags them; a worker that dies
// otherwise, or an alert of any other kind, stays an ERROR.
func TestHAProxyLogLevels(t *testing.T) {
	t.Parallel()
	tests := []struct {
		line     string
		stopping bool
		want     slog.Level
	}{
		{"[NOTICE]   (25797) : New worker (25799) forked", false, slog.LevelInfo},
		{"[WARNING]  (25799) : Proxy api stopped (cumulated conns: FE: 0, BE: 0).", false, slog.LevelInfo},
		{"[WARNING]  (25797) : Former worker (25799) exited with code 0 (Exit)", false, slog.LevelInfo},
		{"[WARNING]  (25797) : Exiting Master process...", true, slog.LevelInfo},
		{"[ALERT]    (25797) : Current worker (25805) exited with code 143 (Terminated)", true, slog.LevelInfo},
		{"[WARNING]  (25797) : All workers exited. Exiting... (0)", true, slog.LevelInfo},
		// Not asked for: a worker killed from outside, or crashing.
		{"[ALERT]    (25797) : Current worker (25805) exited with code 143 (Terminated)", false, slog.LevelError},
		{"[ALERT]    (25797) : Current worker (25805) exited with code 139 (Segmentation fault)", true, slog.LevelError},
		{"[ALERT]    (25797) : Binding [haproxy.cfg:12] for frontend api: cannot bind socket (Address in use)", false, slog.LevelError},
		{"[WARNING]  (25797) : Server c1-api/s0 is DOWN, reason: Layer4 connection problem", false, slog.LevelWarn},
	}
	for _, tt := range tests {
		var buf bytes.Buffer
		logger := slog.New(slog.NewTextHandler(&buf, &slog.HandlerOptions{Level: slog.LevelDebug}))
		var stopping atomic.Bool
		stopping.Store(tt.stopping)
		logHAProxy(context.Background(), logger, strings.NewReader(tt.line+"\n"), &stopping)
		require.Contains(t, buf.String(), "level="+tt.want.String()+" ", tt.line)
		require.Contains(t, buf.String(), "haproxy=", tt.line)
	}
}
