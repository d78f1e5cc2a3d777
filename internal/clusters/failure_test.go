package clusters_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/kubebyon/kubebyon/internal/clusters"
)

// TestFailureMessage: a recorded error names the message that explains it
// to the owner; one that says nothing known gets the generic one.
func TestFailureMessage(t *testing.T) {
	t.Parallel()
	for raw, want := range map[string]string{
		"": "",
		"no host cluster is configured: an admin connects one in Admin → Settings":                  clusters.FailureNoHost,
		"the control plane did not become ready within 10m0s (dial tcp 10.96.0.1:443: i/o timeout)": clusters.FailureNotReadyInTime,
		`Get "https://10.0.0.5:6443/api": dial tcp 10.0.0.5:6443: connect: connection refused`:      clusters.FailureHostUnreachable,
		"lookup host.internal on 10.96.0.10:53: no such host":                                       clusters.FailureHostUnreachable,
		"helm install: timed out waiting for the condition":                                         clusters.FailureInstall,
		"pods is forbidden: exceeded quota: compute-resources":                                      clusters.FailureQuota,
		"something else went wrong":                                                                 clusters.FailureGeneric,
	} {
		require.Equal(t, want, clusters.FailureMessage(raw), raw)
	}
}
