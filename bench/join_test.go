package bench

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"
	bootstraputil "k8s.io/cluster-bootstrap/token/util"

	"github.com/kubebyon/kubebyon/internal/secrets"
	"github.com/kubebyon/kubebyon/internal/testenv"
	"github.com/kubebyon/kubebyon/queries"
)

const (
	joinBenchTokens      = 10_000
	joinBenchRequests    = 20_000 // per endpoint
	joinBenchConcurrency = 16
	joinBenchTimeLimit   = 5 * time.Minute // per endpoint
	// joinBenchClients spreads each iteration's join requests over this
	// many client addresses: 20,000 / 1,000 = 20 each, well under the
	// per-address limit of the join script (ratelimit.JoinScriptPerIP).
	joinBenchClients = 1_000
)

// BenchmarkJoinScript serves the real handlers with 10,000 join tokens of
// a ready cluster in the database, then fetches the join script of random
// tokens with joinBenchConcurrency keep-alive HTTP/1.1 clients, and
// /healthz (no database) in the same run as the baseline, in alternating
// slices (pairedLoad), benchRounds times. It reports requests per second,
// p50/p99 latency and CPU per request of each (the last round's), and the
// join's throughput as the median percentage of /healthz's over every
// slice pair.
//
// The join endpoint counts every request against its client address. Each
// request here comes through a trusted proxy (the loopback network) with
// X-Forwarded-For naming one of joinBenchClients addresses, as a fleet of
// machines behind a load balancer would: the figures include the rate
// limiter's database write, as real joins do, and every response must be
// the 200 script, not a cheap refusal.
func BenchmarkJoinScript(b *testing.B) {
	ctx := context.Background()
	pool := testenv.DB(b)
	key := bytes.Repeat([]byte{6}, 32)
	box, err := secrets.New(key)
	require.NoError(b, err)
	q := queries.New(pool)
	u, err := q.UserCreateUnverified(ctx, queries.UserCreateUnverifiedParams{Email: "joinbench@example.com", Name: "Bench"})
	require.NoError(b, err)
	cl, err := q.ClusterCreate(ctx, queries.ClusterCreateParams{OwnerID: u.ID, Name: "joins", Slug: "joins-bench", KubernetesVersion: "v1.34.0", PublicAccessMode: "loadbalancer"})
	require.NoError(b, err)
	_, err = q.ClusterMarkReady(ctx, queries.ClusterMarkReadyParams{ID: cl.ID, Endpoint: "joins.bench.test:443", Generation: cl.Generation})
	require.NoError(b, err)
	// The CA the first join learns from the cluster's kubeconfig, kept on
	// the row: every join after it reads it from there.
	cl, err = q.ClusterGetByID(ctx, cl.ID)
	require.NoError(b, err)
	require.NoError(b, q.ClusterSetCACert(ctx, queries.ClusterSetCACertParams{CaCert: string(testenv.SelfSignedCA(b, "bench cluster CA")), ID: cl.ID, UpdatedAt: cl.UpdatedAt}))
	tokens := insertJoinTokens(b, pool, box, cl.ID)
	// As a database in use is: its statistics known (the planner would
	// otherwise take the freshly filled table for empty), hint bits set.
	_, err = pool.Exec(ctx, "VACUUM ANALYZE")
	require.NoError(b, err)

	srv := benchServer(b, pool, key)
	baseURL := srv.url
	// As 'curl -fsSL' asks: without Accept-Encoding (Go's transport
	// would otherwise ask for gzip and the server compress the script).
	hc := &http.Client{Transport: &http.Transport{
		MaxIdleConns: joinBenchConcurrency, MaxIdleConnsPerHost: joinBenchConcurrency,
		ForceAttemptHTTP2: false, IdleConnTimeout: time.Minute, DisableCompression: true,
	}}

	resp, err := hc.Get(baseURL + "/join/" + tokens[0])
	require.NoError(b, err)
	script, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	require.NoError(b, err)
	require.Equal(b, http.StatusOK, resp.StatusCode, string(script))
	require.Contains(b, string(script), "joins.bench.test:443", "the 200s measured are the join script")
	require.Contains(b, string(script), "BEGIN CERTIFICATE", "with the cluster's CA")

	for i := 0; i < b.N; i++ {
		b.ResetTimer()
		var health, join loadResult
		var ratios []float64
		for round := range benchRounds {
			h, j, r := pairedLoad(b, srv, "join", hc, func(int) *http.Request {
				req, _ := http.NewRequest(http.MethodGet, baseURL+"/healthz", nil)
				return req
			}, func(n int) *http.Request {
				req, _ := http.NewRequest(http.MethodGet, baseURL+"/join/"+tokens[rand.IntN(len(tokens))], nil)
				// Each round its own addresses: the rounds on one server
				// would otherwise pass the limit.
				c := (i*benchRounds+round)*joinBenchClients + n%joinBenchClients + 1
				req.Header.Set("X-Forwarded-For", fmt.Sprintf("10.%d.%d.%d", c>>16&255, c>>8&255, c&255))
				return req
			})
			for name, r := range map[string]loadResult{"join": j, "healthz": h} {
				require.Equal(b, joinBenchRequests, r.ok, "%s: %d of %d answered 200 (statuses %v)", name, r.ok, joinBenchRequests, r.statuses)
			}
			health, join = h, j
			ratios = append(ratios, r...)
		}
		b.StopTimer()
		reportLoad(b, "join", join)
		reportLoad(b, "healthz", health)
		b.ReportMetric(median(ratios), "join-%-of-healthz")
	}
}

