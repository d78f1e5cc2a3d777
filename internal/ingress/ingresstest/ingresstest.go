// Package ingresstest plays, for tests, what a virtual cluster's
// controllers and kubelets would do with managed ingress: the test
// apiservers run none.
package ingresstest

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/kubebyon/kubebyon/internal/ingress"
)

// PlayRollout does what the DaemonSet controller would: the ingress
// controller runs on ready of nodes nodes. cert-manager comes up too
// (PlayCertManager).
func PlayRollout(t testing.TB, kc kubernetes.Interface, ready, nodes int32) {
	t.Helper()
	ctx := context.Background()
	list, err := kc.AppsV1().DaemonSets(ingress.Namespace).List(ctx, metav1.ListOptions{})
	require.NoError(t, err)
	require.Len(t, list.Items, 1)
	ds := list.Items[0]
	ds.Status.ObservedGeneration = ds.Generation
	ds.Status.DesiredNumberScheduled, ds.Status.CurrentNumberScheduled = nodes, nodes
	ds.Status.UpdatedNumberScheduled, ds.Status.NumberReady, ds.Status.NumberAvailable = nodes, ready, ready
	_, err = kc.AppsV1().DaemonSets(ingress.Namespace).UpdateStatus(ctx, &ds, metav1.UpdateOptions{})
	require.NoError(t, err)
	PlayCertManager(t, kc)
}

// PlayCertManager does what the Deployment controller and the pods would
// for cert-manager: its Deployments are available. Its webhooks, which a
// test's apiserver cannot call (no pods run), go.
func PlayCertManager(t testing.TB, kc kubernetes.Interface) {
	t.Helper()
	ctx := context.Background()
	deps, err := kc.AppsV1().Deployments(ingress.CertManagerNamespace).List(ctx, metav1.ListOptions{})
	require.NoError(t, err)
	require.Len(t, deps.Items, 3, "controller, cainjector and webhook")
	for _, d := range deps.Items {
		d.Status.ObservedGeneration, d.Status.Replicas, d.Status.UpdatedReplicas, d.Status.AvailableReplicas, d.Status.ReadyReplicas = d.Generation, 1, 1, 1, 1
		_, err := kc.AppsV1().Deployments(ingress.CertManagerNamespace).UpdateStatus(ctx, &d, metav1.UpdateOptions{})
		require.NoError(t, err)
	}
	sel := metav1.ListOptions{LabelSelector: "app.kubernetes.io/instance=" + ingress.CertManagerRelease}
	require.NoError(t, kc.AdmissionregistrationV1().ValidatingWebhookConfigurations().DeleteCollection(ctx, metav1.DeleteOptions{}, sel))
	require.NoError(t, kc.AdmissionregistrationV1().MutatingWebhookConfigurations().DeleteCollection(ctx, metav1.DeleteOptions{}, sel))
}
