package secrets_test

import (
	"bytes"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/kubebyon/kubebyon/internal/secrets"
)

func TestSealOpenAndMAC(t *testing.T) {
	t.Parallel()
	box, err := secrets.New(bytes.Repeat([]byte{1}, 32))
	require.NoError(t, err)
	other, err := secrets.New(bytes.Repeat([]byte{2}, 32))
	require.NoError(t, err)

	sealed := box.Seal([]byte("hello"))
	require.NotContains(t, sealed, "hello")
	require.NotEqual(t, sealed, box.Seal([]byte("hello")), "nonces must differ")
	got, err := box.Open(sealed)
	require.NoError(t, err)
	require.Equal(t, "hello", string(got))

	_, err = other.Open(sealed)
	require.ErrorIs(t, err, secrets.ErrOpen)
	_, err = box.Open(sealed[:len(sealed)-2] + "AA")
	require.ErrorIs(t, err, secrets.ErrOpen)
	_, err = box.Open("!!")
	require.ErrorIs(t, err, secrets.ErrOpen)

	require.Equal(t, box.MAC("code", []byte("123456")), box.MAC("code", []byte("123456")))
	require.NotEqual(t, box.MAC("code", []byte("123456")), box.MAC("other", []byte("123456")))
	require.NotEqual(t, box.MAC("code", []byte("123456")), other.MAC("code", []byte("123456")))
	require.True(t, secrets.Equal(box.MAC("a", nil), box.MAC("a", nil)))

	_, err = secrets.New([]byte("short"))
	require.Error(t, err)
}
