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
	"github.com/kubebyon/kubebyon/internal/edgewire"
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

// bounded is s within the platform's limits: the first failures by
// destination, and texts cut short.
func bounded(s edgewire.RouteReport) edgewire.RouteReport {
	dsts := slices.Sorted(maps.Keys(s.Failed))
	failed := make(map[string]string, min(len(dsts), edgewire.MaxReportedFailures))
	for _, dst := range dsts[:min(len(dsts), edgewire.MaxReportedFailures)] {
		failed[cut(dst, edgewire.MaxReportDst)] = cut(s.Failed[dst], edgewire.MaxReportText)
	}
	s.Failed = failed
	s.Error = cut(s.Error, edgewire.MaxReportText)
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
func (p *Remote) Routes(ctx context.Context, have string, wait time.Duration) (d edgewire.TenantRoutes, changed bool, err error) {
	q := url.Values{"wait": {strconv.Itoa(int(wait / time.Second))}}
	if have != "" {
		q.Set("version", have)
	}
	ctx, cancel := context.WithTimeout(ctx, wait+requestSlack)
	defer cancel()
	req, err := p.request(ctx, http.MethodGet, "/api/v1/edge/routes?"+q.Encode(), nil)
	if err != nil {
		return edgewire.TenantRoutes{}, false, err
	}
	resp, err := p.Client.Do(req)
	if err != nil {
		return edgewire.TenantRoutes{}, false, err
	}
	defer resp.Body.Close()
	switch resp.StatusCode {
	case http.StatusNotModified:
		return edgewire.TenantRoutes{}, false, nil
	case http.StatusOK:
		if err := json.NewDecoder(resp.Body).Decode(&d); err != nil {
			return edgewire.TenantRoutes{}, false, fmt.Errorf("read the routes: %w", err)
		}
		return d, d.Version != have, nil
	case http.StatusBadRequest:
		if n, err := strconv.Atoi(resp.Header.Get("X-Max-Wait")); err == nil && time.Duration(n)*time.Second < wait {
			return edgewire.TenantRoutes{}, false, &WaitTooLongError{Max: time.Duration(n) * time.Second}
		}
		fallthrough
	default:
		return edgewire.TenantRoutes{}, false, fmt.Errorf("the platform answered %s: %s", resp.Status, apiclient.Message(resp.Body))
	}
}

// Status sends POST /api/v1/edge/routes/status.
func (p *Remote) Status(ctx context.Context, s edgewire.RouteReport) error {
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
