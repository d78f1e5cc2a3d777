package ratelimit

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func TestDecide(t *testing.T) {
	t.Parallel()
	rule := Rule{Name: "test", Limit: 10, Window: time.Minute}
	start := time.Date(2026, 11, 30, 10, 0, 0, 0, time.UTC)
	tests := []struct {
		name              string
		elapsed           time.Duration
		current, previous int32
		allowed           bool
		retry             time.Duration
	}{
		{"first hit", 0, 1, 0, true, 0},
		{"at the limit", 30 * time.Second, 10, 0, true, 0},
		// The next hit comes in the next window, weighing 11 by 1-f:
		// 1 + 11(1-f) <= 10 from f = 2/11, 40.9 s from now.
		{"one past it", 30 * time.Second, 11, 0, false, 41 * time.Second},
		{"a full previous window just turned", time.Second, 1, 10, false, 11 * time.Second},
		{"the previous window half gone", 30 * time.Second, 5, 10, true, 0},
		{"the previous window half gone, one more", 30 * time.Second, 6, 10, false, 12 * time.Second},
		{"the previous window gone", 59 * time.Second, 10, 100, false, 7 * time.Second},
		{"never less than a second", 59690 * time.Millisecond, 5, 1000, false, time.Second},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			d := decide(rule, start, start.Add(tt.elapsed), tt.current, tt.previous)
			require.Equal(t, tt.allowed, d.Allowed)
			require.Equal(t, tt.retry, d.RetryAfter)
		})
	}
}
