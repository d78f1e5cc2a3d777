package testenv_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"

	"github.com/kubebyon/kubebyon/internal/testenv"
)

// TestExternalDNSCRD checks that the DNSEndpoint CRD installs (a second
// time too) and that the apiserver then stores DNSEndpoints.
func TestExternalDNSCRD(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	kube := testenv.HostKube(t)
	testenv.ExternalDNSCRD(t, kube.Config)
	testenv.ExternalDNSCRD(t, kube.Config)

	const ns = "testenv-externaldns"
	_, err := kube.Client(t).CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{})
	require.NoError(t, err)
	client, err := dynamic.NewForConfig(kube.Config)
	require.NoError(t, err)
	endpoints := client.Resource(schema.GroupVersionResource{Group: "externaldns.k8s.io", Version: "v1alpha1", Resource: "dnsendpoints"}).Namespace(ns)
	_, err = endpoints.Create(ctx, &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "externaldns.k8s.io/v1alpha1",
		"kind":       "DNSEndpoint",
		"metadata":   map[string]any{"name": "web"},
		"spec": map[string]any{
			"endpoints": []any{map[string]any{
				"dnsName":    "web.clusters.test",
				"recordType": "A",
				"targets":    []any{"192.0.2.1"},
			}},
		},
	}}, metav1.CreateOptions{})
	require.NoError(t, err)

	got, err := endpoints.Get(ctx, "web", metav1.GetOptions{})
	require.NoError(t, err)
	eps, _, err := unstructured.NestedSlice(got.Object, "spec", "endpoints")
	require.NoError(t, err)
	require.Len(t, eps, 1)
	ep := eps[0].(map[string]any)
	require.Equal(t, "web.clusters.test", ep["dnsName"])
	require.Equal(t, "A", ep["recordType"])
	require.Equal(t, []any{"192.0.2.1"}, ep["targets"])
}
