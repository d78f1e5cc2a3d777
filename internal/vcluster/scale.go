package vcluster

import (
	"context"
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/kubebyon/kubebyon/queries"
)

// The control plane of a cluster is the StatefulSet the chart names after
// the release, in the cluster's namespace. Suspending a cluster scales it
// to 0 and resuming scales it back, through the scale subresource: the
// rest of the StatefulSet stays as Helm wrote it.

// ControlPlaneReplicas is the replica count the control plane's
// StatefulSet asks for. A missing StatefulSet is a NotFound error.
func ControlPlaneReplicas(ctx context.Context, client kubernetes.Interface, c queries.Cluster) (int32, error) {
	ns, name := Namespace(c), ReleaseName(c)
	sc, err := client.AppsV1().StatefulSets(ns).GetScale(ctx, name, metav1.GetOptions{})
	if err != nil {
		return 0, fmt.Errorf("read the scale of statefulset %s/%s: %w", ns, name, err)
	}
	return sc.Spec.Replicas, nil
}

// ScaleControlPlane makes the control plane's StatefulSet ask for
// replicas; it does nothing when it does already. A missing StatefulSet
// is a NotFound error.
func ScaleControlPlane(ctx context.Context, client kubernetes.Interface, c queries.Cluster, replicas int32) error {
	ns, name := Namespace(c), ReleaseName(c)
	sts := client.AppsV1().StatefulSets(ns)
	sc, err := sts.GetScale(ctx, name, metav1.GetOptions{})
	if err != nil {
		return fmt.Errorf("read the scale of statefulset %s/%s: %w", ns, name, err)
	}
	if sc.Spec.Replicas == replicas {
		return nil
	}
	// The scale read carries its resourceVersion: a change made meanwhile
	// fails this update as a conflict, and the job's retry reads again.
	sc.Spec.Replicas = replicas
	if _, err := sts.UpdateScale(ctx, name, sc, metav1.UpdateOptions{}); err != nil {
		return fmt.Errorf("scale statefulset %s/%s to %d: %w", ns, name, replicas, err)
	}
	return nil
}
