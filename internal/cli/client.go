package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"sort"
	"strings"
	"time"
)

// Client is a typed client of the platform's JSON API (/api/v1), acting
// as the owner of its API key.
type Client struct {
	BaseURL string // such as https://kubebyon.example.com, without a trailing slash
	APIKey  string
	HTTP    *http.Client
}

// APIError is an answer of the API other than 2xx, with its JSON error.
type APIError struct {
	Status  int
	Code    string
	Message string
	Fields  map[string]string
}

func (e *APIError) Error() string {
	var b strings.Builder
	b.WriteString(e.Message)
	// Sorted so that the same error always reads the same.
	names := make([]string, 0, len(e.Fields))
	for name := range e.Fields {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		fmt.Fprintf(&b, "\n  %s: %s", name, e.Fields[name])
	}
	return b.String()
}

// isStatus tells whether err is the API answering status.
func isStatus(err error, status int) bool {
	var e *APIError
	return errors.As(err, &e) && e.Status == status
}

// transient tells whether err may pass if asked again: the platform or
// the cluster's control plane busy or unreachable, or no answer at all.
func transient(err error) bool {
	var e *APIError
	if errors.As(err, &e) {
		return e.Status >= 500 || e.Status == http.StatusTooManyRequests
	}
	return err != nil && !errors.Is(err, context.Canceled) && !errors.Is(err, context.DeadlineExceeded)
}

// raw keeps the API's JSON of an object, so that -o json prints what the
// API said, fields this client does not know included.
type raw struct{ json json.RawMessage }

func (r *raw) keep(b []byte) { r.json = append(json.RawMessage(nil), b...) }

// User is the key's owner.
type User struct {
	ID    int64  `json:"id"`
	Email string `json:"email"`
	Name  string `json:"name"`
}

// Cluster is a control plane of the owner.
type Cluster struct {
	ID                int64      `json:"id"`
	Name              string     `json:"name"`
	Slug              string     `json:"slug"`
	Description       string     `json:"description"`
	KubernetesVersion string     `json:"kubernetes_version"`
	PublicAccessMode  string     `json:"public_access_mode"`
	Backend           string     `json:"backend"`
	Status            string     `json:"status"`
	StatusMessage     string     `json:"status_message"`
	Endpoint          string     `json:"endpoint"`
	CreatedAt         time.Time  `json:"created_at"`
	ReadyAt           *time.Time `json:"ready_at"`
	raw
}

func (c *Cluster) UnmarshalJSON(b []byte) error {
	type plain Cluster
	if err := json.Unmarshal(b, (*plain)(c)); err != nil {
		return err
	}
	c.keep(b)
	return nil
}

func (c Cluster) MarshalJSON() ([]byte, error) {
	if c.json != nil {
		return c.json, nil
	}
	type plain Cluster
	return json.Marshal(plain(c))
}

// ClusterCreate is what a new cluster is made from; empty fields take the
// platform's defaults.
type ClusterCreate struct {
	Name              string `json:"name"`
	Description       string `json:"description,omitempty"`
	KubernetesVersion string `json:"kubernetes_version,omitempty"`
	PublicAccessMode  string `json:"public_access_mode,omitempty"`
	Backend           string `json:"backend,omitempty"`
}

// JoinToken is a token that joins machines to a cluster; Token and Command
// are set while it is active.
type JoinToken struct {
	ID          int64      `json:"id"`
	TokenID     string     `json:"token_id"`
	Description string     `json:"description"`
	Status      string     `json:"status"`
	Uses        int        `json:"uses"`
	MaxUses     *int       `json:"max_uses"`
	ExpiresAt   *time.Time `json:"expires_at"`
	CreatedAt   time.Time  `json:"created_at"`
	Token       string     `json:"token"`
	Command     string     `json:"command"`
	raw
}

func (t *JoinToken) UnmarshalJSON(b []byte) error {
	type plain JoinToken
	if err := json.Unmarshal(b, (*plain)(t)); err != nil {
		return err
	}
	t.keep(b)
	return nil
}

func (t JoinToken) MarshalJSON() ([]byte, error) {
	if t.json != nil {
		return t.json, nil
	}
	type plain JoinToken
	return json.Marshal(plain(t))
}

// JoinTokenCreate asks for a join token; Lifetime is 1h, 24h, 7d or none
// (empty: 1h), MaxUses 0 for any number of machines.
type JoinTokenCreate struct {
	Description string `json:"description,omitempty"`
	Lifetime    string `json:"lifetime,omitempty"`
	MaxUses     int    `json:"max_uses"`
}

