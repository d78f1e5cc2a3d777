package testenv

import (
	"io"
	"net"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"
)

// HangingListener is a local address (host:port) that accepts connections
// and never answers, as a control plane or host cluster whose apiserver
// hangs, until the test ends: a client's request to it waits for its own
// timeout.
func HangingListener(t testing.TB) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	var held sync.WaitGroup
	go func() {
		for {
			conn, err := ln.Accept()
			if err != nil {
				return
			}
			held.Add(1)
			go func() {
				defer held.Done()
				_, _ = io.Copy(io.Discard, conn) // until the client gives up
				_ = conn.Close()
			}()
		}
	}()
	t.Cleanup(func() { _ = ln.Close(); held.Wait() })
	return ln.Addr().String()
}
