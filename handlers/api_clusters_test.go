package handlers_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/kubebyon/kubebyon/handlers/handlerstest"
)

// apiClusterJSON is a cluster as the API answers it.
type apiClusterJSON struct {
	ID                 int64   `json:"id"`
	Name               string  `json:"name"`
	Slug               string  `json:"slug"`
	Description        string  `json:"description"`
	KubernetesVersion  string  `json:"kubernetes_version"`
	PublicAccessMode   string  `json:"public_access_mode"`
	Status             string  `json:"status"`
	StatusMessage      string  `json:"status_message"`
	Endpoint           string  `json:"endpoint"`
	Generation         int64   `json:"generation"`
	ObservedGeneration int64   `json:"observed_generation"`
	CreatedAt          string  `json:"created_at"`
	ReadyAt            *string `json:"ready_at"`
	HTTPSNodePort      *int32  `json:"https_node_port"`
	KonnectivityPort   *int32  `json:"konnectivity_node_port"`
}

func TestAPIClusters(t *testing.T) {
	t.Parallel()
	b := handlerstest.Setup(t)
	b.ConnectHost(t)
	c, email := b.SignedUpUser(t, "automator")
	key := c.CreateKey("terraform")

	r := b.APICall(t, http.MethodGet, "/api/v1/clusters", key, "")
	require.Equal(t, http.StatusOK, r.Status, r.Body)
	require.JSONEq(t, `{"clusters":[]}`, r.Body)

	r = b.APICall(t, http.MethodPost, "/api/v1/clusters", key, `{"name":"api-made","kubernetes_version":"v1.33.4","public_access_mode":"loadbalancer","description":"from CI"}`)
	require.Equal(t, http.StatusCreated, r.Status, r.Body)
	var fields map[string]any
	require.NoError(t, json.Unmarshal([]byte(r.Body), &fields))
	require.ElementsMatch(t, []string{"id", "name", "slug", "description", "kubernetes_version", "public_access_mode", "status",
		"status_message", "endpoint", "generation", "observed_generation", "created_at", "ready_at", "node_quota_enabled",
		"https_node_port", "konnectivity_node_port", "load_balancer_address", "backend"}, handlerstest.MapKeys(fields))
	require.Equal(t, "vcluster", fields["backend"], "the platform's default backend")
	require.Nil(t, fields["https_node_port"], "a LoadBalancer cluster has no NodePorts: null")
	require.Nil(t, fields["konnectivity_node_port"])
	created := handlerstest.DecodeAs[apiClusterJSON](t, r)
	require.Equal(t, fmt.Sprintf("/api/v1/clusters/%d", created.ID), r.Header.Get("Location"))
	require.Equal(t, "api-made", created.Name)
	require.True(t, strings.HasPrefix(created.Slug, "api-made-"))
	require.Equal(t, "v1.33.4", created.KubernetesVersion)
	require.Equal(t, "loadbalancer", created.PublicAccessMode)
	require.Equal(t, "from CI", created.Description)
	require.Equal(t, "pending", created.Status)
	require.EqualValues(t, 1, created.Generation)
	require.Nil(t, created.ReadyAt)
	require.Equal(t, 1, b.ReconcileJobs(t, created.ID))
	require.Equal(t, b.UserID(t, email), b.Cluster(t, created.ID).OwnerID)

	// Defaults fill what is left out.
	r = b.APICall(t, http.MethodPost, "/api/v1/clusters", key, `{"name":"minimal"}`)
	require.Equal(t, http.StatusCreated, r.Status, r.Body)
	minimal := handlerstest.DecodeAs[apiClusterJSON](t, r)
	require.Equal(t, "v1.34.0", minimal.KubernetesVersion)
	require.Equal(t, "nodeport", minimal.PublicAccessMode)
	row := b.Cluster(t, minimal.ID)
	require.True(t, row.NodePort.Valid && row.KonnectivityNodePort.Valid, "a NodePort cluster has both ports allocated")
	require.Equal(t, &row.NodePort.Int32, minimal.HTTPSNodePort, "the API shows the NodePorts behind the endpoint")
	require.Equal(t, &row.KonnectivityNodePort.Int32, minimal.KonnectivityPort)

	r = b.APICall(t, http.MethodPost, "/api/v1/clusters", key, `{"name":"Bad_Name","kubernetes_version":"v0.1.0"}`)
	require.Equal(t, http.StatusUnprocessableEntity, r.Status, r.Body)
	bad := handlerstest.DecodeAs[handlerstest.APIErrorJSON](t, r)
	require.Equal(t, "invalid", bad.Error.Code)
	require.Equal(t, "Some fields are not valid.", bad.Error.Message)
	require.Equal(t, map[string]string{
		"name":               "Use lowercase letters, digits and hyphens, starting and ending with a letter or digit.",
		"kubernetes_version": "Choose one of the Kubernetes versions offered.",
	}, bad.Error.Fields)

	r = b.APICall(t, http.MethodPost, "/api/v1/clusters", key, `{"name":"api-made"}`)
	require.Equal(t, http.StatusUnprocessableEntity, r.Status)
	require.Equal(t, "You already have a cluster with this name.", handlerstest.DecodeAs[handlerstest.APIErrorJSON](t, r).Error.Fields["name"])

	for _, body := range []string{`{"name":`, `{"name":"x","size":3}`, `["x"]`, `{"name":"x"} {}`} {
		r = b.APICall(t, http.MethodPost, "/api/v1/clusters", key, body)
		require.Equal(t, http.StatusBadRequest, r.Status, body)
		require.Contains(t, r.Body, "The request body must be one JSON object", body)
	}

	r = b.APICall(t, http.MethodGet, fmt.Sprintf("/api/v1/clusters/%d", created.ID), key, "")
	require.Equal(t, http.StatusOK, r.Status)
	require.Equal(t, created, handlerstest.DecodeAs[apiClusterJSON](t, r))

	type clusterPage struct {
		Clusters []apiClusterJSON `json:"clusters"`
		Next     string           `json:"next"`
	}
	r = b.APICall(t, http.MethodGet, "/api/v1/clusters", key, "")
	list := handlerstest.DecodeAs[clusterPage](t, r)
	require.Len(t, list.Clusters, 2)
	require.Equal(t, minimal.ID, list.Clusters[0].ID, "newest first")
	require.Empty(t, list.Next, "one page")
	// A page at a time: the cursor of the first page of one reads the rest.
	r = b.APICall(t, http.MethodGet, "/api/v1/clusters?limit=1", key, "")
	list = handlerstest.DecodeAs[clusterPage](t, r)
	require.Len(t, list.Clusters, 1)
	require.Equal(t, minimal.ID, list.Clusters[0].ID)
	require.NotEmpty(t, list.Next)
	r = b.APICall(t, http.MethodGet, "/api/v1/clusters?limit=1&cursor="+list.Next, key, "")
	list = handlerstest.DecodeAs[clusterPage](t, r)
	require.Len(t, list.Clusters, 1)
	require.Equal(t, "api-made", list.Clusters[0].Name)
	require.Empty(t, list.Next, "the last page")
	for _, query := range []string{"limit=0", "limit=101", "limit=x", "cursor=x", "cursor=-3"} {
		r = b.APICall(t, http.MethodGet, "/api/v1/clusters?"+query, key, "")
		require.Equal(t, http.StatusBadRequest, r.Status, query)
	}

	// PATCH changes only what it names.
	clusterPath := fmt.Sprintf("/api/v1/clusters/%d", created.ID)
	r = b.APICall(t, http.MethodPatch, clusterPath, key, `{"description":"still from CI"}`)
	require.Equal(t, http.StatusOK, r.Status, r.Body)
	patched := handlerstest.DecodeAs[apiClusterJSON](t, r)
	require.Equal(t, "still from CI", patched.Description)
	require.Equal(t, "v1.33.4", patched.KubernetesVersion)
	require.Equal(t, "loadbalancer", patched.PublicAccessMode)
	require.Equal(t, created.Generation, patched.Generation)
	r = b.APICall(t, http.MethodPatch, clusterPath, key, `{"kubernetes_version":"v1.34.0","name":"api-made"}`)
	require.Equal(t, http.StatusOK, r.Status, r.Body)
	patched = handlerstest.DecodeAs[apiClusterJSON](t, r)
	require.Equal(t, "v1.34.0", patched.KubernetesVersion)
	require.Equal(t, "still from CI", patched.Description)
	require.Equal(t, created.Generation+1, patched.Generation)
	r = b.APICall(t, http.MethodPatch, clusterPath, key, `{"name":"renamed"}`)
	require.Equal(t, http.StatusUnprocessableEntity, r.Status)
	require.Equal(t, "A cluster's name cannot be changed.", handlerstest.DecodeAs[handlerstest.APIErrorJSON](t, r).Error.Fields["name"])

	// The kubeconfig once ready.
	r = b.APICall(t, http.MethodGet, clusterPath+"/kubeconfig", key, "")
	require.Equal(t, http.StatusConflict, r.Status)
	require.Equal(t, "The kubeconfig can be downloaded once the cluster is ready.", handlerstest.DecodeAs[handlerstest.APIErrorJSON](t, r).Error.Message)
	cl := b.Cluster(t, created.ID)
	handlerstest.PutKubeconfigSecret(t, cl)
	b.MarkReady(t, cl)
	r = b.APICall(t, http.MethodGet, clusterPath+"/kubeconfig", key, "")
	require.Equal(t, http.StatusOK, r.Status, r.Body)
	require.Equal(t, "application/yaml", r.Header.Get("Content-Type"))
	require.Equal(t, `attachment; filename="api-made.kubeconfig"`, r.Header.Get("Content-Disposition"))
	require.Equal(t, "no-store", r.Header.Get("Cache-Control"))
	handlerstest.RequireKubeconfigFor(t, cl, []byte(r.Body))
	r = b.APICall(t, http.MethodGet, clusterPath, key, "")
	ready := handlerstest.DecodeAs[apiClusterJSON](t, r)
	require.Equal(t, "ready", ready.Status)
	require.Equal(t, cl.Slug+".clusters.test", ready.Endpoint)
	require.NotNil(t, ready.ReadyAt)

	// DELETE needs no typed name.
	r = b.APICall(t, http.MethodDelete, clusterPath, key, "")
	require.Equal(t, http.StatusAccepted, r.Status, r.Body)
	require.Equal(t, "deleting", handlerstest.DecodeAs[apiClusterJSON](t, r).Status)
	require.True(t, b.Cluster(t, created.ID).DeleteRequestedAt.Valid)
	r = b.APICall(t, http.MethodPatch, clusterPath, key, `{"description":"too late"}`)
	require.Equal(t, http.StatusConflict, r.Status)
	require.Contains(t, r.Body, "being deleted")
	require.Contains(t, b.Audits(t, b.UserID(t, email)), "cluster.delete")
}

