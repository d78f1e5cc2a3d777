//go:build linux

package routeagent

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"maps"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/stretchr/testify/require"
	"github.com/vishvananda/netlink"

	"github.com/kubebyon/kubebyon/internal/edgewire"
)

const testToken = "kbe_abcdefgh_abcdefghijklmnopqrstuvwxyz234567"

// TestRunnerAppliesRoutesAndReports runs the runner against a platform
// that changes its routes while the runner waits in a long poll.
func TestRunnerAppliesRoutesAndReports(t *testing.T) {
	t.Parallel()
	b := setupRunner(t, time.Hour,
		desiredRoute(1, "worker-1", "10.200.1.0/24", "10.99.0.2"),
		desiredRoute(1, "worker-2", "10.200.2.0/24", "10.99.0.3"),
		desiredRoute(1, "worker-3", "10.200.7.0/24", "10.99.0.5"),
		desiredRoute(2, "worker-1", "10.200.3.0/24", "192.0.2.1"),
		desiredRoute(2, "worker-2", "10.200.4.0/33", "10.99.0.4"),
		desiredRoute(2, "worker-3", "10.200.5.0/24", "not-an-ip"),
	)
	b.start(t)

	st := b.waitForReport(t, "v1")
	require.Equal(t, edgewire.RouteReport{
		Node: "host-1", Version: "v1", InPlace: 3, Added: 3,
		Failed: map[string]string{
			"10.200.3.0/24": "cannot add the route via 192.0.2.1: the via address is not on a network this host reaches (network is unreachable)",
			"10.200.4.0/33": `cluster 2, node "worker-2": the destination "10.200.4.0/33" is not a network such as 10.128.0.0/24`,
			"10.200.5.0/24": `cluster 2, node "worker-3": the via "not-an-ip" is not an IP address`,
		},
	}, st)
	require.Equal(t, []Route{
		route("10.200.1.0/24", "10.99.0.2"), route("10.200.2.0/24", "10.99.0.3"), route("10.200.7.0/24", "10.99.0.5"),
	}, b.tn.ownRoutes(t, 0, Protocol))

	// The runner waits on version v1 now; the change must end its wait.
	require.Eventually(t, func() bool { return b.platform.waiting() == 1 }, 5*time.Second, 10*time.Millisecond)
	b.platform.set(
		desiredRoute(1, "worker-1", "10.200.1.0/24", "10.99.0.9"),
		// A via that does not parse leaves the route as it was.
		desiredRoute(1, "worker-2", "10.200.2.0/24", "bogus"),
		desiredRoute(3, "worker-1", "10.200.6.0/24", "10.99.0.2"),
	)
	st = b.waitForReport(t, "v2")
	require.Equal(t, edgewire.RouteReport{
		Node: "host-1", Version: "v2", InPlace: 2, Added: 1, Replaced: 1, Removed: 1,
		Failed: map[string]string{"10.200.2.0/24": `cluster 1, node "worker-2": the via "bogus" is not an IP address`},
	}, st)
	require.Equal(t, []Route{
		route("10.200.1.0/24", "10.99.0.9"), route("10.200.2.0/24", "10.99.0.3"), route("10.200.6.0/24", "10.99.0.2"),
	}, b.tn.ownRoutes(t, 0, Protocol))

	polls := b.platform.polls()
	require.Equal(t, url.Values{"wait": {"25"}}, polls[0], "the first poll asks for any version")
	require.Equal(t, url.Values{"version": {"v1"}, "wait": {"25"}}, polls[1], "then it waits on the version applied")
	require.Len(t, b.platform.statuses(), 2, "one report after each poll")
}

// TestRunnerRestoresRoutesAtResync deletes a route behind the runner's
// back, as systemd-networkd would.
func TestRunnerRestoresRoutesAtResync(t *testing.T) {
	t.Parallel()
	b := setupRunner(t, 200*time.Millisecond,
		desiredRoute(1, "worker-1", "10.200.1.0/24", "10.99.0.2"),
		desiredRoute(1, "worker-2", "10.200.2.0/24", "10.99.0.3"),
	)
	b.start(t)
	b.waitForReport(t, "v1")
	want := []Route{route("10.200.1.0/24", "10.99.0.2"), route("10.200.2.0/24", "10.99.0.3")}
	require.Equal(t, want, b.tn.ownRoutes(t, 0, Protocol))

	gone := route("10.200.2.0/24", "10.99.0.3")
	require.NoError(t, b.tn.h.RouteDel(&netlink.Route{
		Dst: &net.IPNet{IP: gone.Dst.Addr().AsSlice(), Mask: net.CIDRMask(gone.Dst.Bits(), gone.Dst.Addr().BitLen())}, Gw: gone.Via.AsSlice(), Protocol: Protocol,
	}))
	require.Equal(t, want[:1], b.tn.ownRoutes(t, 0, Protocol))

	require.Eventually(t, func() bool {
		return slices.ContainsFunc(b.platform.statuses(), func(s edgewire.RouteReport) bool { return s.Version == "v1" && s.Added == 1 })
	}, 10*time.Second, 20*time.Millisecond, "a resync puts the route back and reports it")
	require.Equal(t, want, b.tn.ownRoutes(t, 0, Protocol))
	require.Contains(t, b.logs.String(), `msg="routes converged" table=254 protocol=108 added=1`)
}

