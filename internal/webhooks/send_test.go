package webhooks

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"net/url"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// local allows the tests' servers on 127.0.0.1, which are refused
// otherwise (TestSendRefusesInternalAddresses).
var local = Guard{Allowed: []netip.Prefix{netip.MustParsePrefix("127.0.0.1/32")}}

// received is one request a test server got.
type received struct {
	header http.Header
	query  url.Values
	body   []byte
}

// server answers every request with code and answer, and hands what it
// received to the test.
func server(t *testing.T, code int, answer string) (*httptest.Server, <-chan received) {
	t.Helper()
	got := make(chan received, 10)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		got <- received{header: r.Header.Clone(), query: r.URL.Query(), body: b}
		w.WriteHeader(code)
		_, _ = io.WriteString(w, answer)
	}))
	t.Cleanup(srv.Close)
	return srv, got
}

var testEvent = Event{
	ID: "evt_1", Kind: "cluster_failed", Time: time.Date(2026, 12, 3, 1, 2, 3, 0, time.UTC),
	Title: "Cluster demo failed", Body: "Your cluster demo failed.",
	Links:   []Link{{Title: "Cluster", URL: "https://kubebyon.example.com/clusters/7"}},
	Cluster: &Cluster{ID: 7, Name: "demo"},
}

// TestGenericSignature: the receiver verifies the signature of the body it
// got with the channel's secret and the timestamp header, and reads the
// documented payload.
func TestGenericSignature(t *testing.T) {
	t.Parallel()
	srv, got := server(t, http.StatusNoContent, "")
	now := time.Unix(1764723723, 0)
	o := Send(context.Background(), local.Client(), Target{Kind: Generic, URL: srv.URL + "/hook", Secret: "whsec_test"}, testEvent, now)
	require.NoError(t, o.Err)
	require.Equal(t, http.StatusNoContent, o.Code)
	r := <-got

	ts := r.header.Get(HeaderTimestamp)
	require.Equal(t, "1764723723", ts)
	m := hmac.New(sha256.New, []byte("whsec_test"))
	m.Write([]byte(ts + "."))
	m.Write(r.body)
	require.Equal(t, "sha256="+hex.EncodeToString(m.Sum(nil)), r.header.Get(HeaderSignature))
	require.Equal(t, "cluster_failed", r.header.Get(HeaderEvent))
	require.Equal(t, "evt_1", r.header.Get(HeaderDelivery))

	var payload map[string]any
	require.NoError(t, json.Unmarshal(r.body, &payload))
	require.Equal(t, map[string]any{
		"id": "evt_1", "kind": "cluster_failed", "time": "2026-12-03T01:02:03Z",
		"title": "Cluster demo failed", "body": "Your cluster demo failed.",
		"links":   []any{map[string]any{"title": "Cluster", "url": "https://kubebyon.example.com/clusters/7"}},
		"cluster": map[string]any{"id": float64(7), "name": "demo"},
	}, payload)

	// Another secret does not verify.
	require.NotEqual(t, Sign("other", now.Unix(), r.body), r.header.Get(HeaderSignature))
}

