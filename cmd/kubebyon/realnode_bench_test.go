//go:build linux

package main_test

import (
	"context"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubebyon/kubebyon/internal/testenv"
	"github.com/kubebyon/kubebyon/queries"
)

// BenchmarkRealNodeJoin measures real machines joining Kamaji clusters
// through the edge, with the platform as users run it (see
// realnode_test.go for what plays Kamaji). Run it once:
//
//	make node-tools-dir && go test -run '^$' -bench RealNodeJoin -benchtime 1x -timeout 30m ./cmd/kubebyon/
//
// (bench/realnode.sh does). It reports:
//   - join-ready-median-s: from `curl … | sh` to the Node Ready (the
//     script returns once the Node is Ready), median of 5 machines joining
//     one cluster one after the other;
//   - first-pod-median-s: from `curl … | sh` to a pod pinned to the new
//     Node Running, median of the same 5;
//   - ten-joins-last-ready-s: ten machines joining ten clusters at once,
//     until the last is Ready;
//   - the platform's (kubebyon serve's) CPU and memory during those ten
//     joins, and over as long with no join running.
func BenchmarkRealNodeJoin(b *testing.B) {
	for range b.N {
		benchRealNodeJoin(b)
	}
}

func benchRealNodeJoin(b *testing.B) {
	ctx := context.Background()
	// Each kubelet, containerd and control plane takes inotify instances,
	// and 15 machines with 11 control planes outgrow the kernel's default
	// 128 per user (containerd's CRI then fails to start: "too many open
	// files"). Raised for the run, and put back after it.
	const inotify = "/proc/sys/fs/inotify/max_user_instances"
	if was, err := os.ReadFile(inotify); err == nil {
		if n, _ := strconv.Atoi(strings.TrimSpace(string(was))); n < 1024 {
			require.NoError(b, os.WriteFile(inotify, []byte("1024"), 0o644))
			b.Cleanup(func() { _ = os.WriteFile(inotify, was, 0o644) })
		}
	}
	p := startRealPlatform(b, "")
	user := p.userConsole(b, "bench@example.com")
	// Room for the eleven clusters.
	_, err := p.pool.Exec(ctx, "UPDATE plans SET max_clusters = 100 WHERE is_default")
	require.NoError(b, err)

	// Five machines join one cluster, one after the other.
	cl, _ := p.createCluster(b, user, "bench")
	_, client := p.userKubeconfig(b, user, cl)
	var ready, running []float64
	for i := range 5 {
		name := fmt.Sprintf("seq-%d", i)
		node := testenv.NewNode(b, testenv.NodeOptions{Name: name, HostAliases: []string{platformName, cl.Slug + ".clusters.test"}})
		token := user.createJoinToken(b, p.server, cl.ID)
		start := time.Now()
		p.runJoin(b, node, token)
		ready = append(ready, time.Since(start).Seconds())
		pod := pinnedPod(name)
		_, err = client.CoreV1().Pods(pod.Namespace).Create(ctx, pod, metav1.CreateOptions{})
		require.NoError(b, err)
		require.EventuallyWithT(b, func(ct *assert.CollectT) {
			got, err := client.CoreV1().Pods(pod.Namespace).Get(ctx, pod.Name, metav1.GetOptions{})
			if assert.NoError(ct, err) {
				assert.Equal(ct, corev1.PodRunning, got.Status.Phase)
			}
		}, 2*time.Minute, 100*time.Millisecond)
		running = append(running, time.Since(start).Seconds())
		b.Logf("machine %d: Ready after %.1fs, first pod Running after %.1fs", i+1, ready[i], running[i])
	}
	b.ReportMetric(median(ready), "join-ready-median-s")
	b.ReportMetric(median(running), "first-pod-median-s")

	// Ten machines join ten clusters at once.
	const n = 10
	type target struct {
		cl    queries.Cluster
		node  *testenv.Node
		token string
	}
	targets := make([]target, n)
	for i := range n {
		targets[i].cl, _ = p.createCluster(b, user, fmt.Sprintf("para-%d", i))
	}
	for i := range n {
		targets[i].node = testenv.NewNode(b, testenv.NodeOptions{Name: fmt.Sprintf("para-%d", i), HostAliases: []string{platformName, targets[i].cl.Slug + ".clusters.test"}})
		targets[i].token = user.createJoinToken(b, p.server, targets[i].cl.ID)
	}
	pid := p.cmd.Process.Pid
	idle := sample(pid, func() { time.Sleep(20 * time.Second) })
	var wg sync.WaitGroup
	var last time.Duration
	var mu sync.Mutex
	errs := make([]error, n)
	start := time.Now()
	busy := sample(pid, func() {
		for i := range n {
			wg.Add(1)
			go func() {
				defer wg.Done()
				ctx, cancel := context.WithTimeout(ctx, 10*time.Minute)
				defer cancel()
				out, err := p.joinCommand(ctx, targets[i].node, targets[i].token).CombinedOutput()
				if err != nil {
					errs[i] = fmt.Errorf("machine %d: %w\n%s", i, err, out)
					return
				}
				mu.Lock()
				last = max(last, time.Since(start))
				mu.Unlock()
			}()
		}
		wg.Wait()
	})
	for _, err := range errs {
		require.NoError(b, err)
	}
	b.ReportMetric(last.Seconds(), "ten-joins-last-ready-s")
	b.ReportMetric(idle.cpuPerSecond, "idle-cpu-s/s")
	b.ReportMetric(busy.cpuPerSecond, "joins-cpu-s/s")
	b.ReportMetric(idle.maxRSSMB, "idle-rss-MB")
	b.ReportMetric(busy.maxRSSMB, "joins-rss-MB")
	b.Logf("ten joins: all Ready after %.1fs; serve: idle %.3f CPU-s/s, %.0f MB; during the joins %.3f CPU-s/s, %.0f MB (peak RSS)",
		last.Seconds(), idle.cpuPerSecond, idle.maxRSSMB, busy.cpuPerSecond, busy.maxRSSMB)
}