// TestRunnerBacksOffWhileThePlatformIsDown stops the platform: the runner
// keeps the routes, retries less and less often, says so once, and takes
// the platform's new routes once it is back.
func TestRunnerBacksOffWhileThePlatformIsDown(t *testing.T) {
	t.Parallel()
	b := setupRunner(t, time.Hour, desiredRoute(1, "worker-1", "10.200.1.0/24", "10.99.0.2"))
	b.start(t)
	b.waitForReport(t, "v1")
	require.Eventually(t, func() bool { return b.platform.waiting() == 1 }, 5*time.Second, 10*time.Millisecond)

	addr := b.stopServer()
	b.platform.set(desiredRoute(1, "worker-1", "10.200.1.0/24", "10.99.0.7"))
	const attempts = 5
	require.Eventually(t, func() bool { return len(b.transport.failures()) >= attempts }, 10*time.Second, 10*time.Millisecond)
	failed := b.transport.failures()
	for i := 1; i < attempts; i++ {
		// Each wait is at least half of a span that doubles from the
		// minimum: anything shorter is a retry without backoff.
		gap := failed[i].Sub(failed[i-1])
		require.GreaterOrEqual(t, gap, min(b.runner.retry.min<<(i-1), b.runner.retry.max)/2, "wait %d of %v", i, failed)
	}
	require.Equal(t, []Route{route("10.200.1.0/24", "10.99.0.2")}, b.tn.ownRoutes(t, 0, Protocol), "the routes stay while the platform is down")
	require.Equal(t, 1, strings.Count(b.logs.String(), "cannot reach the platform"), "one line for the outage: %s", b.logs)

	b.startServer(t, addr)
	st := b.waitForReport(t, "v2")
	require.Equal(t, "v2", st.Version)
	require.Equal(t, 1, st.Replaced)
	require.Equal(t, []Route{route("10.200.1.0/24", "10.99.0.7")}, b.tn.ownRoutes(t, 0, Protocol))
	require.Equal(t, 1, strings.Count(b.logs.String(), "cannot reach the platform"), b.logs.String())
	require.Equal(t, 1, strings.Count(b.logs.String(), "platform reached again"), b.logs.String())
}

// TestRunnerLeavesRoutesAloneUntilThePlatformAnswers gives the runner a
// token the platform refuses: it must not take "no answer" for "no routes".
func TestRunnerLeavesRoutesAloneUntilThePlatformAnswers(t *testing.T) {
	t.Parallel()
	b := setupRunner(t, 200*time.Millisecond, desiredRoute(1, "worker-1", "10.200.1.0/24", "10.99.0.2"))
	mine := route("10.200.9.0/24", "10.99.0.2")
	b.tn.addRoute(t, mine, Protocol, 0, 0)
	b.runner.Platform.Token = "kbe_revoked"
	b.start(t)

	require.Eventually(t, func() bool { return len(b.transport.failures()) >= 3 }, 10*time.Second, 10*time.Millisecond)
	require.Contains(t, b.logs.String(), `error="poll the routes: the platform answered 401 Unauthorized: invalid edge token"`)
	require.Equal(t, []Route{mine}, b.tn.ownRoutes(t, 0, Protocol))
	require.Empty(t, b.platform.statuses())
}

// TestRunnerReportsAfterEveryPoll checks that an agent with nothing to do
// still tells the platform, after each poll, that it is alive.
func TestRunnerReportsAfterEveryPoll(t *testing.T) {
	t.Parallel()
	b := setupRunner(t, time.Hour, desiredRoute(1, "worker-1", "10.200.1.0/24", "10.99.0.2"))
	b.runner.Wait = time.Second
	b.start(t)

	require.Eventually(t, func() bool { return len(b.platform.statuses()) >= 3 }, 10*time.Second, 20*time.Millisecond)
	want := edgewire.RouteReport{Node: "host-1", Version: "v1", InPlace: 1, Added: 1, Failed: map[string]string{}}
	for _, st := range b.platform.statuses() {
		require.Equal(t, want, st, "the last converge's report, again")
	}
	require.Equal(t, 1, strings.Count(b.logs.String(), `msg="routes converged"`), "one converge: %s", b.logs)
}

