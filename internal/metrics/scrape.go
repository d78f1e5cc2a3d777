package metrics

import (
	"bufio"
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"
	"net/http"
	"strings"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"google.golang.org/protobuf/encoding/protowire"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
)

// Counters is what one scrape of a control plane's /metrics reads: the
// cumulative counters Derive subtracts from the next scrape's, and the
// gauges of the moment. The scrape job keeps the last one (as JSON) until
// the next scrape, so it stays small: a few hundred bytes plus the
// resources that hold objects.
type Counters struct {
	// Start is when the apiserver process started (unix seconds,
	// process_start_time_seconds), 0 if not reported: a different start
	// is a restart, which reset every counter.
	Start float64 `json:"start,omitempty"`
	// Requests answered since the start by verb class
	// (apiserver_request_total): reads are GET and LIST, writes POST, PUT,
	// PATCH, APPLY (server-side apply), DELETE and DELETECOLLECTION, watch
	// requests WATCH. CONNECT (exec, logs, port-forward, proxy) is in no
	// class. The apiserver counts a request when it is answered, so a
	// watch when it ends.
	Reads         float64 `json:"reads"`
	Writes        float64 `json:"writes"`
	WatchRequests float64 `json:"watch_requests"`
	// Errors is the answers with a 5xx code, every verb included.
	Errors float64 `json:"errors"`
	// Latency is the request-duration histogram of the reads and writes
	// together (apiserver_request_duration_seconds): watches and CONNECT
	// last as long as the client wants, so they say nothing of latency.
	Latency Histogram `json:"latency"`
	// Inflight is the most requests being served at once in the last
	// second, read-only and mutating together
	// (apiserver_current_inflight_requests).
	Inflight float64 `json:"inflight"`
	// OpenWatches is the watch requests open
	// (apiserver_longrunning_requests of verb WATCH), the apiserver's own
	// (about 30) included.
	OpenWatches int64 `json:"open_watches"`
	// Objects is the objects stored per resource, named like "pods" or
	// "deployments.apps" (apiserver_resource_objects, or
	// apiserver_storage_objects on an apiserver older than 1.34), -1 for a
	// resource the apiserver failed to count; resources without objects
	// are left out. The apiserver counts them every minute or so (its
	// --etcd-count-metric-poll-period, plus up to 120% of it at random).
	// Objects is nil when the apiserver does not count them.
	Objects map[string]int64 `json:"objects"`
}

// Histogram is a cumulative histogram: Counts[i] observations were at most
// Bounds[i] seconds, Count in all (the +Inf bucket).
type Histogram struct {
	Bounds []float64 `json:"le,omitempty"`
	Counts []uint64  `json:"counts,omitempty"`
	Count  uint64    `json:"count"`
}

// The metric families Parse reads. apiserver_resource_objects replaces
// apiserver_storage_objects (deprecated in 1.34); both carry the same
// counts, so either fills Counters.Objects.
const (
	familyRequests        = "apiserver_request_total"
	familyDuration        = "apiserver_request_duration_seconds"
	familyInflight        = "apiserver_current_inflight_requests"
	familyLongRunning     = "apiserver_longrunning_requests"
	familyResourceObjects = "apiserver_resource_objects"
	familyStorageObjects  = "apiserver_storage_objects"
	familyStart           = "process_start_time_seconds"
)

// wanted is whether Parse reads the family.
func wanted(name string) bool {
	switch name {
	case familyRequests, familyDuration, familyInflight, familyLongRunning,
		familyResourceObjects, familyStorageObjects, familyStart:
		return true
	}
	return false
}

// maxBody bounds the exposition Scrape reads: a real apiserver's is a few
// MB; past this, something is wrong and the scrape fails rather than
// holding the memory.
const maxBody = 64 << 20

// acceptMetrics asks for the delimited protobuf exposition, the text one
// if the server has no other. Protobuf is far cheaper to decode: on a test
// apiserver that served each verb of each resource (3.6 MB of text, 600 KB
// of protobuf), Parse takes 61 ms and 21 MB of allocations on the text,
// 3.7 ms and 1.8 MB on the protobuf (BenchmarkParse).
const acceptMetrics = string(expfmt.FmtProtoDelim) + ";q=0.9," + string(expfmt.FmtText) + ";q=0.5"

