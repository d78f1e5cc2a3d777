package jobs_test

import (
	"os"
	"testing"

	"github.com/kubebyon/kubebyon/internal/testenv"
)

func TestMain(m *testing.M) {
	// The test binary is also the worker process of TestKilledWorkerRescued.
	if os.Getenv(workerEnv) != "" {
		os.Exit(runWorker())
	}
	testenv.Main(m)
}