// TestRunnerFollowsThePlatformsWaitLimit gives the runner a platform whose
// request timeout is shorter than the runner's wait.
func TestRunnerFollowsThePlatformsWaitLimit(t *testing.T) {
	t.Parallel()
	b := setupRunner(t, time.Hour, desiredRoute(1, "worker-1", "10.200.1.0/24", "10.99.0.2"))
	b.platform.mu.Lock()
	b.platform.maxWait = 10
	b.platform.mu.Unlock()
	b.start(t)

	b.waitForReport(t, "v1")
	require.Eventually(t, func() bool { return b.platform.waiting() == 1 }, 5*time.Second, 10*time.Millisecond)
	polls := b.platform.polls()
	require.Equal(t, url.Values{"version": {"v1"}, "wait": {"10"}}, polls[len(polls)-1])
	require.NotContains(t, b.logs.String(), "cannot reach the platform")
	require.Contains(t, b.logs.String(), `msg="the platform answers polls sooner than asked; polling within its limit" wait=10s`)
}

// TestStatusBounded keeps a report within what the platform takes.
func TestStatusBounded(t *testing.T) {
	t.Parallel()
	st := edgewire.RouteReport{Failed: map[string]string{}, Error: strings.Repeat("é", 3000)}
	for i := range edgewire.MaxReportedFailures + 5 {
		st.Failed[fmt.Sprintf("10.%d.%d.0/24", i/256, i%256)] = "unreachable"
	}
	long := strings.Repeat("x", 100)
	st.Failed[long] = strings.Repeat("ü", 2001)

	b := bounded(st)
	require.Equal(t, slices.Sorted(maps.Keys(st.Failed))[:edgewire.MaxReportedFailures], slices.Sorted(maps.Keys(b.Failed)), "the first by destination stay")
	require.Len(t, b.Error, 4000)
	require.True(t, utf8.ValidString(b.Error))

	b = bounded(edgewire.RouteReport{Failed: map[string]string{long: strings.Repeat("ü", 2001)}})
	require.Equal(t, map[string]string{long[:64]: strings.Repeat("ü", 2000)}, b.Failed)
}

func TestRunnerBackoffGrowsToItsCap(t *testing.T) {
	t.Parallel()
	var bo backoff
	span := minBackoff
	for range 10 {
		d := bo.next()
		require.GreaterOrEqual(t, d, span/2)
		require.LessOrEqual(t, d, span)
		span = min(2*span, maxBackoff)
	}
	require.Equal(t, time.Minute, span)
	bo.reset()
	require.LessOrEqual(t, bo.next(), time.Second)
}

func TestRunnerPollWait(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		wait    time.Duration
		maxWait time.Duration // the platform's limit
		next    time.Duration // from now; with no routes held when zero
		want    time.Duration
	}{
		{name: "default", want: DefaultWait},
		{name: "at most the API's limit", wait: 2 * time.Minute, want: MaxWait},
		{name: "at most the platform's limit", maxWait: 25 * time.Second, want: 25 * time.Second},
		{name: "at least a second", wait: time.Millisecond, want: time.Second},
		{name: "until the resync, rounded up", next: 2500 * time.Millisecond, want: 3 * time.Second},
		{name: "a resync due now", next: -time.Second, want: time.Second},
		{name: "a resync later than the wait", next: time.Hour, want: DefaultWait},
	}
	for _, tt := range tests {
		s := &runState{maxWait: tt.maxWait}
		if tt.next != 0 {
			s.desired = &desiredState{version: "v1"}
			s.next = time.Now().Add(tt.next)
		}
		require.Equal(t, tt.want, (&Runner{Wait: tt.wait}).pollWait(s), tt.name)
	}
}

// runnerBundle is a runner on a network namespace of its own, and the
// platform it talks to.
type runnerBundle struct {
	tn        testNetns
	platform  *fakePlatform
	runner    *Runner
	transport *countingTransport
	logs      *syncBuffer

	mu  sync.Mutex
	srv *httptest.Server
}

