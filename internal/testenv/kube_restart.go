package testenv

import (
	"bytes"
	"os/exec"
	"testing"
)

// Restart kills the apiserver and starts it again on the same address,
// storage and certificates, so that Config still reaches it, and waits
// until it is ready: a test sees what a restarted control plane shows
// (its objects kept, its metrics counted from zero again). extraArgs are
// added to the flags it started with (a flag given again takes the later
// value), for a test that needs a setting the harness does not make.
func (k *Kube) Restart(t testing.TB, extraArgs ...string) {
	t.Helper()
	k.stop()
	var logs bytes.Buffer
	cmd := exec.Command(k.cmd.Path, append(k.cmd.Args[1:len(k.cmd.Args):len(k.cmd.Args)], extraArgs...)...)
	cmd.Stdout, cmd.Stderr = &logs, &logs
	cmd.SysProcAttr = dieWithTests()
	if err := cmd.Start(); err != nil {
		t.Fatalf("testenv: restart kube-apiserver: %v", err)
	}
	done := make(chan struct{})
	go func() { _ = cmd.Wait(); close(done) }()
	// Under the lock stopKube takes, so that it stops this process.
	kubeShared.mu.Lock()
	k.cmd, k.done = cmd, done
	kubeShared.mu.Unlock()
	if err := k.waitReady(&logs); err != nil {
		t.Fatalf("testenv: restart: %v", err)
	}
}