func TestAPIClustersAuthAndIsolation(t *testing.T) {
	t.Parallel()
	b := handlerstest.Setup(t)
	b.ConnectHost(t)
	owner, _ := b.SignedUpUser(t, "owner")
	other, _ := b.SignedUpUser(t, "other")
	ownerKey, otherKey := owner.CreateKey("owner key"), other.CreateKey("other key")
	cl := b.NewCluster(t, owner, "private")
	handlerstest.PutKubeconfigSecret(t, cl)
	b.MarkReady(t, cl)
	path := fmt.Sprintf("/api/v1/clusters/%d", cl.ID)

	calls := []struct{ method, path, body string }{
		{http.MethodGet, "/api/v1/clusters", ""},
		{http.MethodPost, "/api/v1/clusters", `{"name":"sneaky"}`},
		{http.MethodGet, path, ""},
		{http.MethodPatch, path, `{"description":"mine now"}`},
		{http.MethodDelete, path, ""},
		{http.MethodGet, path + "/kubeconfig", ""},
	}
	for _, call := range calls {
		handlerstest.RequireUnauthorized(t, b.APICall(t, call.method, call.path, "", call.body), call.method+" "+call.path)
		// A browser session counts for nothing on the API.
		req, err := http.NewRequest(call.method, b.Server.URL+call.path, strings.NewReader(call.body))
		require.NoError(t, err)
		resp, err := owner.HTTP.Do(req)
		require.NoError(t, err)
		resp.Body.Close()
		require.Equal(t, http.StatusUnauthorized, resp.StatusCode, call.method+" "+call.path)
	}
	for _, call := range calls[2:] {
		r := b.APICall(t, call.method, call.path, otherKey, call.body)
		require.Equal(t, http.StatusNotFound, r.Status, call.method+" "+call.path)
		e := handlerstest.DecodeAs[handlerstest.APIErrorJSON](t, r).Error
		require.Equal(t, "not_found", e.Code)
		require.Equal(t, "Cluster not found", e.Message, "says what was not found: "+call.method+" "+call.path)
	}
	r := b.APICall(t, http.MethodGet, "/api/v1/clusters", otherKey, "")
	require.JSONEq(t, `{"clusters":[]}`, r.Body)
	r = b.APICall(t, http.MethodGet, "/api/v1/clusters/not-a-number", ownerKey, "")
	require.Equal(t, http.StatusNotFound, r.Status)
	r = b.APICall(t, http.MethodGet, "/api/v1/clusters/1/nothing-here", "", "")
	require.Equal(t, http.StatusNotFound, r.Status, "unknown paths stay 404, key or not")
	require.Equal(t, "application/json", r.Header.Get("Content-Type"))

	got := b.Cluster(t, cl.ID)
	require.Equal(t, "ready", got.Status)
	require.Empty(t, got.Description)
	require.False(t, got.DeleteRequestedAt.Valid)
	r = b.APICall(t, http.MethodGet, path, ownerKey, "")
	require.Equal(t, http.StatusOK, r.Status)
}