// TestChatPayloads: each chat service gets its documented shape, signed
// as it documents when a secret is set.
func TestChatPayloads(t *testing.T) {
	t.Parallel()
	now := time.Unix(1764723723, 0)
	text := "Cluster demo failed\nYour cluster demo failed.\nhttps://kubebyon.example.com/clusters/7"
	tests := []struct {
		kind, secret, answer string
		want                 map[string]any
		check                func(t *testing.T, r received)
	}{
		{kind: Slack, answer: "ok", want: map[string]any{"text": text}},
		{kind: WeCom, answer: `{"errcode":0,"errmsg":"ok"}`, want: map[string]any{"msgtype": "text", "text": map[string]any{"content": text}}},
		{kind: DingTalk, answer: `{"errcode":0,"errmsg":"ok"}`, want: map[string]any{"msgtype": "text", "text": map[string]any{"content": text}}},
		{
			kind: DingTalk, secret: "SECdemo", answer: `{"errcode":0,"errmsg":"ok"}`,
			want: map[string]any{"msgtype": "text", "text": map[string]any{"content": text}},
			check: func(t *testing.T, r received) {
				require.Equal(t, "tok", r.query.Get("access_token"), "the URL's own query is kept")
				ms := r.query.Get("timestamp")
				require.Equal(t, strconv.FormatInt(now.UnixMilli(), 10), ms)
				m := hmac.New(sha256.New, []byte("SECdemo"))
				m.Write([]byte(ms + "\nSECdemo"))
				require.Equal(t, base64.StdEncoding.EncodeToString(m.Sum(nil)), r.query.Get("sign"))
			},
		},
		{kind: Feishu, answer: `{"code":0,"msg":"success","data":{}}`, want: map[string]any{"msg_type": "text", "content": map[string]any{"text": text}}},
		{
			kind: Feishu, secret: "feishu-secret", answer: `{"code":0,"msg":"success","data":{}}`,
			want: map[string]any{
				"msg_type": "text", "content": map[string]any{"text": text}, "timestamp": "1764723723",
				"sign": func() string {
					m := hmac.New(sha256.New, []byte("1764723723\nfeishu-secret"))
					return base64.StdEncoding.EncodeToString(m.Sum(nil))
				}(),
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.kind+"/"+tt.secret, func(t *testing.T) {
			t.Parallel()
			srv, got := server(t, http.StatusOK, tt.answer)
			o := Send(context.Background(), local.Client(), Target{Kind: tt.kind, URL: srv.URL + "/robot/send?access_token=tok", Secret: tt.secret}, testEvent, now)
			require.NoError(t, o.Err)
			r := <-got
			var payload map[string]any
			require.NoError(t, json.Unmarshal(r.body, &payload))
			require.Equal(t, tt.want, payload)
			require.Empty(t, r.header.Get(HeaderSignature), "chat services get no generic signature")
			if tt.check != nil {
				tt.check(t, r)
			}
		})
	}
}

// TestChatErrorCodes: chat services answer 200 with an error code in the
// body; that is a failed delivery with the service's message, retried only
// when it is a rate limit.
func TestChatErrorCodes(t *testing.T) {
	t.Parallel()
	tests := []struct {
		kind, answer, want string
		retry              bool
	}{
		{DingTalk, `{"errcode":310000,"errmsg":"sign not match"}`, "dingtalk error 310000: sign not match", false},
		{DingTalk, `{"errcode":130101,"errmsg":"send too fast"}`, "dingtalk error 130101: send too fast", true},
		{WeCom, `{"errcode":93000,"errmsg":"invalid webhook url"}`, "wecom error 93000: invalid webhook url", false},
		{WeCom, `{"errcode":45009,"errmsg":"api freq out of limit"}`, "wecom error 45009", true},
		{Feishu, `{"code":19021,"msg":"sign match fail or timestamp is not within one hour from current time"}`, "feishu error 19021: sign match fail", false},
	}
	for _, tt := range tests {
		t.Run(tt.want, func(t *testing.T) {
			t.Parallel()
			srv, _ := server(t, http.StatusOK, tt.answer)
			o := Send(context.Background(), local.Client(), Target{Kind: tt.kind, URL: srv.URL}, testEvent, time.Now())
			require.ErrorContains(t, o.Err, tt.want)
			require.Equal(t, http.StatusOK, o.Code)
			require.Equal(t, tt.retry, o.Retry, "only rate limits are retried")
		})
	}
}

// TestSendStatuses: 5xx and 429 may be retried, other 4xx may not.
func TestSendStatuses(t *testing.T) {
	t.Parallel()
	tests := []struct {
		code  int
		retry bool
	}{
		{http.StatusInternalServerError, true},
		{http.StatusBadGateway, true},
		{http.StatusServiceUnavailable, true},
		{http.StatusTooManyRequests, true},
		{http.StatusBadRequest, false},
		{http.StatusUnauthorized, false},
		{http.StatusNotFound, false},
		{http.StatusGone, false},
	}
	for _, tt := range tests {
		t.Run(strconv.Itoa(tt.code), func(t *testing.T) {
			t.Parallel()
			srv, _ := server(t, tt.code, "no such hook")
			o := Send(context.Background(), local.Client(), Target{Kind: Generic, URL: srv.URL, Secret: "s"}, testEvent, time.Now())
			require.EqualError(t, o.Err, "HTTP "+strconv.Itoa(tt.code)+": no such hook")
			require.Equal(t, tt.code, o.Code)
			require.Equal(t, tt.retry, o.Retry)
		})
	}
	// No server at all: a network error, retried; the error does not
	// repeat the URL (chat services keep their token in it).
	srv, _ := server(t, http.StatusOK, "")
	srv.Close()
	o := Send(context.Background(), local.Client(), Target{Kind: Slack, URL: srv.URL + "/services/T000/B000/SECRETTOKEN"}, testEvent, time.Now())
	require.Error(t, o.Err)
	require.True(t, o.Retry)
	require.NotContains(t, o.Err.Error(), "SECRETTOKEN")
}

// TestSendRefusesInternalAddresses: without an allowed network, the
// connection to a loopback address (by address or by a name that
// resolves to it) is refused before any byte is sent, and not retried.
func TestSendRefusesInternalAddresses(t *testing.T) {
	t.Parallel()
	var hits atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) { hits.Add(1) }))
	t.Cleanup(srv.Close)
	port := srv.Listener.Addr().(interface{ String() string }).String()
	port = port[strings.LastIndex(port, ":")+1:]
	for _, u := range []string{srv.URL, "http://localhost:" + port + "/hook"} {
		o := Send(context.Background(), Guard{}.Client(), Target{Kind: Generic, URL: u, Secret: "s"}, testEvent, time.Now())
		var refused *RefusedError
		require.ErrorAs(t, o.Err, &refused, u)
		require.False(t, o.Retry)
		require.Zero(t, o.Code)
	}
	// Allowing another network does not allow this one.
	other := Guard{Allowed: []netip.Prefix{netip.MustParsePrefix("127.0.0.2/32")}}
	o := Send(context.Background(), other.Client(), Target{Kind: Generic, URL: srv.URL}, testEvent, time.Now())
	var refused *RefusedError
	require.ErrorAs(t, o.Err, &refused)
	require.Zero(t, hits.Load())

	// The metadata service: refused when connecting, however the name
	// was spelt.
	o = Send(context.Background(), Guard{}.Client(), Target{Kind: Generic, URL: "http://169.254.169.254/latest/meta-data/"}, testEvent, time.Now())
	require.ErrorAs(t, o.Err, &refused)
	require.Equal(t, netip.MustParseAddr("169.254.169.254"), refused.Addr)
}