// benchRounds is how many times a benchmark measures each load, each
// against a /healthz load of its own (pairedLoad).
const benchRounds = 3

// benchSlices is how many slices pairedLoad cuts a round's loads into,
// each page slice right after a /healthz slice: a ratio is taken within
// each pair and the median of them all reported. The machine's slow
// moments (a checkpoint, another process, a neighbour on the same host)
// last from a fraction of a second to seconds; a pair a second long sees
// the same machine on both sides, and one that did not moves one ratio
// of many, not the figure. (Whole loads of 20,000 requests, /healthz's
// about one second and a page's seven, gave ratios up to a tenth apart
// from one run to the next.)
const benchSlices = 10

// pairedLoad sends joinBenchRequests requests made by next and as many
// made by health (/healthz, the baseline) to t, in benchSlices alternating
// slices, and returns both loads' totals with the ratio of each slice
// pair in percent (next's throughput over health's). The server's CPU
// profile (target.profile) is of a slice of next, named name.
func pairedLoad(b *testing.B, t *target, name string, hc *http.Client, health, next func(n int) *http.Request) (h, p loadResult, ratios []float64) {
	b.Helper()
	per := joinBenchRequests / benchSlices
	for slice := range benchSlices {
		profile := ""
		if slice == benchSlices/2 {
			profile = name
		}
		// Each slice starts on a collected heap: none pays for the
		// garbage of the one before.
		t.gc(b)
		hs := load(b, t, "", hc, per, health)
		t.gc(b)
		ps := load(b, t, profile, hc, per, next)
		ratios = append(ratios, 100*ps.perSecond()/hs.perSecond())
		h.add(hs)
		p.add(ps)
	}
	slices.Sort(h.latencies)
	slices.Sort(p.latencies)
	return h, p, ratios
}

// add counts o's requests, time and CPU in r (whose latencies are then
// no longer sorted).
func (r *loadResult) add(o loadResult) {
	if r.statuses == nil {
		r.statuses = map[int]int{}
	}
	r.ok += o.ok
	for s, c := range o.statuses {
		r.statuses[s] += c
	}
	r.latencies = append(r.latencies, o.latencies...)
	r.elapsed += o.elapsed
	r.cpu = r.cpu.plus(o.cpu)
}

