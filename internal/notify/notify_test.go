package notify_test

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/kubebyon/kubebyon/internal/locale"
	"github.com/kubebyon/kubebyon/internal/notify"
	"github.com/kubebyon/kubebyon/internal/orgs"
	"github.com/kubebyon/kubebyon/queries"
)

// TestDefaultFailuresGoEverywhere: a user who chose nothing hears of every
// kind of failure by email and webhook as well as in the console, managed
// ingress and host names as much as clusters; news that needs nothing of
// them stays in the console.
func TestDefaultFailuresGoEverywhere(t *testing.T) {
	t.Parallel()
	tests := []struct {
		kind notify.Kind
		out  bool // by email and webhook
	}{
		{notify.ClusterFailed, true},
		{notify.NodeNotReady, true},
		{notify.ControlPlane, true},
		{notify.Ingress, true},
		{notify.Hostname, true},
		{notify.Certificate, true},
		{notify.ClusterReady, false},
		{notify.JoinTokenUsed, false},
	}
	for _, tt := range tests {
		t.Run(string(tt.kind), func(t *testing.T) {
			t.Parallel()
			require.True(t, notify.Default(tt.kind, notify.InApp))
			require.Equal(t, tt.out, notify.Default(tt.kind, notify.Email))
			require.Equal(t, tt.out, notify.Default(tt.kind, notify.Webhook))
		})
	}
}

// TestAudienceRoles: every kind about a cluster reaches the owners (a
// personal organization's user hears of all, as before organizations),
// in roles that exist, never the viewers; the kinds about a person or the
// platform are no organization's.
func TestAudienceRoles(t *testing.T) {
	t.Parallel()
	for _, k := range notify.Kinds {
		roles := notify.Audience(k)
		switch k {
		case notify.SecuritySignIn, notify.Billing, notify.EdgeOutOfStep, notify.PlatformHealth:
			require.Empty(t, roles, k)
			continue
		}
		require.Contains(t, roles, string(orgs.Owner), k)
		require.Contains(t, roles, string(orgs.Admin), k)
		require.NotContains(t, roles, string(orgs.Viewer), k)
		for _, r := range roles {
			require.True(t, orgs.Role(r).Valid(), "%s: %s", k, r)
		}
	}
}

// TestTitle: a notice about a team's cluster or plan starts with the
// team's name, in every language; one of a personal organization's does
// not.
func TestTitle(t *testing.T) {
	t.Parallel()
	catalog, err := locale.New()
	require.NoError(t, err)
	tests := []struct {
		name, lang string
		data       map[string]any
		want       string
	}{
		{"team", "en", map[string]any{"Cluster": "web", "Org": "Acme"}, "[Acme] Cluster web failed"},
		{"personal", "en", map[string]any{"Cluster": "web"}, "Cluster web failed"},
		{"team in chinese", "zh-CN", map[string]any{"Cluster": "web", "Org": "Acme"}, "[Acme] " + catalog.For("zh-CN").T("MailClusterFailedSubject", map[string]any{"Cluster": "web"})},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			require.Equal(t, tt.want, notify.Title(catalog.For(tt.lang), notify.EmailClusterFailed, tt.data))
		})
	}
	params, err := json.Marshal(map[string]any{"Cluster": "web", "Org": "Acme"})
	require.NoError(t, err)
	title, _ := notify.Word(catalog.For("en"), queries.Notification{Message: notify.EmailClusterFailed, Params: params})
	require.Equal(t, "[Acme] Cluster web failed", title, "the in-app notice too")
}
