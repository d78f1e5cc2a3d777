package adminusers_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/kubebyon/kubebyon/internal/adminusers"
	"github.com/kubebyon/kubebyon/internal/testenv"
)

// TestActivity pages the audit stream newest first: a page's Older is
// the cursor of the next while older events remain, and the filters
// narrow it.
func TestActivity(t *testing.T) {
	t.Parallel()
	pool := testenv.DB(t)
	ctx := context.Background()
	// Five events of ann's (a.1 … a.5, oldest first), two of bob's.
	_, err := pool.Exec(ctx, `INSERT INTO audit_events (actor_email, action)
		SELECT 'ann@example.com', 'a.' || g FROM generate_series(1, 5) g`)
	require.NoError(t, err)
	_, err = pool.Exec(ctx, `INSERT INTO audit_events (actor_email, action) VALUES ('bob@example.com', 'b'), ('bob@example.com', 'b')`)
	require.NoError(t, err)
	s := &adminusers.Service{Pool: pool}

	tests := []struct {
		name    string
		f       adminusers.ActivityFilter
		size    int
		actions []string // of every page, in order
	}{
		{"pages of two, ann's", adminusers.ActivityFilter{Actor: "ANN"}, 2, []string{"a.5", "a.4", "a.3", "a.2", "a.1"}},
		{"one page exactly", adminusers.ActivityFilter{Action: "b"}, 2, []string{"b", "b"}},
		{"everything", adminusers.ActivityFilter{}, 10, []string{"b", "b", "a.5", "a.4", "a.3", "a.2", "a.1"}},
		{"nothing", adminusers.ActivityFilter{Actor: "carol"}, 2, nil},
	}
	for _, tt := range tests {
		var got []string
		var before int64
		for pages := 0; ; pages++ {
			require.Less(t, pages, 10, tt.name)
			p, err := s.Activity(ctx, tt.f, before, tt.size)
			require.NoError(t, err, tt.name)
			require.LessOrEqual(t, len(p.Events), tt.size, tt.name)
			for _, e := range p.Events {
				got = append(got, e.Action)
			}
			if p.Older == 0 {
				break
			}
			require.Equal(t, p.Events[len(p.Events)-1].ID, p.Older, tt.name)
			before = p.Older
		}
		require.Equal(t, tt.actions, got, tt.name)
	}
}
