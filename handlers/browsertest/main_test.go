// Package browsertest_test drives the handlers in Chromium: one browser
// for the test binary (testenv.Browser), a tab in a context of its own per
// test, on the platform handlerstest.Setup serves.
package browsertest_test

import (
	"testing"

	"github.com/kubebyon/kubebyon/internal/testenv"
)

func TestMain(m *testing.M) { testenv.Main(m) }
