package handlers

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/kubebyon/kubebyon/views"
)

// TestSortNodes: a cluster's nodes sort by each sortable column both
// ways, by name among equals; no key keeps the record's order.
func TestSortNodes(t *testing.T) {
	t.Parallel()
	now := time.Now()
	nodes := []views.Node{
		{Name: "b", Status: "Ready", KubeletVersion: "v1.34.0", Created: now.Add(-time.Hour)},
		{Name: "c", Status: "NotReady", KubeletVersion: "v1.33.4", Created: now.Add(-3 * time.Hour)},
		{Name: "a", Status: "Ready", KubeletVersion: "v1.34.0", Created: now.Add(-2 * time.Hour)},
	}
	names := func(key string, desc bool) []string {
		ns := append([]views.Node(nil), nodes...)
		sortNodes(ns, key, desc)
		var out []string
		for _, n := range ns {
			out = append(out, n.Name)
		}
		return out
	}
	for key, asc := range map[string][]string{
		"":        {"b", "c", "a"},
		"name":    {"a", "b", "c"},
		"status":  {"c", "a", "b"},
		"version": {"c", "a", "b"},
		"created": {"c", "a", "b"},
	} {
		require.Equal(t, asc, names(key, false), key)
		if key != "" {
			want := append([]string(nil), asc...)
			for i, j := 0, len(want)-1; i < j; i, j = i+1, j-1 {
				want[i], want[j] = want[j], want[i]
			}
			require.Equal(t, want, names(key, true), key+" desc")
		}
	}
}
