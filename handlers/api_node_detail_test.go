package handlers_test

import (
	"context"
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubebyon/kubebyon/handlers/handlerstest"
	"github.com/kubebyon/kubebyon/internal/ingress"
)

type apiNodeDetailJSON struct {
	Name       string `json:"name"`
	Status     string `json:"status"`
	Conditions []struct {
		Type   string `json:"type"`
		Status string `json:"status"`
		Reason string `json:"reason"`
	} `json:"conditions"`
	Resources []struct {
		Name        string `json:"name"`
		Capacity    string `json:"capacity"`
		Allocatable string `json:"allocatable"`
	} `json:"resources"`
	Labels map[string]string `json:"labels"`
	Pods   []struct {
		Namespace  string `json:"namespace"`
		Name       string `json:"name"`
		Containers int    `json:"containers"`
	} `json:"pods"`
	Ingress struct {
		Enabled       bool   `json:"enabled"`
		PublicAddress string `json:"public_address"`
	} `json:"ingress"`
	Recorded        bool    `json:"recorded"`
	LastSeen        *string `json:"last_seen"`
	LatestOperation *struct {
		Kind string `json:"kind"`
	} `json:"latest_operation"`
}

// TestAPINodePagesAndDetail: a ready cluster's nodes read live by name, a
// page at a time (the name is the cursor); one node reads with what its
// console page shows; its managed ingress setting is set and read back,
// a bad address refused at its field.
func TestAPINodePagesAndDetail(t *testing.T) {
	t.Parallel()
	b := handlerstest.Setup(t)
	ctx := context.Background()
	c, _ := b.SignedUpUser(t, "nodedetail")
	key := c.CreateKey("nodes")
	cl, kc := b.VirtualCluster(t, c, "detail")
	for _, n := range []string{"worker-c", "worker-a", "worker-b"} {
		handlerstest.AddNode(t, kc, n, corev1.ConditionTrue, time.Now())
	}
	handlerstest.AddBarePod(t, kc, "worker-a", "scratch")
	base := fmt.Sprintf("/api/v1/clusters/%d/nodes", cl.ID)

	type nodePage struct {
		Nodes []struct {
			Name string `json:"name"`
		} `json:"nodes"`
		Next string `json:"next"`
	}
	r := b.APICall(t, http.MethodGet, base+"?limit=2", key, "")
	require.Equal(t, http.StatusOK, r.Status, r.Body)
	page := handlerstest.DecodeAs[nodePage](t, r)
	require.Len(t, page.Nodes, 2)
	require.Equal(t, "worker-a", page.Nodes[0].Name, "by name")
	require.Equal(t, "worker-b", page.Nodes[1].Name)
	require.NotEmpty(t, page.Next)
	r = b.APICall(t, http.MethodGet, base+"?limit=2&cursor="+page.Next, key, "")
	require.Equal(t, http.StatusOK, r.Status, r.Body)
	page = handlerstest.DecodeAs[nodePage](t, r)
	require.Len(t, page.Nodes, 1)
	require.Equal(t, "worker-c", page.Nodes[0].Name)
	require.Empty(t, page.Next, "the last page")
	r = b.APICall(t, http.MethodGet, base+"?cursor=Not_A_Node", key, "")
	require.Equal(t, http.StatusBadRequest, r.Status, r.Body)

	r = b.APICall(t, http.MethodGet, base+"/worker-a", key, "")
	require.Equal(t, http.StatusOK, r.Status, r.Body)
	d := handlerstest.DecodeAs[apiNodeDetailJSON](t, r)
	require.Equal(t, "worker-a", d.Name)
	require.Equal(t, "Ready", d.Status)
	require.Len(t, d.Conditions, 1)
	require.Equal(t, "KubeletReady", d.Conditions[0].Reason)
	require.Len(t, d.Resources, 2)
	require.Equal(t, "cpu", d.Resources[0].Name)
	require.Equal(t, "4", d.Resources[0].Capacity)
	require.Equal(t, "3500m", d.Resources[0].Allocatable)
	require.Equal(t, "linux", d.Labels["kubernetes.io/os"])
	require.Len(t, d.Pods, 1)
	require.Equal(t, "bare", d.Pods[0].Namespace)
	require.Equal(t, "scratch", d.Pods[0].Name)
	require.False(t, d.Ingress.Enabled)
	require.False(t, d.Recorded)
	require.Nil(t, d.LastSeen)
	require.Nil(t, d.LatestOperation)
	r = b.APICall(t, http.MethodGet, base+"/worker-z", key, "")
	require.Equal(t, http.StatusNotFound, r.Status, r.Body)

	// Its managed ingress setting.
	r = b.APICall(t, http.MethodPut, base+"/worker-a/ingress", key, `{"enabled":true,"public_address":"300.1.2.3"}`)
	require.Equal(t, http.StatusUnprocessableEntity, r.Status, r.Body)
	require.Equal(t, map[string]string{"public_address": "Enter an IPv4 or IPv6 address."}, handlerstest.DecodeAs[handlerstest.APIErrorJSON](t, r).Error.Fields)
	r = b.APICall(t, http.MethodPut, base+"/worker-a/ingress", key, `{"public_address":"203.0.113.7"}`)
	require.Equal(t, http.StatusUnprocessableEntity, r.Status, r.Body)
	require.Contains(t, handlerstest.DecodeAs[handlerstest.APIErrorJSON](t, r).Error.Fields, "enabled")
	n, err := kc.CoreV1().Nodes().Get(ctx, "worker-a", metav1.GetOptions{})
	require.NoError(t, err)
	require.NotContains(t, n.Labels, ingress.NodeLabel, "nothing was changed")

	r = b.APICall(t, http.MethodPut, base+"/worker-a/ingress", key, `{"enabled":true,"public_address":" 203.0.113.7 "}`)
	require.Equal(t, http.StatusOK, r.Status, r.Body)
	require.JSONEq(t, `{"enabled":true,"public_address":"203.0.113.7"}`, r.Body)
	n, err = kc.CoreV1().Nodes().Get(ctx, "worker-a", metav1.GetOptions{})
	require.NoError(t, err)
	require.Equal(t, "true", n.Labels[ingress.NodeLabel])
	require.Equal(t, "203.0.113.7", n.Annotations[ingress.PublicAddressAnnotation])
	require.Equal(t, 1, b.AuditCount(t, "node.ingress"))
	r = b.APICall(t, http.MethodGet, base+"/worker-a", key, "")
	d = handlerstest.DecodeAs[apiNodeDetailJSON](t, r)
	require.True(t, d.Ingress.Enabled)
	require.Equal(t, "203.0.113.7", d.Ingress.PublicAddress)
	_, body := c.Get(fmt.Sprintf("/clusters/%d/nodes/worker-a", cl.ID))
	require.Contains(t, body, `data-testid="node-ingress-badge"`, "the console shows the API's setting")

	r = b.APICall(t, http.MethodPut, base+"/worker-a/ingress", key, `{"enabled":false}`)
	require.Equal(t, http.StatusOK, r.Status, r.Body)
	require.JSONEq(t, `{"enabled":false,"public_address":""}`, r.Body)
	n, err = kc.CoreV1().Nodes().Get(ctx, "worker-a", metav1.GetOptions{})
	require.NoError(t, err)
	require.NotContains(t, n.Labels, ingress.NodeLabel)

	// The latest drain or deletion shows on the node.
	r = b.APICall(t, http.MethodPost, base+"/worker-b/drain", key, `{"timeout_seconds":30}`)
	require.Equal(t, http.StatusAccepted, r.Status, r.Body)
	r = b.APICall(t, http.MethodGet, base+"/worker-b", key, "")
	d = handlerstest.DecodeAs[apiNodeDetailJSON](t, r)
	require.NotNil(t, d.LatestOperation)
	require.Equal(t, "drain", d.LatestOperation.Kind)
}
