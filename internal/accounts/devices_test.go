package accounts_test

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/kubebyon/kubebyon/internal/accounts"
	"github.com/kubebyon/kubebyon/internal/secrets"
)

func TestDeviceCookie(t *testing.T) {
	t.Parallel()
	box, err := secrets.New(bytes.Repeat([]byte{7}, 32))
	require.NoError(t, err)
	otherBox, err := secrets.New(bytes.Repeat([]byte{8}, 32))
	require.NoError(t, err)
	s, other := &accounts.Service{Box: box}, &accounts.Service{Box: otherBox}
	now := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
	value, expires := s.NewDevice("Ada@Example.com", now)
	require.Equal(t, now.Add(accounts.DeviceLifetime), expires)
	nonce, _, _ := strings.Cut(value, ".")

	tests := []struct {
		name  string
		s     *accounts.Service
		value string
		email string
		at    time.Time
		ok    bool
	}{
		{"as issued", s, value, "Ada@Example.com", now, true},
		{"the address as typed, other case and spaces", s, value, "  ada@example.COM ", now, true},
		{"another account", s, value, "eve@example.com", now, false},
		{"expired", s, value, "ada@example.com", expires, false},
		{"another platform key", other, value, "ada@example.com", now, false},
		{"another nonce", s, "x" + value, "ada@example.com", now, false},
		{"expiry moved", s, strings.Replace(value, ".", ".9", 1), "ada@example.com", now, false},
		{"garbage", s, "not a device cookie", "ada@example.com", now, false},
		{"empty", s, "", "ada@example.com", now, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			id, ok := tt.s.Device(tt.value, tt.email, tt.at)
			require.Equal(t, tt.ok, ok)
			if ok {
				require.Equal(t, nonce, id)
			}
		})
	}
}
