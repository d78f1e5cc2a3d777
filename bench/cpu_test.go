package bench

import (
	"fmt"
	"os"
	"path/filepath"
	"runtime/pprof"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// clockTicks is the kernel's USER_HZ, the unit of /proc/<pid>/stat's
// times: 100 on every Linux this runs on.
const clockTicks = 100

// cpuTimes is the CPU time used so far by the server's process, by this
// process (the load generator) and by every PostgreSQL process on the
// machine (the test server's backends): a load's share of each tells
// where a request's cost goes.
type cpuTimes struct {
	server, client, postgres time.Duration
	// idle is the machine's idle time, summed over its CPUs.
	idle time.Duration
}

// since is the CPU time used from t0 to t.
func (t cpuTimes) since(t0 cpuTimes) cpuTimes {
	return cpuTimes{server: t.server - t0.server, client: t.client - t0.client, postgres: t.postgres - t0.postgres, idle: t.idle - t0.idle}
}

// plus is the CPU time of t and o together.
func (t cpuTimes) plus(o cpuTimes) cpuTimes {
	return cpuTimes{server: t.server + o.server, client: t.client + o.client, postgres: t.postgres + o.postgres, idle: t.idle + o.idle}
}

// readCPU reads the CPU times now, of the server whose process is server.
func readCPU(server int) cpuTimes {
	var t cpuTimes
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) == nil {
		t.client = time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
	}
	if raw, err := os.ReadFile("/proc/stat"); err == nil {
		// cpu  user nice system idle ...
		if f := strings.Fields(strings.SplitN(string(raw), "\n", 2)[0]); len(f) > 4 {
			idle, _ := strconv.ParseInt(f[4], 10, 64)
			t.idle = time.Duration(idle) * time.Second / clockTicks
		}
	}
	t.server, _, _ = statCPU(fmt.Sprintf("/proc/%d/stat", server))
	stats, _ := filepath.Glob("/proc/[0-9]*/stat")
	for _, p := range stats {
		if cpu, comm, ok := statCPU(p); ok && comm == "postgres" {
			t.postgres += cpu
		}
	}
	return t
}

// statCPU is the user and system CPU time and the command of the process
// whose /proc stat file is path; ok is false when it cannot be read (the
// process is gone).
func statCPU(path string) (cpu time.Duration, comm string, ok bool) {
	raw, err := os.ReadFile(path)
	if err != nil {
		return 0, "", false
	}
	s := string(raw)
	open, closing := strings.IndexByte(s, '('), strings.LastIndexByte(s, ')')
	if open < 0 || closing < open {
		return 0, "", false
	}
	// After the command: state, then 10 fields, then utime and stime.
	f := strings.Fields(s[closing+1:])
	if len(f) < 13 {
		return 0, "", false
	}
	user, _ := strconv.ParseInt(f[11], 10, 64)
	sys, _ := strconv.ParseInt(f[12], 10, 64)
	return time.Duration(user+sys) * time.Second / clockTicks, s[open+1 : closing], true
}

// profileCPU starts a CPU profile of this process for the load name when BENCH_CPUPROFILE names a directory,
// written there as <name>.pprof (the last round's) when the returned
// function is called, with the allocations before and after (writeAllocs);
// without it, it does nothing.
func profileCPU(b *testing.B, name string) (stop func()) {
	dir := os.Getenv("BENCH_CPUPROFILE")
	if dir == "" {
		return func() {}
	}
	f, err := os.Create(filepath.Join(dir, name+".pprof"))
	if err != nil {
		b.Fatalf("cpu profile: %v", err)
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		b.Fatalf("cpu profile: %v", err)
	}
	writeAllocs(b, filepath.Join(dir, name+".allocs0.pprof"))
	return func() {
		pprof.StopCPUProfile()
		if err := f.Close(); err != nil {
			b.Errorf("cpu profile: %v", err)
		}
		writeAllocs(b, filepath.Join(dir, name+".allocs.pprof"))
	}
}

// writeAllocs writes the allocations so far to path (writeHeapProfile).
func writeAllocs(b *testing.B, path string) {
	if err := writeHeapProfile(path); err != nil {
		b.Fatalf("allocation profile: %v", err)
	}
}
