package nodes

// The nodes table keeps each node as the health job last saw it (and as
// the console left it after acting on it): the nodes page lists the nodes
// from it, and the node page falls back to it while the control plane does
// not answer.

import (
	"encoding/json"
	"fmt"
	"net/netip"
	"time"

	"github.com/jackc/pgx/v5/pgtype"
	corev1 "k8s.io/api/core/v1"

	"github.com/kubebyon/kubebyon/internal/ingress"
	"github.com/kubebyon/kubebyon/queries"
)

// snapshotAddress is an address as the snapshot keeps it.
type snapshotAddress struct {
	Type    string `json:"type"`
	Address string `json:"address"`
}

// snapshotCondition is a condition as the snapshot keeps it.
type snapshotCondition struct {
	Type               string    `json:"type"`
	Status             string    `json:"status"`
	Reason             string    `json:"reason,omitempty"`
	Message            string    `json:"message,omitempty"`
	LastTransitionTime time.Time `json:"last_transition_time"`
}

// Row is the node's row of the nodes table, as its Node object said when
// it was read, at seen (a row read later is not overwritten with it).
func Row(clusterID int64, n *corev1.Node, seen time.Time) (queries.NodeUpsertParams, error) {
	readiness, since := Readiness(n)
	conds := make([]snapshotCondition, len(n.Status.Conditions))
	for i, c := range n.Status.Conditions {
		conds[i] = snapshotCondition{Type: string(c.Type), Status: string(c.Status), Reason: c.Reason, Message: c.Message, LastTransitionTime: c.LastTransitionTime.UTC()}
	}
	addrs := make([]snapshotAddress, len(n.Status.Addresses))
	for i, a := range n.Status.Addresses {
		addrs[i] = snapshotAddress{Type: string(a.Type), Address: a.Address}
	}
	condJSON, err := json.Marshal(conds)
	if err != nil {
		return queries.NodeUpsertParams{}, fmt.Errorf("encode conditions of %s: %w", n.Name, err)
	}
	addrJSON, err := json.Marshal(addrs)
	if err != nil {
		return queries.NodeUpsertParams{}, fmt.Errorf("encode addresses of %s: %w", n.Name, err)
	}
	p := queries.NodeUpsertParams{
		ClusterID: clusterID, Name: n.Name, Ready: readiness == Ready,
		Conditions: condJSON, KubeletVersion: n.Status.NodeInfo.KubeletVersion, Addresses: addrJSON,
		Roles: Roles(n), Os: n.Status.NodeInfo.OperatingSystem, Arch: n.Status.NodeInfo.Architecture,
		Unschedulable: n.Spec.Unschedulable,
		Ingress:       n.Labels[ingress.NodeLabel] == "true", PublicAddress: ingress.PublicAddress(n),
		NodeCreatedAt: pgtype.Timestamptz{Time: n.CreationTimestamp.Time, Valid: !n.CreationTimestamp.IsZero()},
		LastSeen:      pgtype.Timestamptz{Time: seen, Valid: true},
	}
	if p.Roles == nil {
		p.Roles = []string{}
	}
	// The network the node's pods get addresses from, which the route
	// agents route to through the platform edge.
	if cidr, err := netip.ParsePrefix(n.Spec.PodCIDR); err == nil {
		cidr = cidr.Masked()
		p.PodCidr = &cidr
	}
	if !p.Ready {
		p.NotReadySince = pgtype.Timestamptz{Time: since, Valid: true}
	}
	return p, nil
}

// fromRow is the node as its row keeps it: its summary and conditions.
func fromRow(r queries.Node) (Summary, []corev1.NodeCondition, error) {
	var conds []snapshotCondition
	if err := json.Unmarshal(r.Conditions, &conds); err != nil {
		return Summary{}, nil, fmt.Errorf("decode conditions of %s: %w", r.Name, err)
	}
	var addrs []snapshotAddress
	if err := json.Unmarshal(r.Addresses, &addrs); err != nil {
		return Summary{}, nil, fmt.Errorf("decode addresses of %s: %w", r.Name, err)
	}
	// The Node object the row was taken from, as far as the row keeps it,
	// so that the summary reads it as it reads a live one.
	n := &corev1.Node{}
	n.Name = r.Name
	for _, c := range conds {
		n.Status.Conditions = append(n.Status.Conditions, corev1.NodeCondition{
			Type: corev1.NodeConditionType(c.Type), Status: corev1.ConditionStatus(c.Status),
			Reason: c.Reason, Message: c.Message,
		})
		n.Status.Conditions[len(n.Status.Conditions)-1].LastTransitionTime.Time = c.LastTransitionTime
	}
	for _, a := range addrs {
		n.Status.Addresses = append(n.Status.Addresses, corev1.NodeAddress{Type: corev1.NodeAddressType(a.Type), Address: a.Address})
	}
	s := summarize(n)
	if len(conds) == 0 && r.Ready {
		// A row without its conditions: its readiness says it all.
		s.Status = Ready
	}
	s.Unschedulable = r.Unschedulable
	s.Roles = r.Roles
	if len(s.Roles) == 0 {
		s.Roles = nil
	}
	s.KubeletVersion, s.OS, s.Arch = r.KubeletVersion, r.Os, r.Arch
	s.Created = r.NodeCreatedAt.Time
	s.LastSeen = r.LastSeen.Time
	return s, n.Status.Conditions, nil
}
