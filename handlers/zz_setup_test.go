package handlers_test

import (
	"testing"

	"github.com/kubebyon/kubebyon/handlers/handlerstest"
)

func TestZZSetupOnly(t *testing.T) { handlerstest.Setup(t) }