// median is the middle of xs (the mean of the two middle ones for an even
// count).
func median(xs []float64) float64 {
	s := slices.Clone(xs)
	slices.Sort(s)
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

// reportLoad reports under name a load's throughput, latency, the
// server's CPU per request (the headline: its process and PostgreSQL's,
// then each), the load generator's, and the share of the machine's CPU
// time left idle (where a load that should keep every CPU busy does not,
// it waits on something else).
func reportLoad(b *testing.B, name string, r loadResult) {
	b.ReportMetric(r.perSecond(), name+"-req/s")
	b.ReportMetric(r.quantile(0.50), name+"-p50-ms")
	b.ReportMetric(r.quantile(0.99), name+"-p99-ms")
	server, pg, client := r.perRequest()
	b.ReportMetric(server+pg, name+"-cpu-µs/req")
	b.ReportMetric(server, name+"-go-µs/req")
	b.ReportMetric(pg, name+"-pg-µs/req")
	b.ReportMetric(client, name+"-client-µs/req")
	b.ReportMetric(100*r.cpu.idle.Seconds()/(r.elapsed.Seconds()*float64(runtime.NumCPU())), name+"-idle-%")
}

// insertJoinTokens stores joinBenchTokens unlimited, unexpiring tokens of
// the cluster with one COPY, and returns their values.
func insertJoinTokens(b *testing.B, pool *pgxpool.Pool, box *secrets.Box, clusterID int64) []string {
	b.Helper()
	seen := make(map[string]bool, joinBenchTokens)
	var values []string
	var rows [][]any
	for len(values) < joinBenchTokens {
		v, err := bootstraputil.GenerateBootstrapToken()
		require.NoError(b, err)
		id, _, _ := strings.Cut(v, ".")
		if seen[id] { // token ids are unique per cluster
			continue
		}
		seen[id] = true
		values = append(values, v)
		// jointokens.Service hashes a token so; were it to change, every
		// lookup would miss, and the benchmark fails on the 404s.
		rows = append(rows, []any{clusterID, id, box.MAC("join-token", []byte(v)), box.Seal([]byte(v))})
	}
	n, err := pool.CopyFrom(context.Background(), pgx.Identifier{"join_tokens"},
		[]string{"cluster_id", "token_id", "token_hash", "sealed_token"}, pgx.CopyFromRows(rows))
	require.NoError(b, err)
	require.EqualValues(b, joinBenchTokens, n)
	return values
}

// loadResult is what a load run measured.
type loadResult struct {
	ok        int
	statuses  map[int]int
	latencies []time.Duration // sorted
	elapsed   time.Duration
	// cpu is the CPU time the server, PostgreSQL and the load generator
	// spent in the load (readCPU): a backend that exits during it (none
	// does) is missed.
	cpu cpuTimes
}

// perRequest is the CPU time per request of the server's process, of
// PostgreSQL and of the load generator (this process), in microseconds.
func (r loadResult) perRequest() (server, postgres, client float64) {
	n := float64(len(r.latencies))
	us := func(d time.Duration) float64 { return float64(d.Microseconds()) / n }
	return us(r.cpu.server), us(r.cpu.postgres), us(r.cpu.client)
}

func (r loadResult) perSecond() float64 { return float64(len(r.latencies)) / r.elapsed.Seconds() }

// quantile is the latency at q, in milliseconds.
func (r loadResult) quantile(q float64) float64 {
	return float64(r.latencies[int(q*float64(len(r.latencies)-1))].Microseconds()) / 1000
}

// load sends requests requests made by next (given the request's number)
// to t from joinBenchConcurrency goroutines, reading every body so the
// connections are kept alive, and fails past joinBenchTimeLimit. profile,
// unless empty, names the server's CPU profile of the load
// (target.profile).
func load(b *testing.B, t *target, profile string, hc *http.Client, requests int, next func(n int) *http.Request) loadResult {
	b.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), joinBenchTimeLimit)
	defer cancel()
	var counter atomic.Int64
	var mu sync.Mutex
	res := loadResult{statuses: map[int]int{}}
	var firstErr error
	var wg sync.WaitGroup
	if profile != "" {
		defer t.profile(b, profile)()
	}
	cpu0 := readCPU(t.pid)
	start := time.Now()
	for range joinBenchConcurrency {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var lat []time.Duration
			statuses := map[int]int{}
			var err error
			for n := int(counter.Add(1)) - 1; n < requests && err == nil; n = int(counter.Add(1)) - 1 {
				t0 := time.Now()
				var status int
				status, err = roundTrip(hc, next(n).WithContext(ctx))
				lat = append(lat, time.Since(t0))
				statuses[status]++
			}
			mu.Lock()
			defer mu.Unlock()
			res.latencies = append(res.latencies, lat...)
			for s, c := range statuses {
				res.statuses[s] += c
			}
			if err != nil && firstErr == nil {
				firstErr = err
			}
		}()
	}
	wg.Wait()
	res.finish(b, t, start, cpu0, firstErr)
	return res
}

// finish records the end of a load on t that began at start with the CPU
// times cpu0, and fails on its first error.
func (r *loadResult) finish(b *testing.B, t *target, start time.Time, cpu0 cpuTimes, err error) {
	r.elapsed = time.Since(start)
	r.cpu = readCPU(t.pid).since(cpu0)
	require.NoError(b, err)
	r.ok = r.statuses[http.StatusOK]
	slices.Sort(r.latencies)
}

// roundTrip sends req and reads the whole answer.
func roundTrip(hc *http.Client, req *http.Request) (int, error) {
	resp, err := hc.Do(req)
	if err != nil {
		return 0, fmt.Errorf("get %s: %w", req.URL.Path, err)
	}
	defer resp.Body.Close()
	if _, err := io.Copy(io.Discard, resp.Body); err != nil {
		return 0, fmt.Errorf("read %s: %w", req.URL.Path, err)
	}
	if resp.Header.Get("X-KubeBYON-Join-Refused") != "" {
		// A refusal is a 200 too (a script that exits 1): it counts apart.
		return statusJoinRefused, nil
	}
	return resp.StatusCode, nil
}

// statusJoinRefused stands for a refused join among the HTTP statuses.
const statusJoinRefused = -1

// loadAtRate sends rate requests per second made by next to t for d, each at
// its scheduled instant whether or not the ones before have answered (an
// open loop: a slow answer does not slow the requests down), and measures
// each one's latency from that instant, so that time spent waiting to be
// sent counts too.
func loadAtRate(b *testing.B, t *target, hc *http.Client, rate int, d time.Duration, next func(n int) *http.Request) loadResult {
	b.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), d+joinBenchTimeLimit)
	defer cancel()
	total := int(float64(rate) * d.Seconds())
	interval := time.Second / time.Duration(rate)
	res := loadResult{statuses: map[int]int{}, latencies: make([]time.Duration, 0, total)}
	var mu sync.Mutex
	var firstErr error
	var wg sync.WaitGroup
	cpu0 := readCPU(t.pid)
	start := time.Now()
	for n := range total {
		at := start.Add(time.Duration(n) * interval)
		time.Sleep(time.Until(at))
		wg.Go(func() {
			status, err := roundTrip(hc, next(n).WithContext(ctx))
			lat := time.Since(at)
			mu.Lock()
			defer mu.Unlock()
			res.latencies = append(res.latencies, lat)
			res.statuses[status]++
			if err != nil && firstErr == nil {
				firstErr = err
			}
		})
	}
	wg.Wait()
	res.finish(b, t, start, cpu0, firstErr)
	return res
}
