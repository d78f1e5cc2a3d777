package webhooks

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"
)

// Kinds of channel: a generic JSON webhook, or a chat service's incoming
// webhook (each with its documented message shape).
const (
	Generic  = "generic"
	Slack    = "slack"
	DingTalk = "dingtalk"
	Feishu   = "feishu"
	WeCom    = "wecom"
)

// ChannelKinds lists the kinds in the order the forms offer them.
var ChannelKinds = []string{Generic, Slack, DingTalk, Feishu, WeCom}

// Signed reports whether a kind of channel takes a signing secret the user
// copies from the chat service (DingTalk, Feishu); a generic webhook's
// secret is made by the platform.
func Signed(kind string) bool { return kind == DingTalk || kind == Feishu }

// Headers of the generic webhook.
const (
	HeaderSignature = "X-KubeBYON-Signature"
	HeaderTimestamp = "X-KubeBYON-Timestamp"
	HeaderEvent     = "X-KubeBYON-Event"
	HeaderDelivery  = "X-KubeBYON-Delivery"
)

// Event is what a generic webhook receives, as JSON (documented in the
// README).
type Event struct {
	// ID is the same for every attempt at the event's delivery, so the
	// receiver can drop a repeat.
	ID   string    `json:"id"`
	Kind string    `json:"kind"`
	Time time.Time `json:"time"`
	// Title and Body are worded in the channel's language.
	Title   string   `json:"title"`
	Body    string   `json:"body"`
	Links   []Link   `json:"links"`
	Cluster *Cluster `json:"cluster,omitempty"`
}

// Link is a page of the platform about the event.
type Link struct {
	Title string `json:"title"`
	URL   string `json:"url"`
}

// Cluster is the cluster the event is about.
type Cluster struct {
	ID   int64  `json:"id"`
	Name string `json:"name"`
}

// Target is where and how a message goes.
type Target struct {
	Kind   string
	URL    string
	Secret string
}

// text is the event as one chat message: title, body, links.
func (e Event) text() string {
	var b strings.Builder
	b.WriteString(e.Title)
	if e.Body != "" && e.Body != e.Title {
		b.WriteString("\n" + e.Body)
	}
	for _, l := range e.Links {
		b.WriteString("\n" + l.URL)
	}
	return b.String()
}

// Sign is the generic webhook's signature: the hex HMAC-SHA256, keyed with
// the channel's secret, of the timestamp (Unix seconds), a dot and the
// body.
func Sign(secret string, timestamp int64, body []byte) string {
	m := hmac.New(sha256.New, []byte(secret))
	m.Write([]byte(strconv.FormatInt(timestamp, 10) + "."))
	m.Write(body)
	return "sha256=" + hex.EncodeToString(m.Sum(nil))
}

// dingTalkSign is DingTalk's robot signature: base64 of the HMAC-SHA256,
// keyed with the secret, of the timestamp (Unix milliseconds), a newline
// and the secret.
func dingTalkSign(secret string, ms int64) string {
	m := hmac.New(sha256.New, []byte(secret))
	m.Write([]byte(strconv.FormatInt(ms, 10) + "\n" + secret))
	return base64.StdEncoding.EncodeToString(m.Sum(nil))
}

// feishuSign is Feishu's bot signature: base64 of the HMAC-SHA256, keyed
// with the timestamp (Unix seconds), a newline and the secret, of nothing.
func feishuSign(secret string, sec int64) string {
	m := hmac.New(sha256.New, []byte(strconv.FormatInt(sec, 10)+"\n"+secret))
	return base64.StdEncoding.EncodeToString(m.Sum(nil))
}

// Request builds the HTTP request that delivers e to t at now.
func Request(ctx context.Context, t Target, e Event, now time.Time) (*http.Request, error) {
	target := t.URL
	var payload any
	switch t.Kind {
	case Generic:
		payload = e
	case Slack:
		payload = map[string]any{"text": e.text()}
	case DingTalk:
		payload = map[string]any{"msgtype": "text", "text": map[string]any{"content": e.text()}}
		if t.Secret != "" {
			u, err := url.Parse(t.URL)
			if err != nil {
				return nil, fmt.Errorf("webhook URL: %w", err)
			}
			ms := now.UnixMilli()
			q := u.Query()
			q.Set("timestamp", strconv.FormatInt(ms, 10))
			q.Set("sign", dingTalkSign(t.Secret, ms))
			u.RawQuery = q.Encode()
			target = u.String()
		}
	case Feishu:
		m := map[string]any{"msg_type": "text", "content": map[string]any{"text": e.text()}}
		if t.Secret != "" {
			m["timestamp"] = strconv.FormatInt(now.Unix(), 10)
			m["sign"] = feishuSign(t.Secret, now.Unix())
		}
		payload = m
	case WeCom:
		payload = map[string]any{"msgtype": "text", "text": map[string]any{"content": e.text()}}
	default:
		return nil, fmt.Errorf("unknown kind of webhook %q", t.Kind)
	}
	body, err := json.Marshal(payload)
	if err != nil {
		return nil, fmt.Errorf("encode webhook payload: %w", err)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, target, bytes.NewReader(body))
	if err != nil {
		return nil, fmt.Errorf("webhook request: %w", err)
	}
	req.Header.Set("Content-Type", "application/json; charset=utf-8")
	req.Header.Set("User-Agent", "KubeBYON-Webhook/1")
	if t.Kind == Generic {
		req.Header.Set(HeaderEvent, e.Kind)
		req.Header.Set(HeaderDelivery, e.ID)
		req.Header.Set(HeaderTimestamp, strconv.FormatInt(now.Unix(), 10))
		if t.Secret != "" {
			req.Header.Set(HeaderSignature, Sign(t.Secret, now.Unix(), body))
		}
	}
	return req, nil
}

