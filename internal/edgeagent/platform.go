package edgeagent

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/kubebyon/kubebyon/internal/apiclient"
	"github.com/kubebyon/kubebyon/internal/edgewire"
)

// Platform is what an agent talks to: the desired state, and its reports.
type Platform interface {
	// Config is the desired state once its version is not have, waiting
	// at most wait for that; changed is false when the wait ended first.
	Config(ctx context.Context, have string, wait time.Duration) (st edgewire.State, changed bool, err error)
	// Status takes a report.
	Status(ctx context.Context, r edgewire.Report) error
}

// Remote is the platform over HTTP, as `kubebyon edge` reaches it: the
// edge config API with an edge token.
type Remote struct {
	// URL is the platform's base URL; Token an edge token.
	URL, Token string
	Client     *http.Client
}

// Config long-polls GET /api/v1/edge/config.
func (p *Remote) Config(ctx context.Context, have string, wait time.Duration) (edgewire.State, bool, error) {
	q := url.Values{"version": {have}, "wait": {strconv.Itoa(int(wait.Seconds()))}}
	ctx, cancel := context.WithTimeout(ctx, wait+15*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, strings.TrimSuffix(p.URL, "/")+"/api/v1/edge/config?"+q.Encode(), nil)
	if err != nil {
		return edgewire.State{}, false, err
	}
	req.Header.Set("Authorization", "Bearer "+p.Token)
	resp, err := p.Client.Do(req)
	if err != nil {
		return edgewire.State{}, false, err
	}
	defer resp.Body.Close()
	switch resp.StatusCode {
	case http.StatusNotModified:
		return edgewire.State{}, false, nil
	case http.StatusOK:
		var st edgewire.State
		if err := json.NewDecoder(resp.Body).Decode(&st); err != nil {
			return edgewire.State{}, false, fmt.Errorf("read the edge config: %w", err)
		}
		return st, true, nil
	default:
		return edgewire.State{}, false, fmt.Errorf("the platform answered %s: %s", resp.Status, apiclient.Message(resp.Body))
	}
}

// Status sends POST /api/v1/edge/status.
func (p *Remote) Status(ctx context.Context, r edgewire.Report) error {
	body, err := json.Marshal(r)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, 15*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, strings.TrimSuffix(p.URL, "/")+"/api/v1/edge/status", strings.NewReader(string(body)))
	if err != nil {
		return err
	}
	req.Header.Set("Authorization", "Bearer "+p.Token)
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
