package accounts

import (
	"bytes"
	"testing"
	"time"

	"github.com/pquerna/otp/totp"
	"github.com/stretchr/testify/require"

	"github.com/kubebyon/kubebyon/internal/secrets"
	"github.com/kubebyon/kubebyon/queries"
)

// TestMatchStep: a code of the step now or one either side is accepted,
// with its step; one further off is not, nor one whose step is not after
// the last used (a replay); spaces in a typed code do not matter.
func TestMatchStep(t *testing.T) {
	t.Parallel()
	box, err := secrets.New(bytes.Repeat([]byte{7}, 32))
	require.NoError(t, err)
	now := time.Date(2026, 12, 1, 10, 0, 10, 0, time.UTC)
	s := &Service{Box: box, Now: func() time.Time { return now }}
	key, err := totp.Generate(totp.GenerateOpts{Issuer: "KubeBYON", AccountName: "ada@example.com"})
	require.NoError(t, err)
	step := now.Unix() / totpPeriod
	row := queries.UserTotp{SecretSealed: box.Seal([]byte(key.Secret()))}
	code := func(offset int64) string {
		c, err := totp.GenerateCode(key.Secret(), time.Unix((step+offset)*totpPeriod, 0))
		require.NoError(t, err)
		return c
	}

	for _, offset := range []int64{-1, 0, 1} {
		got, ok, err := s.matchStep(row, code(offset))
		require.NoError(t, err)
		require.True(t, ok, offset)
		require.Equal(t, step+offset, got)
	}
	for _, offset := range []int64{-3, 3} {
		_, ok, err := s.matchStep(row, code(offset))
		require.NoError(t, err)
		require.False(t, ok, offset)
	}
	c := code(0)
	_, ok, err := s.matchStep(row, c[:3]+" "+c[3:])
	require.NoError(t, err)
	require.True(t, ok)

	row.LastStep = step
	_, ok, err = s.matchStep(row, code(0))
	require.NoError(t, err)
	require.False(t, ok, "a step used already")
	_, ok, err = s.matchStep(row, code(1))
	require.NoError(t, err)
	require.True(t, ok, "a later step")

	_, ok, err = s.matchStep(row, "abcdef")
	require.NoError(t, err)
	require.False(t, ok)
}

// TestRecoveryHash: a recovery code is found however it is typed.
func TestRecoveryHash(t *testing.T) {
	t.Parallel()
	box, err := secrets.New(bytes.Repeat([]byte{7}, 32))
	require.NoError(t, err)
	s := &Service{Box: box}
	require.Equal(t, s.recoveryHash("abcde-fghij"), s.recoveryHash(" ABCDE FGHIJ"))
	require.NotEqual(t, s.recoveryHash("abcde-fghij"), s.recoveryHash("abcde-fghik"))
	require.False(t, isTOTPCode("abcde-fghij"))
	require.True(t, isTOTPCode("123 456"))
}
