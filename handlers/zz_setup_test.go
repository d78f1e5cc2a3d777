package handlers_test

import "testing"

func TestZZSetupOnly(t *testing.T) { setup(t) }
