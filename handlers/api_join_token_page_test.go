package handlers_test

import (
	"context"
	"fmt"
	"net/http"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/kubebyon/kubebyon/handlers/handlerstest"
	"github.com/kubebyon/kubebyon/queries"
)

// TestAPIJoinTokenPages: a cluster's join tokens read newest first, a
// page at a time, each with its command while active and the machines
// that joined with it; a cursor the list did not give is 400.
func TestAPIJoinTokenPages(t *testing.T) {
	t.Parallel()
	b := handlerstest.Setup(t)
	ctx := context.Background()
	q := queries.New(b.Pool)
	o := newAPIOwner(t, b, "tokenpages", "ready")
	c, key, id := o.c, o.key, o.id
	var ids []int64
	for i, tokenID := range []string{"aaaaaa", "bbbbbb", "cccccc"} {
		jt, err := q.JoinTokenCreate(ctx, queries.JoinTokenCreateParams{
			ClusterID: id, TokenID: tokenID, TokenHash: "hash-" + tokenID, Description: fmt.Sprintf("rack %d", i+1),
			SealedToken: b.Box.Seal([]byte(tokenID + ".0123456789abcdef")),
		})
		require.NoError(t, err)
		ids = append(ids, jt.ID)
	}
	_, err := q.JoinTokenNodeRecord(ctx, queries.JoinTokenNodeRecordParams{TokenID: ids[1], NodeName: "worker-b", CsrName: "csr-b"})
	require.NoError(t, err)
	_, err = b.Pool.Exec(ctx, `UPDATE join_tokens SET revoked_at = now() WHERE id = $1`, ids[0])
	require.NoError(t, err)

	type tokenPage struct {
		JoinTokens []struct {
			ID          int64  `json:"id"`
			Description string `json:"description"`
			Status      string `json:"status"`
			Command     string `json:"command"`
			Nodes       []struct {
				Name       string `json:"name"`
				Registered bool   `json:"registered"`
			} `json:"nodes"`
		} `json:"join_tokens"`
		Next string `json:"next"`
	}
	base := o.path + "/join-tokens"
	r := b.APICall(t, http.MethodGet, base+"?limit=2", key, "")
	require.Equal(t, http.StatusOK, r.Status, r.Body)
	page := handlerstest.DecodeAs[tokenPage](t, r)
	require.Len(t, page.JoinTokens, 2)
	require.Equal(t, []int64{ids[2], ids[1]}, []int64{page.JoinTokens[0].ID, page.JoinTokens[1].ID}, "newest first")
	require.Contains(t, page.JoinTokens[0].Command, "/join/cccccc.0123456789abcdef")
	require.Empty(t, page.JoinTokens[0].Nodes)
	require.Len(t, page.JoinTokens[1].Nodes, 1)
	require.Equal(t, "worker-b", page.JoinTokens[1].Nodes[0].Name)
	require.False(t, page.JoinTokens[1].Nodes[0].Registered)
	require.NotEmpty(t, page.Next)

	r = b.APICall(t, http.MethodGet, base+"?limit=2&cursor="+page.Next, key, "")
	require.Equal(t, http.StatusOK, r.Status, r.Body)
	page = handlerstest.DecodeAs[tokenPage](t, r)
	require.Len(t, page.JoinTokens, 1)
	require.Equal(t, ids[0], page.JoinTokens[0].ID)
	require.Equal(t, "revoked", page.JoinTokens[0].Status)
	require.Empty(t, page.JoinTokens[0].Command, "no command once revoked")
	require.Empty(t, page.Next, "the last page")

	r = b.APICall(t, http.MethodGet, base+"?cursor=abc", key, "")
	require.Equal(t, http.StatusBadRequest, r.Status, r.Body)
	r = b.APICall(t, http.MethodGet, base+"?limit=101", key, "")
	require.Equal(t, http.StatusBadRequest, r.Status, r.Body)
	// The console's page lists them all still.
	_, body := c.Get(fmt.Sprintf("/clusters/%d/tokens", id))
	for _, d := range []string{"rack 1", "rack 2", "rack 3"} {
		require.Contains(t, body, d)
	}
}
