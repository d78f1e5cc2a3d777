package ingress

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
)

// Rollout is where the controller's DaemonSet stands in the virtual
// cluster.
type Rollout struct {
	// Desired is the number of nodes that should run the controller,
	// Ready those where it runs and is available at the current version.
	Desired, Ready int32
	// Done: every DaemonSet of the release is rolled out. A DaemonSet with
	// no nodes to run on is done.
	Done bool
	// CertManagerReady: every cert-manager Deployment is available.
	CertManagerReady bool
	// Problems are what stops the controller's pods, in words (a container
	// waiting in CrashLoopBackOff, a pod that cannot be scheduled), at
	// most three.
	Problems []string
}

// ReadRollout reads the rollout of the controller's DaemonSets (every
// DaemonSet in Namespace, where nothing else of ours is) and what stops
// its pods.
func ReadRollout(ctx context.Context, client kubernetes.Interface) (Rollout, error) {
	sets, err := client.AppsV1().DaemonSets(Namespace).List(ctx, metav1.ListOptions{})
	if err != nil {
		return Rollout{}, fmt.Errorf("list DaemonSets: %w", err)
	}
	r := Rollout{Done: len(sets.Items) > 0}
	for _, ds := range sets.Items {
		s := ds.Status
		r.Desired += s.DesiredNumberScheduled
		ready := min(s.UpdatedNumberScheduled, s.NumberAvailable)
		r.Ready += ready
		if s.ObservedGeneration < ds.Generation || ready < s.DesiredNumberScheduled {
			r.Done = false
		}
	}
	// cert-manager's Deployments, which issue the certificates.
	deps, err := client.AppsV1().Deployments(CertManagerNamespace).List(ctx, metav1.ListOptions{})
	if err != nil {
		return Rollout{}, fmt.Errorf("list cert-manager's Deployments: %w", err)
	}
	r.CertManagerReady = len(deps.Items) > 0
	for _, d := range deps.Items {
		want := int32(1)
		if d.Spec.Replicas != nil {
			want = *d.Spec.Replicas
		}
		if d.Status.ObservedGeneration < d.Generation || d.Status.UpdatedReplicas < want || d.Status.AvailableReplicas < want {
			r.CertManagerReady = false
		}
	}
	if r.Done && r.CertManagerReady {
		return r, nil
	}
	pods, err := client.CoreV1().Pods(Namespace).List(ctx, metav1.ListOptions{})
	if err != nil {
		return r, fmt.Errorf("list pods: %w", err)
	}
	cmPods, err := client.CoreV1().Pods(CertManagerNamespace).List(ctx, metav1.ListOptions{})
	if err != nil {
		return r, fmt.Errorf("list cert-manager's pods: %w", err)
	}
	for _, p := range append(pods.Items, cmPods.Items...) {
		for _, problem := range podProblems(p) {
			if !slices.Contains(r.Problems, problem) && len(r.Problems) < 3 {
				r.Problems = append(r.Problems, problem)
			}
		}
	}
	return r, nil
}

// podProblems says what keeps a pod from running: its containers waiting
// for a reason other than starting, or its scheduling refused.
func podProblems(p corev1.Pod) []string {
	var out []string
	for _, cond := range p.Status.Conditions {
		if cond.Type == corev1.PodScheduled && cond.Status == corev1.ConditionFalse && cond.Message != "" {
			out = append(out, fmt.Sprintf("%s: %s", p.Name, cond.Message))
		}
	}
	for _, cs := range append(slices.Clone(p.Status.InitContainerStatuses), p.Status.ContainerStatuses...) {
		w := cs.State.Waiting
		if w == nil || w.Reason == "" || w.Reason == "ContainerCreating" || w.Reason == "PodInitializing" {
			continue
		}
		msg := fmt.Sprintf("%s: %s", p.Name, w.Reason)
		if w.Message != "" {
			msg += ": " + strings.TrimSpace(w.Message)
		}
		out = append(out, msg)
	}
	return out
}

// ErrNamespaceTerminating says the namespace of an earlier removal is
// still going away: an install waits for it.
var ErrNamespaceTerminating = errors.New("the namespace " + Namespace + " of the last removal is still terminating")
