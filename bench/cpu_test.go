package bench

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
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
}

func readCPU() cpuTimes {
	var t cpuTimes
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) == nil {
		t.self = time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
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
