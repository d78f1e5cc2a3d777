package handlers_test

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubebyon/kubebyon/handlers/handlerstest"
)

// apiJoinToken is a join token as the API answers it.
type apiJoinToken struct {
	ID          int64      `json:"id"`
	TokenID     string     `json:"token_id"`
	Description string     `json:"description"`
	Status      string     `json:"status"`
	Uses        int32      `json:"uses"`
	MaxUses     *int32     `json:"max_uses"`
	ExpiresAt   *time.Time `json:"expires_at"`
	RevokedAt   *time.Time `json:"revoked_at"`
	Token       string     `json:"token"`
	Command     string     `json:"command"`
}

// TestAPIJoinTokens: a key makes a join token on a ready cluster and gets
// the command that joins a machine, whose script the platform serves; it
// lists, reads and revokes it, after which the command and its bootstrap
// Secret are gone. Bad bodies are 422 naming the field; another user's
// cluster and token are 404.
func TestAPIJoinTokens(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	b := handlerstest.Setup(t)
	c, _ := b.SignedUpUser(t, "joiner")
	key := c.CreateKey("provisioning")
	cl, virt := b.ReadyVirtualCluster(t, c, "joins")
	admin := virt.Client(t)
	base := fmt.Sprintf("/api/v1/clusters/%d/join-tokens", cl.ID)

	for body, field := range map[string]string{
		`{"max_uses": 1001}`:      "max_uses",
		`{"max_uses": -1}`:        "max_uses",
		`{"lifetime": "forever"}`: "lifetime",
		`{"description": "` + strings.Repeat("d", 201) + `"}`: "description",
	} {
		r := b.APICall(t, http.MethodPost, base, key, body)
		require.Equal(t, http.StatusUnprocessableEntity, r.Status, body)
		require.Contains(t, handlerstest.DecodeAs[handlerstest.APIErrorJSON](t, r).Error.Fields, field, body)
	}

	r := b.APICall(t, http.MethodPost, base, key, `{"description": "rack 2", "lifetime": "24h", "max_uses": 3}`)
	require.Equal(t, http.StatusCreated, r.Status, r.Body)
	tok := handlerstest.DecodeAs[apiJoinToken](t, r)
	require.Equal(t, fmt.Sprintf("%s/%d", base, tok.ID), r.Header.Get("Location"))
	require.Equal(t, "active", tok.Status)
	require.Equal(t, "rack 2", tok.Description)
	require.Equal(t, int32(3), *tok.MaxUses)
	require.WithinDuration(t, time.Now().Add(24*time.Hour), *tok.ExpiresAt, time.Minute)
	require.Equal(t, fmt.Sprintf("curl -fsSL %s/join/%s | sudo sh", b.Server.URL, tok.Token), tok.Command)
	require.True(t, strings.HasPrefix(tok.Token, tok.TokenID+"."))
	_, err := admin.CoreV1().Secrets("kube-system").Get(ctx, "bootstrap-token-"+tok.TokenID, metav1.GetOptions{})
	require.NoError(t, err, "the token's bootstrap Secret is in the cluster")
	code, _, script := handlerstest.JoinStatus(t, b, tok.Token)
	require.Equal(t, http.StatusOK, code, script)

	r = b.APICall(t, http.MethodPost, base, key, `{"max_uses": 0, "lifetime": "none"}`)
	require.Equal(t, http.StatusCreated, r.Status, r.Body)
	unlimited := handlerstest.DecodeAs[apiJoinToken](t, r)
	require.Nil(t, unlimited.MaxUses, "0 is any number of machines")
	require.Nil(t, unlimited.ExpiresAt)

	r = b.APICall(t, http.MethodGet, base, key, "")
	require.Equal(t, http.StatusOK, r.Status, r.Body)
	list := handlerstest.DecodeAs[struct {
		JoinTokens []apiJoinToken `json:"join_tokens"`
	}](t, r)
	require.Len(t, list.JoinTokens, 2)
	require.Equal(t, unlimited.ID, list.JoinTokens[0].ID, "newest first")

	// Another user sees none of it.
	other, _ := b.SignedUpUser(t, "other")
	otherKey := other.CreateKey("nosy")
	for _, call := range []struct{ method, path, body string }{
		{http.MethodGet, base, ""},
		{http.MethodPost, base, `{}`},
		{http.MethodGet, fmt.Sprintf("%s/%d", base, tok.ID), ""},
		{http.MethodDelete, fmt.Sprintf("%s/%d", base, tok.ID), ""},
	} {
		r := b.APICall(t, call.method, call.path, otherKey, call.body)
		require.Equal(t, http.StatusNotFound, r.Status, "%s %s: %s", call.method, call.path, r.Body)
	}

	r = b.APICall(t, http.MethodDelete, fmt.Sprintf("%s/%d", base, tok.ID), key, "")
	require.Equal(t, http.StatusOK, r.Status, r.Body)
	revoked := handlerstest.DecodeAs[apiJoinToken](t, r)
	require.Equal(t, "revoked", revoked.Status)
	require.NotNil(t, revoked.RevokedAt)
	require.Empty(t, revoked.Command, "a revoked token has no command")
	r = b.APICall(t, http.MethodDelete, fmt.Sprintf("%s/%d", base, tok.ID), key, "")
	require.Equal(t, http.StatusOK, r.Status, "revoking again changes nothing: %s", r.Body)
	_, err = admin.CoreV1().Secrets("kube-system").Get(ctx, "bootstrap-token-"+tok.TokenID, metav1.GetOptions{})
	require.Error(t, err, "the bootstrap Secret is deleted")
	r = b.APICall(t, http.MethodGet, fmt.Sprintf("%s/%d", base, tok.ID), key, "")
	require.Equal(t, "revoked", handlerstest.DecodeAs[apiJoinToken](t, r).Status)
	r = b.APICall(t, http.MethodGet, base+"/12345678", key, "")
	require.Equal(t, http.StatusNotFound, r.Status, r.Body)
}