// Scrape reads the /metrics of the apiserver cfg points at, streaming the
// body into Parse. cfg.Timeout, or ctx, bounds the whole exchange. On the
// apiserver of BenchmarkParse, a scrape and its Derive cost this process
// about 9 ms of CPU in all (BenchmarkScrape), so 1,000 clusters scraped
// every minute take 0.15 core; the apiserver spends 35 to 55 ms gathering
// its metrics for each. client is cfg's HTTP client (rest.HTTPClientFor),
// made here when nil: a caller that asks the cluster more shares it, and
// closes its idle connection when done.
func Scrape(ctx context.Context, cfg *rest.Config, client *http.Client) (Counters, error) {
	if client == nil {
		var err error
		if client, err = rest.HTTPClientFor(cfg); err != nil {
			return Counters{}, fmt.Errorf("metrics client: %w", err)
		}
	}
	base, _, err := rest.DefaultServerUrlFor(cfg)
	if err != nil {
		return Counters{}, fmt.Errorf("metrics url: %w", err)
	}
	u := base.JoinPath("metrics")
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u.String(), nil)
	if err != nil {
		return Counters{}, fmt.Errorf("metrics request: %w", err)
	}
	req.Header.Set("Accept", acceptMetrics)
	// Uncompressed: gzip saves no CPU on either side (the apiserver's
	// cost is gathering), only bandwidth inside the host cluster.
	req.Header.Set("Accept-Encoding", "identity")
	resp, err := client.Do(req)
	if err != nil {
		return Counters{}, fmt.Errorf("get %s: %w", u.Redacted(), err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		msg, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
		return Counters{}, fmt.Errorf("get %s: %s: %s", u.Redacted(), resp.Status, bytes.TrimSpace(msg))
	}
	c, err := Parse(&limitedReader{r: resp.Body, n: maxBody}, expfmt.ResponseFormat(resp.Header))
	if err != nil {
		return Counters{}, fmt.Errorf("read %s: %w", u.Redacted(), err)
	}
	return c, nil
}

// limitedReader is io.LimitReader that fails past the limit instead of
// ending quietly: a truncated text exposition would parse.
type limitedReader struct {
	r io.Reader
	n int64
}

func (l *limitedReader) Read(p []byte) (int, error) {
	if l.n <= 0 {
		return 0, fmt.Errorf("more than %d bytes", maxBody)
	}
	if int64(len(p)) > l.n {
		p = p[:l.n]
	}
	n, err := l.r.Read(p)
	l.n -= int64(n)
	return n, err
}

// Parse reads the counters from a Prometheus exposition of an apiserver,
// in the delimited protobuf or the text format. It decodes one metric
// family at a time and only the families it reads: the others are dropped
// before expfmt sees them (by their frame in protobuf, by their lines in
// text), which is most of the cost saved.
func Parse(r io.Reader, format expfmt.Format) (Counters, error) {
	var acc accumulator
	var err error
	switch format.FormatType() {
	case expfmt.TypeProtoDelim:
		err = decodeProto(r, format, acc.add)
	case expfmt.TypeTextPlain:
		err = decodeText(r, acc.add)
	default:
		return Counters{}, fmt.Errorf("metrics format %q not supported", format)
	}
	if err != nil {
		return Counters{}, err
	}
	return acc.c, nil
}

// decodeProto calls add with each family Parse reads of a delimited
// protobuf exposition.
func decodeProto(r io.Reader, format expfmt.Format, add func(*dto.MetricFamily) error) error {
	dec := expfmt.NewDecoder(&protoFilter{br: bufio.NewReaderSize(r, 32<<10)}, format)
	for {
		var mf dto.MetricFamily
		if err := dec.Decode(&mf); err != nil {
			if errors.Is(err, io.EOF) {
				return nil
			}
			return fmt.Errorf("decode metrics: %w", err)
		}
		if err := add(&mf); err != nil {
			return err
		}
	}
}

// protoFilter passes on the frames of a delimited protobuf exposition
// (each a varint length and a MetricFamily message) whose family Parse
// reads, and skips the others unread. It looks only at the frame's length
// and its first field, the family name (field 1, which protobuf encoders
// write first); a frame it cannot tell passes on, and expfmt decodes every
// frame that passes.
type protoFilter struct {
	br   *bufio.Reader
	left int // bytes of the current frame still to pass on
}

func (f *protoFilter) Read(p []byte) (int, error) {
	for f.left == 0 {
		if err := f.next(); err != nil {
			return 0, err
		}
	}
	if len(p) > f.left {
		p = p[:f.left]
	}
	n, err := f.br.Read(p)
	f.left -= n
	if errors.Is(err, io.EOF) && f.left > 0 {
		err = io.ErrUnexpectedEOF
	}
	return n, err
}

// next finds the next frame to pass on, discarding those before it.
func (f *protoFilter) next() error {
	head, err := f.br.Peek(binary.MaxVarintLen64)
	if len(head) == 0 {
		return err
	}
	size, n := protowire.ConsumeVarint(head)
	if n < 0 {
		return fmt.Errorf("metrics frame: %w", protowire.ParseError(n))
	}
	if size > maxBody {
		return fmt.Errorf("metrics frame of %d bytes", size)
	}
	frame := n + int(size)
	// The name comes first, at most a few hundred bytes long.
	peek, _ := f.br.Peek(n + min(int(size), 512))
	if name, ok := frameName(peek[n:]); ok && !wanted(name) {
		if _, err := f.br.Discard(frame); err != nil {
			return fmt.Errorf("metrics frame: %w", io.ErrUnexpectedEOF)
		}
		return nil
	}
	f.left = frame
	return nil
}

