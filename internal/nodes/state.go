package nodes

// What a Node object says about the node: whether it is ready, its roles
// and addresses. Both the console and the health job read it here, so they
// agree on what "ready" means.

import (
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
)

// The readiness of a node, from its Ready condition.
const (
	Ready    = "Ready"
	NotReady = "NotReady"
	Unknown  = "Unknown"
)

// roleLabelPrefix marks a node's roles: node-role.kubernetes.io/<role>.
const roleLabelPrefix = "node-role.kubernetes.io/"

// Readiness is Ready, NotReady or Unknown (no condition, or the kubelet
// stopped reporting), and since when.
func Readiness(n *corev1.Node) (string, time.Time) {
	for _, c := range n.Status.Conditions {
		if c.Type != corev1.NodeReady {
			continue
		}
		switch c.Status {
		case corev1.ConditionTrue:
			return Ready, c.LastTransitionTime.Time
		case corev1.ConditionFalse:
			return NotReady, c.LastTransitionTime.Time
		}
		return Unknown, c.LastTransitionTime.Time
	}
	return Unknown, n.CreationTimestamp.Time
}

// Roles are the node's roles from its node-role labels, sorted.
func Roles(n *corev1.Node) []string {
	var roles []string
	for k := range n.Labels {
		if role, ok := strings.CutPrefix(k, roleLabelPrefix); ok && role != "" {
			roles = append(roles, role)
		}
	}
	slices.Sort(roles)
	return roles
}

// Address is the node's first address of type t, or "".
func Address(n *corev1.Node, t corev1.NodeAddressType) string {
	for _, a := range n.Status.Addresses {
		if a.Type == t {
			return a.Address
		}
	}
	return ""
}
