package edge

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/kubebyon/kubebyon/queries"
)

// HostNodesArgs asks for the host cluster's nodes to be recorded
// (host_nodes): their addresses and readiness, which NodePort clusters'
// routes are made of. One job for the whole host, periodic, on River's
// leader.
type HostNodesArgs struct{}

// Kind implements river.JobArgs.
func (HostNodesArgs) Kind() string { return "edge_host_nodes" }

// HostNode is a host node as the edge sees it.
type HostNode struct {
	Name, InternalIP, ExternalIP string
	Ready                        bool
}

// ListHostNodes reads the host cluster's nodes, a page at a time.
func ListHostNodes(ctx context.Context, client kubernetes.Interface) ([]HostNode, error) {
	var out []HostNode
	opts := metav1.ListOptions{Limit: 500}
	for {
		list, err := client.CoreV1().Nodes().List(ctx, opts)
		if err != nil {
			return nil, fmt.Errorf("list the host cluster's nodes: %w", err)
		}
		for _, n := range list.Items {
			h := HostNode{Name: n.Name}
			for _, a := range n.Status.Addresses {
				switch {
				case a.Type == corev1.NodeInternalIP && h.InternalIP == "":
					h.InternalIP = a.Address
				case a.Type == corev1.NodeExternalIP && h.ExternalIP == "":
					h.ExternalIP = a.Address
				}
			}
			for _, c := range n.Status.Conditions {
				if c.Type == corev1.NodeReady {
					h.Ready = c.Status == corev1.ConditionTrue
				}
			}
			// A cordoned node still forwards NodePorts; one being
			// drained for removal is about to go.
			if n.DeletionTimestamp != nil {
				h.Ready = false
			}
			out = append(out, h)
		}
		if list.Continue == "" {
			return out, nil
		}
		opts.Continue = list.Continue
	}
}

// RecordHostNodes stores the host nodes seen, and forgets the others. Rows
// that did not change are not written, and wake no edge.
func RecordHostNodes(ctx context.Context, q *queries.Queries, nodes []HostNode) error {
	names := make([]string, 0, len(nodes))
	for _, n := range nodes {
		if err := q.HostNodeUpsert(ctx, queries.HostNodeUpsertParams{
			Name: n.Name, InternalIp: n.InternalIP, ExternalIp: n.ExternalIP, Ready: n.Ready,
		}); err != nil {
			return fmt.Errorf("record host node %s: %w", n.Name, err)
		}
		names = append(names, n.Name)
	}
	if _, err := q.HostNodesDeleteExcept(ctx, names); err != nil {
		return fmt.Errorf("forget gone host nodes: %w", err)
	}
	return nil
}
