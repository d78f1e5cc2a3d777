package testenv_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubebyon/kubebyon/internal/testenv"
)

func TestMain(m *testing.M) { testenv.Main(m) }

// TestKube checks the harness: a secure apiserver answering with RBAC on,
// reporting a real version, and a second one whose objects are its own.
func TestKube(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	host := testenv.HostKube(t).Client(t)
	other := testenv.NewKube(t).Client(t)

	v, err := host.Discovery().ServerVersion()
	require.NoError(t, err)
	require.Equal(t, "v1.34.2", v.GitVersion)

	_, err = host.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "only-on-host"}}, metav1.CreateOptions{})
	require.NoError(t, err)
	_, err = other.CoreV1().Namespaces().Get(ctx, "only-on-host", metav1.GetOptions{})
	require.Error(t, err, "the second apiserver has its own storage")

	groups, err := host.Discovery().ServerGroups()
	require.NoError(t, err)
	var rbac bool
	for _, g := range groups.Groups {
		rbac = rbac || g.Name == "rbac.authorization.k8s.io"
	}
	require.True(t, rbac)
}
