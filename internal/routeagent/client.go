package routeagent

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/kubebyon/kubebyon/internal/apiclient"
)

const (
	// DefaultWait is how long the runner's long polls wait: within the
	// limit of a platform with the default request timeout (30 s), like
	// kubebyon edge's.
	DefaultWait = 25 * time.Second
	// MaxWait is the API's limit on a wait. A platform whose requests
	// time out sooner says its own (WaitTooLongError).
	MaxWait = 55 * time.Second
	// requestSlack is how much longer than its wait a poll may take, and
	// how long a status report may take.
	requestSlack = 15 * time.Second
)

// The platform refuses a report beyond these limits whole.
const (
	// MaxReportedFailures bounds the failures a report lists,
	// MaxReportDst a destination's length, MaxReportText a text's.
	MaxReportedFailures = 1000
	MaxReportDst        = 64
	MaxReportText       = 4000
)

// Desired is the platform's answer to GET /api/v1/edge/routes: every
// route the host nodes should have, under an opaque version.
type Desired struct {
	Version string         `json:"version"`
	Routes  []DesiredRoute `json:"routes"`
}

// DesiredRoute is one tenant node's route as the platform sends it: Dst
// is the node's Pod CIDR and Via its address, both still text.
type DesiredRoute struct {
	ClusterID int64  `json:"cluster_id"`
	Node      string `json:"node"`
	Dst       string `json:"dst"`
	Via       string `json:"via"`
}

// Status is the report of one converge, for POST
// /api/v1/edge/routes/status.
type Status struct {
	// Node is the host node the agent runs on.
	Node string `json:"node"`
	// Version is the version of the routes converged to.
	Version  string `json:"version"`
	InPlace  int    `json:"in_place"`
	Added    int    `json:"added"`
	Replaced int    `json:"replaced"`
	Removed  int    `json:"removed"`
	// Failed says by destination why a route is not in place.
	Failed map[string]string `json:"failed"`
	// Error is what stopped the whole converge, or empty.
	Error string `json:"error"`
}

// bounded is s within the platform's limits: the first failures by
// destination, and texts cut short.
func (s Status) bounded() Status {
	dsts := slices.Sorted(maps.Keys(s.Failed))
	failed := make(map[string]string, min(len(dsts), MaxReportedFailures))
	for _, dst := range dsts[:min(len(dsts), MaxReportedFailures)] {
		failed[cut(dst, MaxReportDst)] = cut(s.Failed[dst], MaxReportText)
	}
	s.Failed = failed
	s.Error = cut(s.Error, MaxReportText)
	return s
}

// cut is s in at most n bytes, cut on a character: a cut one would grow
// past n in JSON.
func cut(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return strings.ToValidUTF8(s[:n], "")
}

// WaitTooLongError is the platform's answer to a poll that asked to wait
// longer than it lets a request run.
type WaitTooLongError struct {
	// Max is the longest wait it takes (its X-Max-Wait header).
	Max time.Duration
}

func (e *WaitTooLongError) Error() string {
	return fmt.Sprintf("the platform lets a poll wait at most %s", e.Max)
}

// Remote is the platform's route API over HTTP, reached with an edge token.
type Remote struct {
	// URL is the platform's base URL; Token an edge token.
	URL, Token string
	Client     *http.Client
}

// Routes long-polls GET /api/v1/edge/routes: the desired routes once
// their version is not have, waiting at most wait (whole seconds) for
// that; changed is false when the wait ended first.
func (p *Remote) Routes(ctx context.Context, have string, wait time.Duration) (d Desired, changed bool, err error) {
	q := url.Values{"wait": {strconv.Itoa(int(wait / time.Second))}}
	if have != "" {
		q.Set("version", have)
	}
	ctx, cancel := context.WithTimeout(ctx, wait+requestSlack)
	defer cancel()
	req, err := p.request(ctx, http.MethodGet, "/api/v1/edge/routes?"+q.Encode(), nil)
	if err != nil {
		return Desired{}, false, err
	}
	resp, err := p.Client.Do(req)
	if err != nil {
		return Desired{}, false, err
	}
	defer resp.Body.Close()
	switch resp.StatusCode {
	case http.StatusNotModified:
		return Desired{}, false, nil
	case http.StatusOK:
		if err := json.NewDecoder(resp.Body).Decode(&d); err != nil {
			return Desired{}, false, fmt.Errorf("read the routes: %w", err)
		}
		return d, d.Version != have, nil
	case http.StatusBadRequest:
		if n, err := strconv.Atoi(resp.Header.Get("X-Max-Wait")); err == nil && time.Duration(n)*time.Second < wait {
			return Desired{}, false, &WaitTooLongError{Max: time.Duration(n) * time.Second}
		}
		fallthrough
	default:
		return Desired{}, false, fmt.Errorf("the platform answered %s: %s", resp.Status, apiclient.Message(resp.Body))
	}
}

// Status sends POST /api/v1/edge/routes/status.
func (p *Remote) Status(ctx context.Context, s Status) error {
	body, err := json.Marshal(s)
	if err != nil {
		return fmt.Errorf("encode the status: %w", err)
	}
	ctx, cancel := context.WithTimeout(ctx, requestSlack)
	defer cancel()
	req, err := p.request(ctx, http.MethodPost, "/api/v1/edge/routes/status", bytes.NewReader(body))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := p.Client.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusNoContent {
		return fmt.Errorf("the platform answered %s: %s", resp.Status, apiclient.Message(resp.Body))
	}
	return nil
}

// request is a request to path on the platform, with the token.
func (p *Remote) request(ctx context.Context, method, path string, body io.Reader) (*http.Request, error) {
	req, err := http.NewRequestWithContext(ctx, method, strings.TrimSuffix(p.URL, "/")+path, body)
	if err != nil {
		return nil, fmt.Errorf("platform request: %w", err)
	}
	req.Header.Set("Authorization", "Bearer "+p.Token)
	return req, nil
}