// Node is a machine of a cluster, as its control plane sees it.
type Node struct {
	Name           string    `json:"name"`
	Status         string    `json:"status"`
	Unschedulable  bool      `json:"unschedulable"`
	Roles          []string  `json:"roles"`
	KubeletVersion string    `json:"kubelet_version"`
	OS             string    `json:"os"`
	Arch           string    `json:"arch"`
	InternalIP     string    `json:"internal_ip"`
	ExternalIP     string    `json:"external_ip"`
	CreatedAt      time.Time `json:"created_at"`
	raw
}

func (n *Node) UnmarshalJSON(b []byte) error {
	type plain Node
	if err := json.Unmarshal(b, (*plain)(n)); err != nil {
		return err
	}
	n.keep(b)
	return nil
}

func (n Node) MarshalJSON() ([]byte, error) {
	if n.json != nil {
		return n.json, nil
	}
	type plain Node
	return json.Marshal(plain(n))
}

// DrainOptions are a drain's options; nil ones take the platform's
// defaults.
type DrainOptions struct {
	Force              *bool `json:"force,omitempty"`
	DeleteEmptyDirData *bool `json:"delete_emptydir_data,omitempty"`
	TimeoutSeconds     *int  `json:"timeout_seconds,omitempty"`
}

// NodeOperation is a drain or deletion of a node as it stands.
type NodeOperation struct {
	ID       int64    `json:"id"`
	Node     string   `json:"node"`
	Kind     string   `json:"kind"`
	Status   string   `json:"status"`
	Message  string   `json:"message"`
	Progress []string `json:"progress"`
	raw
}

func (o *NodeOperation) UnmarshalJSON(b []byte) error {
	type plain NodeOperation
	if err := json.Unmarshal(b, (*plain)(o)); err != nil {
		return err
	}
	o.keep(b)
	return nil
}

func (o NodeOperation) MarshalJSON() ([]byte, error) {
	if o.json != nil {
		return o.json, nil
	}
	type plain NodeOperation
	return json.Marshal(plain(o))
}

// maxBody bounds what is read of an answer: kubeconfigs and lists are far
// smaller.
const maxBody = 16 << 20

// send makes a request to path (under BaseURL) with in as its JSON body
// (nil: none) and returns the answer's body and headers; an answer other
// than 2xx is an *APIError.
func (c *Client) send(ctx context.Context, method, path string, in any) ([]byte, http.Header, error) {
	var body io.Reader
	if in != nil {
		b, err := json.Marshal(in)
		if err != nil {
			return nil, nil, fmt.Errorf("encode the request: %w", err)
		}
		body = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, method, c.BaseURL+path, body)
	if err != nil {
		return nil, nil, fmt.Errorf("%s %s: %w", method, path, err)
	}
	req.Header.Set("Authorization", "Bearer "+c.APIKey)
	req.Header.Set("Accept", "application/json")
	if in != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	hc := c.HTTP
	if hc == nil {
		hc = http.DefaultClient
	}
	resp, err := hc.Do(req)
	if err != nil {
		return nil, nil, err // already names the method and URL
	}
	defer resp.Body.Close()
	out, err := io.ReadAll(io.LimitReader(resp.Body, maxBody))
	if err != nil {
		return nil, nil, fmt.Errorf("%s %s: read the answer: %w", method, path, err)
	}
	if resp.StatusCode/100 != 2 {
		return nil, resp.Header, apiError(resp.StatusCode, out)
	}
	return out, resp.Header, nil
}

// apiError reads the API's error body; an answer that is not one (a proxy
// in between, say) keeps its status and a bit of its text.
func apiError(status int, body []byte) *APIError {
	var e struct {
		Error struct {
			Code    string            `json:"code"`
			Message string            `json:"message"`
			Fields  map[string]string `json:"fields"`
		} `json:"error"`
	}
	if json.Unmarshal(body, &e) == nil && e.Error.Message != "" {
		return &APIError{Status: status, Code: e.Error.Code, Message: e.Error.Message, Fields: e.Error.Fields}
	}
	text := strings.TrimSpace(string(body))
	if len(text) > 200 {
		text = text[:200] + "…"
	}
	msg := fmt.Sprintf("the platform answered %d %s", status, http.StatusText(status))
	if text != "" {
		msg += ": " + text
	}
	return &APIError{Status: status, Message: msg}
}

// call is send with the answer decoded into out (nil: ignored).
func (c *Client) call(ctx context.Context, method, path string, in, out any) (http.Header, error) {
	b, h, err := c.send(ctx, method, path, in)
	if err != nil {
		return h, err
	}
	if out != nil {
		if err := json.Unmarshal(b, out); err != nil {
			return h, fmt.Errorf("%s %s: decode the answer: %w", method, path, err)
		}
	}
	return h, nil
}

// Me is the key's owner; it is how a key is checked.
func (c *Client) Me(ctx context.Context) (User, error) {
	var u User
	_, err := c.call(ctx, http.MethodGet, "/api/v1/me", nil, &u)
	return u, err
}

