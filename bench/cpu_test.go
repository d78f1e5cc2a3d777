package bench

import (
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

// cpuTimes is the CPU time used so far by this process (server and load
// generator alike) and by every PostgreSQL process on the machine (the
// test server's backends): a load's share of each tells where a request's
// cost goes.
type cpuTimes struct {
	self, postgres time.Duration
	// idle is the machine's idle time, summed over its CPUs.
	idle time.Duration
}

// since is the CPU time used from t0 to t.
func (t cpuTimes) since(t0 cpuTimes) cpuTimes {
	return cpuTimes{self: t.self - t0.self, postgres: t.postgres - t0.postgres, idle: t.idle - t0.idle}
}

func readCPU() cpuTimes {
	var t cpuTimes
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) == nil {
		t.self = time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
	}
	if raw, err := os.ReadFile("/proc/stat"); err == nil {
		// cpu  user nice system idle ...
		if f := strings.Fields(strings.SplitN(string(raw), "\n", 2)[0]); len(f) > 4 {
			idle, _ := strconv.ParseInt(f[4], 10, 64)
			t.idle = time.Duration(idle) * time.Second / clockTicks
		}
	}
	stats, _ := filepath.Glob("/proc/[0-9]*/stat")
	for _, p := range stats {
		raw, err := os.ReadFile(p)
		if err != nil {
			continue // gone since the glob
		}
		s := string(raw)
		open, closing := strings.IndexByte(s, '('), strings.LastIndexByte(s, ')')
		if open < 0 || closing < open || s[open+1:closing] != "postgres" {
			continue
		}
		// After the command: state, then 10 fields, then utime and stime.
		f := strings.Fields(s[closing+1:])
		if len(f) < 13 {
			continue
		}
		user, _ := strconv.ParseInt(f[11], 10, 64)
		sys, _ := strconv.ParseInt(f[12], 10, 64)
		t.postgres += time.Duration(user+sys) * time.Second / clockTicks
	}
	return t
}

// profileCPU starts a CPU profile of this process (server and load
// generator) for the load name when BENCH_CPUPROFILE names a directory,
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

// writeAllocs writes the allocations so far to path: those of a load are
// the difference between its two (go tool pprof -sample_index=alloc_space
// -diff_base <name>.allocs0.pprof <name>.allocs.pprof).
func writeAllocs(b *testing.B, path string) {
	f, err := os.Create(path)
	if err != nil {
		b.Fatalf("allocation profile: %v", err)
	}
	defer f.Close()
	if err := pprof.Lookup("allocs").WriteTo(f, 0); err != nil {
		b.Fatalf("allocation profile: %v", err)
	}
}