func setupRunner(t *testing.T, resync time.Duration, routes ...edgewire.TenantRoute) *runnerBundle {
	t.Helper()
	tn := newTestNetns(t)
	addNetwork(t, tn.h, "nodes0", "10.99.0.1/16")
	b := &runnerBundle{
		tn:        tn,
		platform:  newFakePlatform(t, routes...),
		transport: &countingTransport{base: http.DefaultTransport.(*http.Transport).Clone()},
		logs:      &syncBuffer{},
	}
	b.srv = httptest.NewServer(b.platform)
	t.Cleanup(func() { b.stopServer() })
	logger := slog.New(slog.NewTextHandler(b.logs, nil))
	b.runner = &Runner{
		Platform: &Remote{URL: b.srv.URL, Token: testToken, Client: &http.Client{Transport: b.transport}},
		Node:     "host-1",
		Agent:    &Agent{Handle: tn.h, Logger: logger},
		Resync:   resync,
		Logger:   logger,
		retry:    backoff{min: 50 * time.Millisecond, max: 400 * time.Millisecond},
	}
	return b
}

// start runs the runner until the test ends.
func (b *runnerBundle) start(t *testing.T) {
	t.Helper()
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() { done <- b.runner.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		require.NoError(t, <-done)
	})
}

// stopServer stops the platform, ending the polls that wait, and returns
// its address.
func (b *runnerBundle) stopServer() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	addr := b.srv.Listener.Addr().String()
	b.platform.goDown()
	b.srv.Close()
	return addr
}

// startServer serves the platform again at addr.
func (b *runnerBundle) startServer(t *testing.T, addr string) {
	t.Helper()
	ln, err := net.Listen("tcp", addr)
	require.NoError(t, err)
	srv := httptest.NewUnstartedServer(b.platform)
	srv.Listener.Close()
	srv.Listener = ln
	b.platform.comeUp()
	srv.Start()
	b.mu.Lock()
	b.srv = srv
	b.mu.Unlock()
}

// waitForReport waits for the first report on version and returns it.
func (b *runnerBundle) waitForReport(t *testing.T, version string) edgewire.RouteReport {
	t.Helper()
	var st edgewire.RouteReport
	require.Eventually(t, func() bool {
		for _, s := range b.platform.statuses() {
			if s.Version == version {
				st = s
				return true
			}
		}
		return false
	}, 10*time.Second, 10*time.Millisecond, "a report on %s; the runner says: %s", version, b.logs)
	return st
}

func desiredRoute(clusterID int64, node, dst, via string) edgewire.TenantRoute {
	return edgewire.TenantRoute{ClusterID: clusterID, Node: node, Dst: dst, Via: via}
}

// fakePlatform serves the platform's route API as it is specified, to
// testToken.
type fakePlatform struct {
	t *testing.T

	mu sync.Mutex
	// maxWait is the longest wait in seconds that a poll may ask for.
	maxWait int
	version int
	routes  []edgewire.TenantRoute
	// changed is closed when the routes change, down when the platform
	// goes down.
	changed, down chan struct{}
	polled        []url.Values
	waiters       int
	reports       []edgewire.RouteReport
}

func newFakePlatform(t *testing.T, routes ...edgewire.TenantRoute) *fakePlatform {
	return &fakePlatform{t: t, maxWait: 55, version: 1, routes: routes, changed: make(chan struct{}), down: make(chan struct{})}
}

// set makes routes the next version.
func (p *fakePlatform) set(routes ...edgewire.TenantRoute) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.version++
	p.routes = routes
	close(p.changed)
	p.changed = make(chan struct{})
}

// goDown makes every request fail, those waiting too, without an
// answer, until comeUp.
func (p *fakePlatform) goDown() {
	p.mu.Lock()
	defer p.mu.Unlock()
	select {
	case <-p.down:
	default:
		close(p.down)
	}
}

func (p *fakePlatform) comeUp() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.down = make(chan struct{})
}

func (p *fakePlatform) polls() []url.Values {
	p.mu.Lock()
	defer p.mu.Unlock()
	return slices.Clone(p.polled)
}

func (p *fakePlatform) waiting() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.waiters
}

func (p *fakePlatform) statuses() []edgewire.RouteReport {
	p.mu.Lock()
	defer p.mu.Unlock()
	return slices.Clone(p.reports)
}

