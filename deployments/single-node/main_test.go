package singlenode_test

import (
	"testing"

	"github.com/kubebyon/kubebyon/internal/testenv"
)

// TestMain stops what testenv started (the control plane's etcd) once the
// tests are done.
func TestMain(m *testing.M) { testenv.Main(m) }