// frameName is the family name of a MetricFamily message that starts as
// msg does, if its first field is the name.
func frameName(msg []byte) (string, bool) {
	num, typ, n := protowire.ConsumeTag(msg)
	if n < 0 || num != 1 || typ != protowire.BytesType {
		return "", false
	}
	name, m := protowire.ConsumeBytes(msg[n:])
	if m < 0 {
		return "", false
	}
	return string(name), true
}

// decodeText calls add with each family Parse reads of a text exposition.
// A family's lines (its # HELP and # TYPE, then its samples) are
// consecutive; the lines of the families Parse reads are gathered one
// family at a time and parsed by expfmt, the others dropped as they come.
func decodeText(r io.Reader, add func(*dto.MetricFamily) error) error {
	br := bufio.NewReaderSize(r, 32<<10)
	parser := expfmt.NewTextParser(model.UTF8Validation)
	var chunk bytes.Buffer
	flush := func() error {
		if chunk.Len() == 0 {
			return nil
		}
		fams, err := parser.TextToMetricFamilies(&chunk)
		if err != nil {
			return fmt.Errorf("decode metrics: %w", err)
		}
		chunk.Reset()
		for _, mf := range fams {
			if err := add(mf); err != nil {
				return err
			}
		}
		return nil
	}
	var family string
	keepFamily, keepLine, midLine := false, false, false
	for {
		line, err := br.ReadSlice('\n')
		if !midLine {
			name, sample := lineName(line)
			if name != nil && string(name) != family && !(sample && inFamily(name, family)) {
				if err := flush(); err != nil {
					return err
				}
				family = string(name)
				keepFamily = wanted(family)
			}
			keepLine = name != nil && keepFamily
		}
		if keepLine {
			chunk.Write(line)
		}
		// A line longer than the buffer comes in pieces.
		midLine = errors.Is(err, bufio.ErrBufferFull)
		if err != nil && !midLine {
			if !errors.Is(err, io.EOF) {
				return fmt.Errorf("read metrics: %w", err)
			}
			return flush()
		}
	}
}

// lineName is the family a # HELP or # TYPE line of a text exposition
// names, or the metric name of a sample line (sample true); nil for
// other comments and blank lines.
func lineName(line []byte) (name []byte, sample bool) {
	if len(line) == 0 {
		return nil, false
	}
	if line[0] == '#' {
		rest, ok := bytes.CutPrefix(line, []byte("# HELP "))
		if !ok {
			rest, ok = bytes.CutPrefix(line, []byte("# TYPE "))
		}
		if !ok {
			return nil, false
		}
		if end := bytes.IndexAny(rest, " \t\n"); end >= 0 {
			rest = rest[:end]
		}
		return rest, false
	}
	end := bytes.IndexAny(line, "{ \t\n")
	if end <= 0 {
		return nil, false
	}
	return line[:end], true
}

// inFamily is whether a sample's metric name is of the family: its name,
// or its name with a histogram's or a summary's suffix.
func inFamily(name []byte, family string) bool {
	if family == "" || len(name) < len(family) || string(name[:len(family)]) != family {
		return false
	}
	switch string(name[len(family):]) {
	case "", "_bucket", "_sum", "_count":
		return true
	}
	return false
}

// accumulator sums the families Parse reads into Counters.
type accumulator struct {
	c Counters
}

func (a *accumulator) add(mf *dto.MetricFamily) error {
	switch mf.GetName() {
	case familyRequests:
		a.addRequests(mf.GetMetric())
	case familyDuration:
		return a.addDurations(mf.GetMetric())
	case familyInflight:
		for _, m := range mf.GetMetric() {
			a.c.Inflight += value(m)
		}
	case familyLongRunning:
		for _, m := range mf.GetMetric() {
			if label(m, "verb") == "WATCH" {
				a.c.OpenWatches += int64(value(m))
			}
		}
	case familyResourceObjects, familyStorageObjects:
		a.addObjects(mf.GetMetric())
	case familyStart:
		for _, m := range mf.GetMetric() {
			a.c.Start = value(m)
		}
	}
	return nil
}

func (a *accumulator) addRequests(ms []*dto.Metric) {
	for _, m := range ms {
		v := value(m)
		switch verbClass(label(m, "verb")) {
		case classRead:
			a.c.Reads += v
		case classWrite:
			a.c.Writes += v
		case classWatch:
			a.c.WatchRequests += v
		}
		if strings.HasPrefix(label(m, "code"), "5") {
			a.c.Errors += v
		}
	}
}