func (p *fakePlatform) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	p.mu.Lock()
	down := p.down
	p.mu.Unlock()
	select {
	case <-down:
		panic(http.ErrAbortHandler)
	default:
	}
	if r.Header.Get("Authorization") != "Bearer "+testToken {
		apiError(w, http.StatusUnauthorized, "unauthorized", "invalid edge token")
		return
	}
	switch r.URL.Path {
	case "/api/v1/edge/routes":
		p.serveRoutes(w, r)
	case "/api/v1/edge/routes/status":
		p.serveStatus(w, r)
	default:
		p.t.Errorf("request to %s %s", r.Method, r.URL)
		apiError(w, http.StatusNotFound, "not_found", "Not found")
	}
}

func (p *fakePlatform) serveRoutes(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodGet {
		p.t.Errorf("%s %s", r.Method, r.URL)
		apiError(w, http.StatusMethodNotAllowed, "method_not_allowed", "Method not allowed")
		return
	}
	q := r.URL.Query()
	p.mu.Lock()
	maxWait := p.maxWait
	p.mu.Unlock()
	wait, err := strconv.Atoi(q.Get("wait"))
	if err != nil || wait < 0 || wait > maxWait {
		if err != nil || wait < 0 {
			p.t.Errorf("poll with wait %q", q.Get("wait"))
		}
		w.Header().Set("X-Max-Wait", strconv.Itoa(maxWait))
		apiError(w, http.StatusBadRequest, "bad_wait", "wait is a number of seconds from 0 to "+strconv.Itoa(maxWait))
		return
	}
	have := q.Get("version")
	p.mu.Lock()
	p.polled = append(p.polled, q)
	current, changed, down := p.current(), p.changed, p.down
	p.mu.Unlock()
	if have != "" && have == current {
		if !p.wait(r, time.Duration(wait)*time.Second, changed, down) {
			w.WriteHeader(http.StatusNotModified)
			return
		}
	}
	p.mu.Lock()
	d := edgewire.TenantRoutes{Version: p.current(), Routes: slices.Clone(p.routes)}
	p.mu.Unlock()
	w.Header().Set("ETag", strconv.Quote(d.Version))
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(d)
}

// wait waits for a change; false when the wait ended first.
func (p *fakePlatform) wait(r *http.Request, wait time.Duration, changed, down <-chan struct{}) bool {
	p.mu.Lock()
	p.waiters++
	p.mu.Unlock()
	defer func() {
		p.mu.Lock()
		p.waiters--
		p.mu.Unlock()
	}()
	select {
	case <-changed:
		return true
	case <-time.After(wait):
		return false
	case <-r.Context().Done():
		return false
	case <-down:
		panic(http.ErrAbortHandler)
	}
}

func (p *fakePlatform) current() string { return "v" + strconv.Itoa(p.version) }

// serveStatus takes a report with exactly the specified fields.
func (p *fakePlatform) serveStatus(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost || r.Header.Get("Content-Type") != "application/json" {
		p.t.Errorf("%s %s as %q", r.Method, r.URL, r.Header.Get("Content-Type"))
		apiError(w, http.StatusBadRequest, "bad_request", "POST JSON")
		return
	}
	var fields map[string]json.RawMessage
	if err := json.NewDecoder(r.Body).Decode(&fields); err != nil {
		p.t.Errorf("status body: %v", err)
		apiError(w, http.StatusBadRequest, "bad_request", err.Error())
		return
	}
	want := []string{"added", "error", "failed", "in_place", "node", "removed", "replaced", "version"}
	if got := slices.Sorted(maps.Keys(fields)); !slices.Equal(got, want) {
		p.t.Errorf("status fields %v, want %v", got, want)
	}
	raw, _ := json.Marshal(fields)
	var s edgewire.RouteReport
	if err := json.Unmarshal(raw, &s); err != nil {
		p.t.Errorf("status: %v", err)
	}
	p.mu.Lock()
	p.reports = append(p.reports, s)
	p.mu.Unlock()
	w.WriteHeader(http.StatusNoContent)
}

func apiError(w http.ResponseWriter, status int, code, message string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(map[string]any{"error": map[string]string{"code": code, "message": message}})
}

// countingTransport records when polls fail: one a step.
type countingTransport struct {
	base http.RoundTripper

	mu     sync.Mutex
	failed []time.Time
}

func (c *countingTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := c.base.RoundTrip(req)
	if req.Method == http.MethodGet && (err != nil || resp.StatusCode >= 400) {
		c.mu.Lock()
		c.failed = append(c.failed, time.Now())
		c.mu.Unlock()
	}
	return resp, err
}

func (c *countingTransport) failures() []time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return slices.Clone(c.failed)
}

// syncBuffer is a log that the test reads while the runner writes.
type syncBuffer struct {
	mu sync.Mutex
	b  strings.Builder
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}
