package testenv

import (
	"errors"
	"os"
	"path/filepath"
	"sync"
	"syscall"
	"time"
)

// The directories testenv makes under the system's temporary directory
// (PostgreSQL, etcd and the apiservers, mailpit) are removed when the
// tests end. A test binary that is killed (a timeout, Ctrl-C) never gets
// there: tempDir marks each directory as its process's, and the next run
// removes those whose process is gone (sweepStale).

// tempDirPrefixes are the directories sweepStale may remove.
var tempDirPrefixes = []string{"kubebyon-testpg-", "kubebyon-kube-", "kubebyon-mailpit-", "kubebyon-knot-"}

// ownerFile, in a directory tempDir made, is locked (flock) for as long as
// the process that made it runs: the kernel drops the lock when it ends.
const ownerFile = ".owner"

// unownedAge is how old a directory without an owner file (made before
// there were any) must be before sweepStale removes it.
const unownedAge = 24 * time.Hour

// owned keeps the owner files open (and so locked) until the process ends.
var owned struct {
	sync.Mutex
	files []*os.File
}

// tempDir makes a directory named prefix followed by random characters,
// marked as this process's.
func tempDir(prefix string) (string, error) {
	dir, err := os.MkdirTemp("", prefix)
	if err != nil {
		return "", err
	}
	// Locked before it takes its name: a sweep in another test binary
	// never finds it unlocked.
	f, err := os.CreateTemp(dir, ownerFile+"-")
	if err != nil {
		return "", err
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		f.Close()
		return "", err
	}
	if err := os.Rename(f.Name(), filepath.Join(dir, ownerFile)); err != nil {
		f.Close()
		return "", err
	}
	owned.Lock()
	owned.files = append(owned.files, f)
	owned.Unlock()
	return dir, nil
}

// sweepStale removes the directories of earlier test processes that
// ended without removing them: those whose owner file nobody holds
// locked, and those without one that are older than unownedAge.
func sweepStale() {
	for _, prefix := range tempDirPrefixes {
		dirs, _ := filepath.Glob(filepath.Join(os.TempDir(), prefix+"*"))
		for _, dir := range dirs {
			if stale(dir) {
				_ = os.RemoveAll(dir)
			}
		}
	}
}

func stale(dir string) bool {
	f, err := os.Open(filepath.Join(dir, ownerFile))
	if errors.Is(err, os.ErrNotExist) {
		info, err := os.Stat(dir)
		return err == nil && info.IsDir() && time.Since(info.ModTime()) > unownedAge
	}
	if err != nil {
		return false
	}
	defer f.Close()
	// Taken at once only when the process that made the directory is
	// gone; closing f lets it go again.
	return syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB) == nil
}
