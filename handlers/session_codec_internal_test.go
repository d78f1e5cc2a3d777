package handlers

import (
	"testing"
	"time"

	"github.com/alexedwards/scs/v2"
	"github.com/stretchr/testify/require"
)

// TestSessionCodec checks that the session codec gives back what it was
// given, reads sessions gob saved before it, and refuses a value it could
// not give back as it was.
func TestSessionCodec(t *testing.T) {
	t.Parallel()
	deadline := time.Date(2026, 12, 1, 15, 4, 5, 6, time.UTC)
	values := map[string]any{
		sessionID: "sid-1", sessionCSRF: "tok\"en<>&", sessionSeen: int64(1_796_000_000),
		"negative": int64(-42), "empty": "", "digits": "12345",
	}
	tests := []struct {
		name   string
		encode func() ([]byte, error)
	}{
		{"json", func() ([]byte, error) { return sessionCodec{}.Encode(deadline, values) }},
		{"gob from before", func() ([]byte, error) { return scs.GobCodec{}.Encode(deadline, values) }},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			b, err := tc.encode()
			require.NoError(t, err)
			gotDeadline, got, err := sessionCodec{}.Decode(b)
			require.NoError(t, err)
			require.True(t, deadline.Equal(gotDeadline), "deadline %v, want %v", gotDeadline, deadline)
			require.Equal(t, values, got)
		})
	}

	_, err := sessionCodec{}.Encode(deadline, map[string]any{"when": time.Now()})
	require.ErrorContains(t, err, `session value "when": type time.Time cannot be stored`)
	_, _, err = sessionCodec{}.Decode([]byte(`{"d":"2026-12-01T00:00:00Z","v":{"n":1.5}}`))
	require.ErrorContains(t, err, `decode session: value "n"`)
	_, _, err = sessionCodec{}.Decode([]byte(`{"d":`))
	require.ErrorContains(t, err, "decode session")
}