// Clusters lists all the owner's clusters, newest first, every page.
func (c *Client) Clusters(ctx context.Context) ([]Cluster, error) {
	return allPages[Cluster](ctx, c, "/api/v1/clusters", "clusters")
}

// allPages reads every page of the list at path, its items under name,
// following each page's next, 100 items a page.
func allPages[T any](ctx context.Context, c *Client, path, name string) ([]T, error) {
	var all []T
	path += "?limit=100"
	at := path
	for {
		var page map[string]json.RawMessage
		if _, err := c.call(ctx, http.MethodGet, at, nil, &page); err != nil {
			return nil, err
		}
		var items []T
		var next string
		if err := json.Unmarshal(page[name], &items); err != nil {
			return nil, fmt.Errorf("GET %s: decode the %s: %w", at, name, err)
		}
		if raw, ok := page["next"]; ok {
			if err := json.Unmarshal(raw, &next); err != nil {
				return nil, fmt.Errorf("GET %s: decode next: %w", at, err)
			}
		}
		all = append(all, items...)
		if next == "" || len(items) == 0 {
			return all, nil
		}
		at = path + "&cursor=" + url.QueryEscape(next)
	}
}

// ErrNoCluster is a cluster name the owner has no cluster of.
var ErrNoCluster = errors.New("no cluster")

// ClusterByName finds the owner's cluster of that name (the API names
// clusters by id).
func (c *Client) ClusterByName(ctx context.Context, name string) (Cluster, error) {
	all, err := c.Clusters(ctx)
	if err != nil {
		return Cluster{}, err
	}
	for _, cl := range all {
		if cl.Name == name {
			return cl, nil
		}
	}
	return Cluster{}, fmt.Errorf("%w named %q", ErrNoCluster, name)
}

func clusterPath(id int64) string { return fmt.Sprintf("/api/v1/clusters/%d", id) }

// Cluster reads one cluster.
func (c *Client) Cluster(ctx context.Context, id int64) (Cluster, error) {
	var cl Cluster
	_, err := c.call(ctx, http.MethodGet, clusterPath(id), nil, &cl)
	return cl, err
}

// CreateCluster makes a cluster; it starts pending.
func (c *Client) CreateCluster(ctx context.Context, in ClusterCreate) (Cluster, error) {
	var cl Cluster
	_, err := c.call(ctx, http.MethodPost, "/api/v1/clusters", in, &cl)
	return cl, err
}

// DeleteCluster starts a cluster's deletion.
func (c *Client) DeleteCluster(ctx context.Context, id int64) (Cluster, error) {
	var cl Cluster
	_, err := c.call(ctx, http.MethodDelete, clusterPath(id), nil, &cl)
	return cl, err
}

// Kubeconfig is a ready cluster's admin kubeconfig (YAML).
func (c *Client) Kubeconfig(ctx context.Context, id int64) ([]byte, error) {
	b, _, err := c.send(ctx, http.MethodGet, clusterPath(id)+"/kubeconfig", nil)
	return b, err
}

// CreateJoinToken makes a join token of a ready cluster, with its command.
func (c *Client) CreateJoinToken(ctx context.Context, clusterID int64, in JoinTokenCreate) (JoinToken, error) {
	var t JoinToken
	_, err := c.call(ctx, http.MethodPost, clusterPath(clusterID)+"/join-tokens", in, &t)
	return t, err
}

// Nodes lists a cluster's nodes, read live from its control plane, every
// page.
func (c *Client) Nodes(ctx context.Context, clusterID int64) ([]Node, error) {
	return allPages[Node](ctx, c, clusterPath(clusterID)+"/nodes", "nodes")
}

// DrainNode starts a node's drain; the path returned (the answer's
// Location) is the operation to poll with NodeOperation.
func (c *Client) DrainNode(ctx context.Context, clusterID int64, node string, in DrainOptions) (NodeOperation, string, error) {
	var op NodeOperation
	h, err := c.call(ctx, http.MethodPost, clusterPath(clusterID)+"/nodes/"+url.PathEscape(node)+"/drain", in, &op)
	if err != nil {
		return op, "", err
	}
	loc := h.Get("Location")
	if loc == "" {
		// The API always sends it; the path it would name is known anyway.
		loc = fmt.Sprintf("%s/nodes/%s/operations/%d", clusterPath(clusterID), url.PathEscape(node), op.ID)
	}
	return op, loc, nil
}

// NodeOperation reads a node operation at path (a drain's Location).
func (c *Client) NodeOperation(ctx context.Context, path string) (NodeOperation, error) {
	var op NodeOperation
	_, err := c.call(ctx, http.MethodGet, path, nil, &op)
	return op, err
}
