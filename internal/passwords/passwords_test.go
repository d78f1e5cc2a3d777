package passwords_test

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/kubebyon/kubebyon/internal/passwords"
)

func TestHashAndVerify(t *testing.T) {
	t.Parallel()
	h, err := passwords.Hash("correct horse battery staple")
	require.NoError(t, err)
	require.True(t, strings.HasPrefix(h, "$argon2id$v=19$m=65536,t=3,p=2$"), h)

	ok, err := passwords.Verify("correct horse battery staple", h)
	require.NoError(t, err)
	require.True(t, ok)
	ok, err = passwords.Verify("Correct horse battery staple", h)
	require.NoError(t, err)
	require.False(t, ok)

	_, err = passwords.Verify("x", "not a hash")
	require.Error(t, err)
}

func TestGenerate(t *testing.T) {
	t.Parallel()
	a, b := passwords.Generate(), passwords.Generate()
	require.NotEqual(t, a, b)
	require.GreaterOrEqual(t, len(a), passwords.MinLength)
}