// pinnedPod is a busybox pod bound to a node.
func pinnedPod(node string) *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "first-" + node, Namespace: metav1.NamespaceDefault},
		Spec: corev1.PodSpec{
			NodeName: node,
			Containers: []corev1.Container{{
				Name: "first", Image: testenv.NodeBusyboxImage, ImagePullPolicy: corev1.PullNever,
				Command: []string{"sleep", "3600"},
			}},
			TerminationGracePeriodSeconds: new(int64),
		},
	}
}

func median(xs []float64) float64 {
	s := slices.Clone(xs)
	slices.Sort(s)
	return s[len(s)/2]
}

// usage is a process's CPU and memory over a stretch of time.
type usage struct {
	cpuPerSecond float64 // CPU seconds (user + system) per wall second
	maxRSSMB     float64 // the highest resident set size sampled
}

// sample runs f while it samples pid's CPU time and RSS every 250 ms.
func sample(pid int, f func()) usage {
	cpu0, _ := cpuSeconds(pid)
	start := time.Now()
	done := make(chan struct{})
	var peak float64
	go func() {
		tick := time.NewTicker(250 * time.Millisecond)
		defer tick.Stop()
		for {
			if mb, err := rssMB(pid); err == nil {
				peak = max(peak, mb)
			}
			select {
			case <-done:
				return
			case <-tick.C:
			}
		}
	}()
	f()
	elapsed := time.Since(start).Seconds()
	close(done)
	cpu1, _ := cpuSeconds(pid)
	return usage{cpuPerSecond: (cpu1 - cpu0) / elapsed, maxRSSMB: peak}
}

// cpuSeconds is a process's user and system CPU time (/proc/PID/stat).
func cpuSeconds(pid int) (float64, error) {
	raw, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, err
	}
	// The fields after the command name, which is in parentheses.
	fields := strings.Fields(string(raw[strings.LastIndexByte(string(raw), ')')+2:]))
	utime, err := strconv.ParseFloat(fields[11], 64)
	if err != nil {
		return 0, err
	}
	stime, err := strconv.ParseFloat(fields[12], 64)
	if err != nil {
		return 0, err
	}
	return (utime + stime) / 100, nil // USER_HZ is 100 on Linux
}

// rssMB is a process's resident set size (/proc/PID/status VmRSS).
func rssMB(pid int) (float64, error) {
	raw, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, err
	}
	for line := range strings.SplitSeq(string(raw), "\n") {
		if rest, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			kb, err := strconv.ParseFloat(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 64)
			return kb / 1024, err
		}
	}
	return 0, fmt.Errorf("no VmRSS for %d", pid)
}
