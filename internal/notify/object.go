package notify

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/url"

	"github.com/kubebyon/kubebyon/queries"
)

// Object is what a notification is about, read from its data: the
// cluster (ClusterID and its name, 0 and "" for none) and, in it, the
// node ("" for none).
type Object struct {
	ClusterID int64
	Cluster   string
	Node      string
}

// ObjectOf reads what notification n is about from its data; a
// notification stored as words alone is about nothing it can name.
func ObjectOf(n queries.Notification) Object {
	var p struct {
		ClusterID json.Number `json:"ClusterID"`
		Cluster   string      `json:"Cluster"`
		Node      string      `json:"Node"`
	}
	if len(n.Params) == 0 || json.NewDecoder(bytes.NewReader(n.Params)).Decode(&p) != nil {
		return Object{}
	}
	id, err := p.ClusterID.Int64()
	if err != nil || id <= 0 {
		return Object{}
	}
	return Object{ClusterID: id, Cluster: p.Cluster, Node: p.Node}
}

// Link is the page of what notification n is about: its node, its
// cluster, or for the account's and the platform's notices the page that
// deals with them; "" when there is none.
func Link(n queries.Notification) string {
	o := ObjectOf(n)
	switch {
	case o.ClusterID != 0 && o.Node != "":
		return fmt.Sprintf("/clusters/%d/nodes/%s", o.ClusterID, url.PathEscape(o.Node))
	case o.ClusterID != 0:
		return fmt.Sprintf("/clusters/%d", o.ClusterID)
	}
	switch Kind(n.Kind) {
	case Billing:
		return "/billing"
	case SecuritySignIn:
		return "/settings/profile"
	case EdgeOutOfStep:
		return "/admin/edge"
	case PlatformHealth:
		return "/admin"
	}
	return ""
}
