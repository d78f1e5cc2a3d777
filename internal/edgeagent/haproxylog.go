package edgeagent

import (
	"bufio"
	"context"
	"io"
	"log/slog"
	"regexp"
	"strings"
	"sync/atomic"
)

// haproxyLine is one line HAProxy writes on stderr: "[WARNING]  (123) :
// Proxy api stopped (...)".
var haproxyLine = regexp.MustCompile(`^\[(\w+)\]\s+\((\d+)\)\s*:\s*(.*)$`)

// haproxyExit is HAProxy's word that a process ended.
var haproxyExit = regexp.MustCompile(`exited with code (\d+)`)

// haproxyLevel is the level of HAProxy's line tagged tag, saying msg. The
// steps of every reload and stop (an old worker's proxies stopping, a
// worker or the master leaving with code 0) are INFO whatever HAProxy
// tags them, and so is the worker ended by the SIGTERM the edge sent
// while stopping (code 143); anything else keeps HAProxy's level.
func haproxyLevel(tag, msg string, stopping bool) slog.Level {
	exit := haproxyExit.FindStringSubmatch(msg)
	switch {
	case tag == "NOTICE" || tag == "INFO":
		return slog.LevelInfo
	case tag == "DEBUG":
		return slog.LevelDebug
	case exit != nil && (exit[1] == "0" || stopping && exit[1] == "143"):
		return slog.LevelInfo
	case exit == nil && (strings.HasPrefix(msg, "Proxy ") && strings.Contains(msg, " stopped") ||
		strings.HasPrefix(msg, "Exiting Master process") || strings.HasPrefix(msg, "All workers exited")):
		return slog.LevelInfo
	case tag == "WARNING":
		return slog.LevelWarn
	}
	return slog.LevelError
}

// logHAProxy writes each line HAProxy writes to r into logger, at its
// level (haproxyLevel), until r ends.
func logHAProxy(ctx context.Context, logger *slog.Logger, r io.Reader, stopping *atomic.Bool) {
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if line == "" {
			continue
		}
		m := haproxyLine.FindStringSubmatch(line)
		if m == nil {
			// Configuration check output and the like: as HAProxy wrote it.
			logger.LogAttrs(ctx, slog.LevelWarn, line, slog.String("haproxy", "output"))
			continue
		}
		logger.LogAttrs(ctx, haproxyLevel(m[1], m[3], stopping.Load()), m[3],
			slog.String("haproxy", m[1]), slog.String("pid", m[2]))
	}
}