// TestSendDoesNotFollowRedirects: a redirect is a failed delivery; its
// target is never asked.
func TestSendDoesNotFollowRedirects(t *testing.T) {
	t.Parallel()
	target, got := server(t, http.StatusOK, "")
	redirector := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, target.URL, http.StatusTemporaryRedirect)
	}))
	t.Cleanup(redirector.Close)
	o := Send(context.Background(), local.Client(), Target{Kind: Generic, URL: redirector.URL}, testEvent, time.Now())
	require.ErrorIs(t, o.Err, ErrRedirect)
	require.Equal(t, http.StatusTemporaryRedirect, o.Code)
	require.False(t, o.Retry)
	select {
	case <-got:
		t.Fatal("the redirect was followed")
	default:
	}
}

// TestGuard: the ranges refused, and the allowed networks.
func TestGuard(t *testing.T) {
	t.Parallel()
	refusedAddrs := []string{
		"127.0.0.1", "127.1.2.3", "::1", "0.0.0.0", "::", "10.1.2.3", "172.16.0.1", "172.31.255.255", "192.168.1.1",
		"100.64.0.1", "100.100.100.200", "169.254.169.254", "169.254.1.1", "fe80::1", "fc00::1", "fd00:ec2::254",
		"224.0.0.1", "ff02::1", "255.255.255.255", "::ffff:127.0.0.1", "::ffff:10.0.0.1", "64:ff9b::a9fe:a9fe",
	}
	for _, a := range refusedAddrs {
		var refused *RefusedError
		require.ErrorAs(t, Guard{}.Check(netip.MustParseAddr(a)), &refused, a)
	}
	for _, a := range []string{"8.8.8.8", "1.1.1.1", "172.32.0.1", "2001:4860:4860::8888", "100.128.0.1"} {
		require.NoError(t, Guard{}.Check(netip.MustParseAddr(a)), a)
	}
	g := Guard{Allowed: []netip.Prefix{netip.MustParsePrefix("10.0.0.0/8")}}
	require.NoError(t, g.Check(netip.MustParseAddr("10.1.2.3")))
	require.NoError(t, g.Check(netip.MustParseAddr("::ffff:10.1.2.3")))
	require.Error(t, g.Check(netip.MustParseAddr("192.168.1.1")))
	require.True(t, errors.As(g.Check(netip.MustParseAddr("127.0.0.1")), new(*RefusedError)))
}

func TestParseCIDRs(t *testing.T) {
	t.Parallel()
	got, err := ParseCIDRs("10.0.0.0/8\n192.168.1.5, 127.0.0.1/32 fd00::/8\r\n10.1.0.0/8")
	require.NoError(t, err)
	require.Equal(t, []string{"10.0.0.0/8", "192.168.1.5/32", "127.0.0.1/32", "fd00::/8"}, got)
	_, err = ParseCIDRs("10.0.0.0/33")
	require.Error(t, err)
	_, err = ParseCIDRs("example.com")
	require.Error(t, err)
	got, err = ParseCIDRs("  ")
	require.NoError(t, err)
	require.Empty(t, got)
}
