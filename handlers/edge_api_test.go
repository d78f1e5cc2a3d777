package handlers_test

import (
	"context"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/kubebyon/kubebyon/handlers/handlerstest"
	"github.com/kubebyon/kubebyon/internal/audit"
	"github.com/kubebyon/kubebyon/internal/edge"
	"github.com/kubebyon/kubebyon/internal/edgewire"
	"github.com/kubebyon/kubebyon/queries"
)

// TestEdgeConfigAPI checks the edge config API: only a working edge token
// reads it; it serves every cluster's route with the state's version; a
// poll naming the current version waits, and answers at once when a
// cluster is created, else 304 when its wait is over.
func TestEdgeConfigAPI(t *testing.T) {
	t.Parallel()
	b := handlerstest.Setup(t)
	b.ConnectHost(t)
	c, _ := b.SignedUpUser(t, "edge-owner")
	first := b.NewCluster(t, c, "first")
	tok := b.EdgeToken(t, "edge-1")
	apiKey := c.CreateKey("not for the edge")

	for _, tt := range []struct {
		name, token string
	}{
		{"no token", ""},
		{"an API key", apiKey},
		{"a wrong secret", wrongLast(tok.Value)},
	} {
		r := b.APICall(t, http.MethodGet, "/api/v1/edge/config", tt.token, "")
		require.Equal(t, http.StatusUnauthorized, r.Status, "%s: %s", tt.name, r.Body)
		require.Equal(t, "unauthorized", handlerstest.DecodeAs[handlerstest.APIErrorJSON](t, r).Error.Code, tt.name)
		require.Contains(t, r.Body, "edge token", tt.name)
	}

	r := b.APICall(t, http.MethodGet, "/api/v1/edge/config", tok.Value, "")
	require.Equal(t, http.StatusOK, r.Status, r.Body)
	st := handlerstest.DecodeAs[edgewire.State](t, r)
	require.NotEmpty(t, st.Version)
	require.Equal(t, strconv.Quote(st.Version), r.Header.Get("ETag"))
	require.Len(t, st.Routes, 1)
	require.Equal(t, first.ID, st.Routes[0].ClusterID)
	require.Equal(t, first.Slug+".clusters.test", st.Routes[0].Host)
	require.Empty(t, st.Routes[0].API, "no host node is Ready yet")

	// The edge has this version: without a wait, nothing new.
	r = b.APICall(t, http.MethodGet, "/api/v1/edge/config?version="+st.Version, tok.Value, "")
	require.Equal(t, http.StatusNotModified, r.Status, r.Body)
	r = b.APICall(t, http.MethodGet, "/api/v1/edge/config?version="+st.Version+"&wait=1", tok.Value, "")
	require.Equal(t, http.StatusNotModified, r.Status, r.Body)
	for _, wait := range []string{"soon", "-1", "3600"} {
		r = b.APICall(t, http.MethodGet, "/api/v1/edge/config?wait="+wait, tok.Value, "")
		require.Equal(t, http.StatusBadRequest, r.Status, r.Body)
		require.Contains(t, r.Body, "wait must be", wait)
		require.NotEmpty(t, r.Header.Get("X-Max-Wait"))
	}

	// A long poll answers as soon as a cluster is created.
	polled := make(chan handlerstest.APIResponse, 1)
	start := time.Now()
	go func() {
		polled <- b.APICall(t, http.MethodGet, "/api/v1/edge/config?version="+st.Version+"&wait=20", tok.Value, "")
	}()
	time.Sleep(300 * time.Millisecond) // the poll is waiting
	second := b.NewCluster(t, c, "second")
	r = <-polled
	require.Equal(t, http.StatusOK, r.Status, r.Body)
	require.Less(t, time.Since(start), 10*time.Second)
	next := handlerstest.DecodeAs[edgewire.State](t, r)
	require.NotEqual(t, st.Version, next.Version)
	require.Len(t, next.Routes, 2)
	require.Equal(t, second.ID, next.Routes[1].ClusterID)

	// A revoked token reads nothing more.
	require.NoError(t, (&edge.Service{Pool: b.Pool}).RevokeToken(context.Background(), tok.Token.ID, audit.Actor{}))
	r = b.APICall(t, http.MethodGet, "/api/v1/edge/config", tok.Value, "")
	require.Equal(t, http.StatusUnauthorized, r.Status, r.Body)
}

// TestEdgeStatusAPI checks that an edge's report is stored per token and
// name, with the address it came from, and that a bad one is refused with
// the field named.
func TestEdgeStatusAPI(t *testing.T) {
	t.Parallel()
	b := handlerstest.Setup(t)
	tok := b.EdgeToken(t, "edge-2")

	report := `{"name":"edge-a","haproxy_version":"2.6.12","applied_version":"abc","backends_up":3,"backends_down":1,
		"down":[{"cluster_id":7,"backend":"api","up":0,"down":2}],"last_error":""}`
	r := b.APICall(t, http.MethodPost, "/api/v1/edge/status", tok.Value, report)
	require.Equal(t, http.StatusNoContent, r.Status, r.Body)
	r = b.APICall(t, http.MethodPost, "/api/v1/edge/status", tok.Value, strings.Replace(report, `"last_error":""`, `"last_error":"reload failed"`, 1))
	require.Equal(t, http.StatusNoContent, r.Status, r.Body)

	insts, err := queries.New(b.Pool).EdgeInstanceList(context.Background())
	require.NoError(t, err)
	require.Len(t, insts, 1, "one row per token and name")
	in := insts[0]
	require.Equal(t, "edge-a", in.Name)
	require.Equal(t, "edge-2", in.TokenName)
	require.Equal(t, "127.0.0.1", in.Address)
	require.Equal(t, "2.6.12", in.HaproxyVersion)
	require.Equal(t, "abc", in.AppliedVersion)
	require.EqualValues(t, 3, in.BackendsUp)
	require.EqualValues(t, 1, in.BackendsDown)
	require.JSONEq(t, `[{"cluster_id":7,"backend":"api","up":0,"down":2}]`, string(in.Down))
	require.Equal(t, "reload failed", in.LastError)

	for _, tt := range []struct{ name, body, field string }{
		{"no name", `{"name":" "}`, "name"},
		{"a long name", fmt.Sprintf(`{"name":%q}`, strings.Repeat("e", 101)), "name"},
		{"negative counts", `{"name":"edge-a","backends_down":-1}`, "down"},
	} {
		r := b.APICall(t, http.MethodPost, "/api/v1/edge/status", tok.Value, tt.body)
		require.Equal(t, http.StatusUnprocessableEntity, r.Status, "%s: %s", tt.name, r.Body)
		require.Contains(t, handlerstest.DecodeAs[handlerstest.APIErrorJSON](t, r).Error.Fields, tt.field, tt.name)
	}
	r = b.APICall(t, http.MethodPost, "/api/v1/edge/status", tok.Value, `{"name":"edge-a","unknown":1}`)
	require.Equal(t, http.StatusBadRequest, r.Status, r.Body)
	r = b.APICall(t, http.MethodPost, "/api/v1/edge/status", "", report)
	require.Equal(t, http.StatusUnauthorized, r.Status, r.Body)
}

// wrongLast is token with its last character changed (to another one,
// whatever it was).
func wrongLast(token string) string {
	last := "a"
	if strings.HasSuffix(token, "a") {
		last = "b"
	}
	return token[:len(token)-1] + last
}
