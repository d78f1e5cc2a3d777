//go:build linux

package testenv

import (
	"os"
	"runtime"
	"testing"

	"github.com/vishvananda/netlink"
	"github.com/vishvananda/netns"
)

// NetNamespace makes a network namespace with lo up, and a netlink handle
// working in it, both gone at cleanup. It needs root (CAP_NET_ADMIN and
// CAP_SYS_ADMIN), which the tests and CI run as.
func NetNamespace(tb testing.TB) (netns.NsHandle, *netlink.Handle) {
	tb.Helper()
	if os.Geteuid() != 0 {
		tb.Fatal("testenv: network namespaces need root (CAP_NET_ADMIN and CAP_SYS_ADMIN); run the tests as root")
	}
	runtime.LockOSThread()
	orig, err := netns.Get()
	if err != nil {
		runtime.UnlockOSThread()
		tb.Fatalf("testenv: get the current network namespace: %v", err)
	}
	defer orig.Close()
	ns, err := netns.New()
	if err != nil {
		runtime.UnlockOSThread()
		tb.Fatalf("testenv: make a network namespace: %v", err)
	}
	if err := netns.Set(orig); err != nil {
		// The thread stays locked: the runtime ends it with the goroutine
		// rather than let it run other goroutines in the new namespace.
		ns.Close()
		tb.Fatalf("testenv: return to the original network namespace: %v", err)
	}
	runtime.UnlockOSThread()
	tb.Cleanup(func() { ns.Close() })
	h, err := netlink.NewHandleAt(ns)
	if err != nil {
		tb.Fatalf("testenv: netlink handle in the new namespace: %v", err)
	}
	tb.Cleanup(h.Close)
	lo, err := h.LinkByName("lo")
	if err == nil {
		err = h.LinkSetUp(lo)
	}
	if err != nil {
		tb.Fatalf("testenv: set lo up: %v", err)
	}
	return ns, h
}