// Outcome is one attempt's result: the response code (zero without a
// response), the error (nil when delivered), and whether another attempt
// may succeed where this one failed.
type Outcome struct {
	Code  int
	Err   error
	Retry bool
}

// maxBody is how much of a response is read.
const maxBody = 64 << 10

// Send makes one attempt at delivering e to t with client (Guard.Client):
// network errors, 5xx, 429 and a chat service's rate limit may be
// retried; refused addresses, redirects, other 4xx and a chat service's
// other error codes may not.
func Send(ctx context.Context, client *http.Client, t Target, e Event, now time.Time) Outcome {
	req, err := Request(ctx, t, e, now)
	if err != nil {
		return Outcome{Err: err}
	}
	resp, err := client.Do(req)
	if err != nil {
		var refused *RefusedError
		if errors.As(err, &refused) {
			return Outcome{Err: refused}
		}
		return Outcome{Err: fmt.Errorf("post to %s: %w", req.URL.Host, unwrapURL(err)), Retry: true}
	}
	defer resp.Body.Close() //nolint:errcheck // read-only
	body, _ := io.ReadAll(io.LimitReader(resp.Body, maxBody))
	o := Outcome{Code: resp.StatusCode}
	switch {
	case resp.StatusCode >= 300 && resp.StatusCode < 400:
		o.Err = ErrRedirect
	case resp.StatusCode >= 500 || resp.StatusCode == http.StatusTooManyRequests:
		o.Err, o.Retry = statusError(resp.StatusCode, body), true
	case resp.StatusCode >= 400:
		o.Err = statusError(resp.StatusCode, body)
	case resp.StatusCode < 200:
		o.Err = statusError(resp.StatusCode, body)
	default:
		o.Retry, o.Err = chatError(t.Kind, body)
	}
	return o
}

// unwrapURL drops url.Error's "Post "<whole URL>":" prefix, which would
// show the token chat services keep in the URL, and a failed lookup's
// resolver, which is the platform's own (its address is no business of
// whoever owns the channel).
func unwrapURL(err error) error {
	var ue *url.Error
	if errors.As(err, &ue) {
		err = ue.Err
	}
	var dnsErr *net.DNSError
	if errors.As(err, &dnsErr) {
		return fmt.Errorf("lookup %s: %s", dnsErr.Name, dnsErr.Err)
	}
	return err
}

// statusError names an unsuccessful status and the start of its body.
func statusError(code int, body []byte) error {
	s := strings.TrimSpace(string(body))
	if len(s) > 200 {
		s = s[:200]
	}
	if s == "" {
		return fmt.Errorf("HTTP %d", code)
	}
	return fmt.Errorf("HTTP %d: %s", code, strings.ToValidUTF8(s, "?"))
}

// chatError reads the error code chat services put in a 200 answer:
// DingTalk and WeCom errcode and errmsg, Feishu code and msg. Their rate
// limits (DingTalk 130101, WeCom 45009) may be retried.
func chatError(kind string, body []byte) (retry bool, err error) {
	var r struct {
		ErrCode *int   `json:"errcode"`
		ErrMsg  string `json:"errmsg"`
		Code    *int   `json:"code"`
		Msg     string `json:"msg"`
	}
	switch kind {
	case DingTalk, WeCom:
		if json.Unmarshal(body, &r) == nil && r.ErrCode != nil && *r.ErrCode != 0 {
			limited := (kind == DingTalk && *r.ErrCode == 130101) || (kind == WeCom && *r.ErrCode == 45009)
			return limited, fmt.Errorf("%s error %d: %s", kind, *r.ErrCode, r.ErrMsg)
		}
	case Feishu:
		if json.Unmarshal(body, &r) == nil && r.Code != nil && *r.Code != 0 {
			return false, fmt.Errorf("feishu error %d: %s", *r.Code, r.Msg)
		}
	}
	return false, nil
}