// addDurations sums the histograms of the reads and writes. They share
// their buckets (one histogram vector).
func (a *accumulator) addDurations(ms []*dto.Metric) error {
	h := &a.c.Latency
	for _, m := range ms {
		if c := verbClass(label(m, "verb")); c != classRead && c != classWrite {
			continue
		}
		hist := m.GetHistogram()
		if hist == nil {
			continue
		}
		var bounds []float64
		var counts []uint64
		for _, b := range hist.GetBucket() {
			if math.IsInf(b.GetUpperBound(), 1) {
				continue // the +Inf bucket of the text format is the count
			}
			bounds = append(bounds, b.GetUpperBound())
			counts = append(counts, bucketCount(b))
		}
		if h.Bounds == nil {
			h.Bounds, h.Counts = bounds, counts
		} else if !equalBounds(h.Bounds, bounds) {
			return fmt.Errorf("%s: series with different buckets", familyDuration)
		} else {
			for i := range counts {
				h.Counts[i] += counts[i]
			}
		}
		h.Count += sampleCount(hist)
	}
	return nil
}

func (a *accumulator) addObjects(ms []*dto.Metric) {
	if a.c.Objects == nil {
		a.c.Objects = map[string]int64{}
	}
	for _, m := range ms {
		n := int64(value(m))
		if n == 0 {
			continue
		}
		n = max(n, -1) // the apiserver's "could not count"
		resource := label(m, "resource")
		if g := label(m, "group"); g != "" {
			resource += "." + g
		}
		a.c.Objects[resource] = n
	}
}

// verbClass is the class a request's verb (as apiserver_request_total
// reports it) counts in.
type class int

const (
	classNone class = iota
	classRead
	classWrite
	classWatch
)

func verbClass(verb string) class {
	switch verb {
	case "GET", "LIST":
		return classRead
	case "POST", "PUT", "PATCH", "APPLY", "DELETE", "DELETECOLLECTION":
		return classWrite
	case "WATCH":
		return classWatch
	}
	return classNone
}

func label(m *dto.Metric, name string) string {
	for _, l := range m.GetLabel() {
		if l.GetName() == name {
			return l.GetValue()
		}
	}
	return ""
}

// value is a counter's, a gauge's or an untyped sample's value.
func value(m *dto.Metric) float64 {
	switch {
	case m.Counter != nil:
		return m.Counter.GetValue()
	case m.Gauge != nil:
		return m.Gauge.GetValue()
	case m.Untyped != nil:
		return m.Untyped.GetValue()
	}
	return 0
}

func bucketCount(b *dto.Bucket) uint64 {
	if b.CumulativeCountFloat != nil {
		return uint64(b.GetCumulativeCountFloat())
	}
	return b.GetCumulativeCount()
}

func sampleCount(h *dto.Histogram) uint64 {
	if h.SampleCountFloat != nil {
		return uint64(h.GetSampleCountFloat())
	}
	return h.GetSampleCount()
}

func equalBounds(a, b []float64) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// CountNodesPods counts a cluster's nodes (and those Ready) and pods (and
// those Running). Both lists ask for resourceVersion "0", so the
// apiserver's watch cache answers and etcd is not read. That is also why
// the pods are not listed in pages: an apiserver ignores the limit of a
// list at resourceVersion "0", and a paged list (resourceVersion "") is a
// consistent read, served by the cache only on an apiserver of 1.34 or
// later whose storage supports progress notifications, by etcd otherwise.
// A clientset asking for protobuf (rest.Config.ContentType
// "application/vnd.kubernetes.protobuf") decodes the lists several times
// cheaper than JSON.
func CountNodesPods(ctx context.Context, kc kubernetes.Interface) (nodesReady, nodesTotal, podsRunning, podsTotal int32, err error) {
	fromCache := metav1.ListOptions{ResourceVersion: "0"}
	nodes, err := kc.CoreV1().Nodes().List(ctx, fromCache)
	if err != nil {
		return 0, 0, 0, 0, fmt.Errorf("list nodes: %w", err)
	}
	for i := range nodes.Items {
		if nodeReady(&nodes.Items[i]) {
			nodesReady++
		}
	}
	pods, err := kc.CoreV1().Pods(metav1.NamespaceAll).List(ctx, fromCache)
	if err != nil {
		return 0, 0, 0, 0, fmt.Errorf("list pods: %w", err)
	}
	for i := range pods.Items {
		if pods.Items[i].Status.Phase == corev1.PodRunning {
			podsRunning++
		}
	}
	return nodesReady, int32(len(nodes.Items)), podsRunning, int32(len(pods.Items)), nil
}

func nodeReady(n *corev1.Node) bool {
	for _, c := range n.Status.Conditions {
		if c.Type == corev1.NodeReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}
