package testenv

import (
	"os"
	"os/exec"
	"strings"
	"testing"
)

// Podman returns the path of podman for tests that run the platform's
// image. podman needs CONTAINERS_CONF naming a containers.conf without
// default rlimits here (tools/containers.conf, which make test-go passes):
// with podman's defaults every container fails to start as runc cannot
// set them. It fails t when podman or that file is missing.
func Podman(t testing.TB) string {
	t.Helper()
	skipInShort(t, "podman")
	bin, err := exec.LookPath("podman")
	if err != nil {
		t.Fatalf("testenv: podman is not installed (apt-get install podman; .ci/run installs it): %v", err)
	}
	conf := os.Getenv("CONTAINERS_CONF")
	if conf == "" {
		t.Fatal("testenv: CONTAINERS_CONF is not set: set CONTAINERS_CONF=<repo>/tools/containers.conf " +
			"(make test-go does), without which podman's default rlimits stop every container here")
	}
	if _, err := os.Stat(conf); err != nil {
		t.Fatalf("testenv: CONTAINERS_CONF: %v", err)
	}
	return bin
}

// Image returns $KUBEBYON_IMAGE, the platform's image in the local
// containers store (name:tag) that make image builds and make test-go
// names, after checking that podman has it. It fails t when it is unset
// or absent.
func Image(t testing.TB) string {
	t.Helper()
	podman := Podman(t)
	image := os.Getenv("KUBEBYON_IMAGE")
	if image == "" {
		t.Fatal("testenv: KUBEBYON_IMAGE is not set: run 'make image' and set KUBEBYON_IMAGE to the name:tag it " +
			"printed (make test-go builds the image and sets it)")
	}
	if out, err := exec.Command(podman, "image", "exists", image).CombinedOutput(); err != nil {
		t.Fatalf("testenv: KUBEBYON_IMAGE=%s is not in the local containers store (%v %s): run 'make image'",
			image, err, strings.TrimSpace(string(out)))
	}
	return image
}
