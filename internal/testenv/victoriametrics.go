package testenv

import (
	"context"
	"fmt"
	"net/http"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"
)

var victoriaMetricsBin struct {
	once sync.Once
	path string
	err  error
}

// VictoriaMetrics starts a single-node VictoriaMetrics of its own for t,
// on an empty storage directory, and returns its base URL, such as
// "http://127.0.0.1:port" (remote write at /api/v1/write, the Prometheus
// query API under /api/v1). What is written is searchable once
// /internal/force_flush was called, and samples up to a year old are
// kept. It is stopped when t ends; its log is shown if t failed.
func VictoriaMetrics(t testing.TB) string {
	t.Helper()
	victoriaMetricsBin.once.Do(func() { victoriaMetricsBin.path, victoriaMetricsBin.err = victoriaMetricsBinary() })
	if victoriaMetricsBin.err != nil {
		t.Fatalf("testenv: victoria-metrics: %v (run 'make bin/victoria-metrics' and set VICTORIA_METRICS=$PWD/bin/victoria-metrics)", victoriaMetricsBin.err)
	}
	dir := t.TempDir()
	// VictoriaMetrics cannot listen on port 0 and say which it got: take a
	// free port and try again in the rare case another process took it
	// in between.
	var lastErr error
	for range 3 {
		baseURL, err := startVictoriaMetrics(t, dir)
		if err == nil {
			return baseURL
		}
		lastErr = err
	}
	t.Fatalf("testenv: %v", lastErr)
	return ""
}

// startVictoriaMetrics starts one on a free port and waits for it to be
// healthy; an error is an exit before that (a port taken meanwhile).
func startVictoriaMetrics(t testing.TB, dir string) (string, error) {
	port, err := freePort()
	if err != nil {
		t.Fatalf("testenv: free port for victoria-metrics: %v", err)
	}
	addr := fmt.Sprintf("127.0.0.1:%d", port)
	var logs Output
	cmd := exec.Command(victoriaMetricsBin.path,
		"-httpListenAddr="+addr,
		"-storageDataPath="+dir,
		// Tests write samples up to a month old; older than the retention
		// is refused.
		"-retentionPeriod=1y",
		// What a test wrote is answered at once: no 30s hiding the latest
		// points, no cached results of before a write.
		"-search.latencyOffset=0s",
		"-search.disableCache",
		"-loggerLevel=WARN",
	)
	cmd.Stdout, cmd.Stderr = &logs, &logs
	cmd.SysProcAttr = dieWithTests()
	if err := cmd.Start(); err != nil {
		t.Fatalf("testenv: start victoria-metrics %s: %v", victoriaMetricsBin.path, err)
	}
	done := make(chan struct{})
	go func() { _ = cmd.Wait(); close(done) }()
	stop := func() {
		_ = cmd.Process.Kill()
		<-done
	}

	baseURL := "http://" + addr
	deadline := time.Now().Add(30 * time.Second)
	for {
		select {
		case <-done:
			out := logs.String()
			if strings.Contains(out, "address already in use") {
				return "", fmt.Errorf("victoria-metrics could not listen on %s:\n%s", addr, tail(out, 4000))
			}
			t.Fatalf("testenv: victoria-metrics exited: %s\n%s", cmd.ProcessState, tail(out, 4000))
		default:
		}
		if victoriaMetricsHealthy(baseURL) {
			break
		}
		if time.Now().After(deadline) {
			stop()
			t.Fatalf("testenv: victoria-metrics did not answer within 30s\n%s", tail(logs.String(), 4000))
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Cleanup(func() {
		stop()
		if t.Failed() {
			t.Logf("testenv: victoria-metrics log:\n%s", tail(logs.String(), 4000))
		}
	})
	return baseURL, nil
}

func victoriaMetricsHealthy(baseURL string) bool {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, baseURL+"/health", nil)
	if err != nil {
		return false
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return false
	}
	resp.Body.Close()
	return resp.StatusCode == http.StatusOK
}

// victoriaMetricsBinary is $VICTORIA_METRICS ('make test' builds
// bin/victoria-metrics), else built from tools/victoriametrics
// (toolBinary).
func victoriaMetricsBinary() (string, error) {
	return toolBinary("VICTORIA_METRICS", "victoriametrics", "victoria-metrics", "github.com/VictoriaMetrics/VictoriaMetrics/app/victoria-metrics")
}

// FlushVictoriaMetrics makes what the VictoriaMetrics at baseURL was sent
// searchable at once, rather than at its own flush a second later.
func FlushVictoriaMetrics(t testing.TB, baseURL string) {
	t.Helper()
	resp, err := http.Get(baseURL + "/internal/force_flush")
	if err != nil {
		t.Fatalf("testenv: flush victoria-metrics: %v", err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("testenv: flush victoria-metrics: %s", resp.Status)
	}
}
