package mail_test

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"log/slog"
	"net"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/kubebyon/kubebyon/internal/mail"
	"github.com/kubebyon/kubebyon/internal/testenv"
)

func TestMain(m *testing.M) { testenv.Main(m) }

const from = "KubeBYON <noreply@kubebyon.example>"

// address is a recipient no other test (nor another -count run) uses:
// the test binary's mailpit is shared.
func address(name string) string {
	return name + "-" + strings.ToLower(rand.Text()[:10]) + "@example.com"
}

func smtpSender(t *testing.T, raw string) *mail.SMTP {
	t.Helper()
	u, err := mail.ParseSMTPURL(raw)
	require.NoError(t, err)
	return mail.NewSMTP(u, from)
}

// withPort is the URL raw with its port replaced.
func withPort(t *testing.T, raw, port string) string {
	t.Helper()
	u, err := url.Parse(raw)
	require.NoError(t, err)
	u.Host = net.JoinHostPort(u.Hostname(), port)
	return u.String()
}

// TestSendOverSMTP: a message reaches a real SMTP server with its
// recipient, subject and text, from the sender's address, non-ASCII
// included (the headers encoded, the body decoded back as written).
func TestSendOverSMTP(t *testing.T) {
	t.Parallel()
	mp := testenv.Mail(t)
	s := smtpSender(t, mp.SMTPURL)
	to := address("ada")
	other := address("grace")
	m := mail.Message{
		To:      to,
		Subject: "Your cluster “prod” is ready — 準備完了",
		Text:    "Hello Ada,\n\nYour cluster prod is ready: https://console.example/clusters/prod\nGrüße, 你好\n",
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	require.NoError(t, s.Send(ctx, m))
	require.NoError(t, s.Send(ctx, mail.Message{To: other, Subject: "Second", Text: "Another one"}))

	msgs := mp.WaitMessages(t, to, 1)
	require.Len(t, msgs, 1, "only the message to %s", to)
	got := msgs[0]
	require.Equal(t, []string{to}, got.To)
	require.Equal(t, m.Subject, got.Subject)
	require.Equal(t, strings.ReplaceAll(m.Text, "\n", "\r\n"), normalizeNewlines(got.Text))

	// The From header: mailpit's search narrowed to the sender address
	// (mailpit's search syntax, through the recipient query Messages sends).
	require.Len(t, mp.Messages(t, to+`" from:"noreply@kubebyon.example`), 1)
	require.Empty(t, mp.Messages(t, to+`" from:"someone-else@kubebyon.example`))

	second := mp.WaitMessages(t, other, 1)
	require.Len(t, second, 1)
	require.Equal(t, "Second", second[0].Subject)
	require.Equal(t, "Another one", strings.TrimRight(second[0].Text, "\r\n"))
}

// normalizeNewlines writes every line ending as CRLF, as SMTP carries them.
func normalizeNewlines(s string) string {
	return strings.ReplaceAll(strings.ReplaceAll(s, "\r\n", "\n"), "\n", "\r\n")
}

// TestSendWithAuthentication: credentials in the URL are given to a
// server that requires them (PLAIN without TLS, to this machine); a wrong
// password is refused, as an authentication failure.
func TestSendWithAuthentication(t *testing.T) {
	t.Parallel()
	mp := testenv.MailAuth(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()

	to := address("auth")
	require.NoError(t, smtpSender(t, mp.SMTPURL).Send(ctx, mail.Message{To: to, Subject: "Signed in", Text: "With a password"}))
	msgs := mp.WaitMessages(t, to, 1)
	require.Equal(t, "Signed in", msgs[0].Subject)

	u, err := url.Parse(mp.SMTPURL)
	require.NoError(t, err)
	wrong := *u
	wrong.User = url.UserPassword(mp.Username, mp.Password+"-wrong")
	none := *u
	none.User = nil
	for name, raw := range map[string]string{"wrong password": wrong.String(), "no credentials": none.String()} {
		refused := address("refused")
		err := smtpSender(t, raw).Send(ctx, mail.Message{To: refused, Subject: "Refused", Text: "No"})
		require.Error(t, err, name)
		require.Equal(t, mail.FailAuth, mail.Explain(err), "%s: %v", name, err)
		require.Empty(t, mp.Messages(t, refused), name)
	}
}

// TestSendFailures: what stops a message is told apart, with real
// failures: nothing listening, a server that never answers, a deadline
// already past, TLS asked of a server without it, a name that does not
// resolve.
func TestSendFailures(t *testing.T) {
	t.Parallel()
	mp := testenv.Mail(t)

	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	_, closedPort, err := net.SplitHostPort(ln.Addr().String())
	require.NoError(t, err)
	require.NoError(t, ln.Close())
	_, hangingPort, err := net.SplitHostPort(testenv.HangingListener(t))
	require.NoError(t, err)

	tests := []struct {
		name    string
		url     string
		timeout time.Duration
		want    mail.Failure
	}{
		{"refused", withPort(t, mp.SMTPURL, closedPort), 30 * time.Second, mail.FailRefused},
		{"no answer", withPort(t, mp.SMTPURL, hangingPort), time.Second, mail.FailTimeout},
		{"deadline past", mp.SMTPURL, -time.Second, mail.FailTimeout},
		{"smtps to a plain server", strings.Replace(strings.TrimSuffix(mp.SMTPURL, "?tls=none"), "smtp://", "smtps://", 1), 30 * time.Second, mail.FailTLS},
		{"starttls not offered", strings.Replace(mp.SMTPURL, "tls=none", "tls=starttls", 1), 30 * time.Second, mail.FailTLS},
		{"unknown host", "smtp://mail.kubebyon.invalid:2525?tls=none", 30 * time.Second, mail.FailDNS},
	}
	for _, tt := range tests {
		to := address("failure")
		ctx, cancel := context.WithTimeout(context.Background(), tt.timeout)
		start := time.Now()
		err := smtpSender(t, tt.url).Send(ctx, mail.Message{To: to, Subject: tt.name, Text: "Not sent"})
		cancel()
		require.Error(t, err, tt.name)
		require.Equal(t, tt.want, mail.Explain(err), "%s: %v", tt.name, err)
		if tt.timeout > 0 {
			require.Less(t, time.Since(start), tt.timeout+10*time.Second, "%s: the context's deadline bounds the conversation", tt.name)
		}
		require.Empty(t, mp.Messages(t, to), tt.name)
	}
}

// TestExplainOther: an error none of the kinds describes is "other".
func TestExplainOther(t *testing.T) {
	t.Parallel()
	require.Equal(t, mail.FailOther, mail.Explain(errors.New("something else")))
}

// TestSendRefusesBadAddresses: a message to or from what is not an
// address is refused before any connection.
func TestSendRefusesBadAddresses(t *testing.T) {
	t.Parallel()
	mp := testenv.Mail(t)
	u, err := mail.ParseSMTPURL(mp.SMTPURL)
	require.NoError(t, err)
	ctx := context.Background()

	err = mail.NewSMTP(u, from).Send(ctx, mail.Message{To: "not an address", Subject: "s", Text: "t"})
	require.ErrorContains(t, err, `mail to "not an address"`)
	err = mail.NewSMTP(u, "nobody").Send(ctx, mail.Message{To: address("ok"), Subject: "s", Text: "t"})
	require.ErrorContains(t, err, `mail from "nobody"`)
}

// TestLogFallback: without a mail server the message goes into the log,
// as a warning carrying its recipient, subject and text.
func TestLogFallback(t *testing.T) {
	t.Parallel()
	var buf bytes.Buffer
	var s mail.Sender = &mail.Log{Logger: slog.New(slog.NewJSONHandler(&buf, nil))}
	m := mail.Message{To: "ada@example.com", Subject: "Your sign-in code", Text: "Code: 123456\nValid for 10 minutes."}
	require.NoError(t, s.Send(context.Background(), m))

	var rec map[string]any
	require.NoError(t, json.Unmarshal(buf.Bytes(), &rec), buf.String())
	require.Equal(t, "WARN", rec["level"])
	require.Contains(t, rec["msg"], "no mail server is set")
	require.Equal(t, m.To, rec["to"])
	require.Equal(t, m.Subject, rec["subject"])
	require.Equal(t, m.Text, rec["text"])
	require.Equal(t, 1, strings.Count(buf.String(), "\n"), "one record per message")
}

// TestParseSMTPURL: the forms KUBEBYON_SMTP_URL takes, and what is
// refused with a reason.
func TestParseSMTPURL(t *testing.T) {
	t.Parallel()
	tests := []struct {
		raw     string
		wantErr string
	}{
		{raw: "smtp://mail.example.com"},
		{raw: "smtp://mail.example.com:2525"},
		{raw: "smtp://user:secret@mail.example.com:587?tls=starttls"},
		{raw: "smtp://127.0.0.1:1025?tls=none"},
		{raw: "smtps://user:secret@mail.example.com"},
		{raw: "smtp://[::1]:25"},
		{raw: "http://mail.example.com", wantErr: `scheme "http"`},
		{raw: "mail.example.com:25", wantErr: "scheme"},
		{raw: "smtp://", wantErr: "no host"},
		{raw: "smtp://user@:25", wantErr: "no host"},
		{raw: "smtp://mail.example.com:smtp", wantErr: "not a URL"},
		{raw: "smtp://mail.example.com?tls=yes", wantErr: `tls="yes"`},
		{raw: "smtp://mail.example.com?tls=ssl", wantErr: "smtps://"},
		{raw: "smtp://mail example.com", wantErr: "not a URL"},
	}
	for _, tt := range tests {
		u, err := mail.ParseSMTPURL(tt.raw)
		if tt.wantErr != "" {
			require.ErrorContains(t, err, tt.wantErr, tt.raw)
			require.Nil(t, u, tt.raw)
			continue
		}
		require.NoError(t, err, tt.raw)
		require.Equal(t, tt.raw, u.String())
	}
}
