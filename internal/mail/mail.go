// Package mail sends the platform's email: over SMTP (the server of the
// admin mail settings, else KUBEBYON_SMTP_URL: package mailsettings
// chooses), else into the log (for a development machine without a mail
// server). Messages are sent by the River email job, never in a request,
// but for an admin's test email.
package mail

import (
	"context"
	"fmt"
	"log/slog"
	"net/url"
	"strconv"
	"time"

	gomail "github.com/wneessen/go-mail"
)

// Message is one plain-text email.
type Message struct {
	To      string
	Subject string
	Text    string
}

// Sender delivers messages. SMTP is the production implementation; Log is
// for machines without a mail server.
type Sender interface {
	Send(ctx context.Context, m Message) error
}

// ParseSMTPURL validates a KUBEBYON_SMTP_URL value:
// smtp://[user:password@]host[:port][?tls=none|starttls] (STARTTLS when the
// server offers it, by default) or smtps://... (TLS from the start).
func ParseSMTPURL(raw string) (*url.URL, error) {
	u, err := url.Parse(raw)
	if err != nil {
		return nil, fmt.Errorf("not a URL: %w", err)
	}
	if u.Scheme != "smtp" && u.Scheme != "smtps" {
		return nil, fmt.Errorf("scheme %q: use smtp:// or smtps://", u.Scheme)
	}
	if u.Hostname() == "" {
		return nil, fmt.Errorf("no host")
	}
	if p := u.Port(); p != "" {
		if _, err := strconv.Atoi(p); err != nil {
			return nil, fmt.Errorf("port %q is not a number", p)
		}
	}
	switch u.Query().Get("tls") {
	case "", "none", "starttls":
	default:
		return nil, fmt.Errorf("tls=%q: use none or starttls (or the smtps:// scheme)", u.Query().Get("tls"))
	}
	return u, nil
}

// SMTP sends through a mail server.
type SMTP struct {
	url  *url.URL
	from string
}

// NewSMTP builds a sender for a URL that ParseSMTPURL accepted.
func NewSMTP(u *url.URL, from string) *SMTP {
	return &SMTP{url: u, from: from}
}

// Send implements Sender.
func (s *SMTP) Send(ctx context.Context, m Message) error {
	msg := gomail.NewMsg()
	if err := msg.From(s.from); err != nil {
		return fmt.Errorf("mail from %q: %w", s.from, err)
	}
	if err := msg.To(m.To); err != nil {
		return fmt.Errorf("mail to %q: %w", m.To, err)
	}
	msg.Subject(m.Subject)
	msg.SetBodyString(gomail.TypeTextPlain, m.Text)

	// A deadline on ctx (a test email's) bounds the conversation too, not
	// only the dial.
	timeout := 30 * time.Second
	if d, ok := ctx.Deadline(); ok {
		if timeout = min(timeout, time.Until(d)); timeout <= 0 {
			return fmt.Errorf("send mail via %s: %w", s.url.Host, context.DeadlineExceeded)
		}
	}
	opts := []gomail.Option{gomail.WithTimeout(timeout)}
	port := 25
	switch {
	case s.url.Scheme == "smtps":
		port = 465
		opts = append(opts, gomail.WithSSL())
	case s.url.Query().Get("tls") == "none":
		opts = append(opts, gomail.WithTLSPolicy(gomail.NoTLS))
	case s.url.Query().Get("tls") == "starttls":
		port = 587
		opts = append(opts, gomail.WithTLSPolicy(gomail.TLSMandatory))
	default:
		opts = append(opts, gomail.WithTLSPolicy(gomail.TLSOpportunistic))
	}
	if p := s.url.Port(); p != "" {
		port, _ = strconv.Atoi(p)
	}
	opts = append(opts, gomail.WithPort(port))
	if s.url.User != nil {
		pw, _ := s.url.User.Password()
		// Discovery picks no mechanism on a connection without TLS; asked
		// for none, PLAIN works with a server on this machine only (a
		// local relay): go-mail refuses to send the password elsewhere.
		auth := gomail.SMTPAuthAutoDiscover
		if s.url.Query().Get("tls") == "none" {
			auth = gomail.SMTPAuthPlain
		}
		opts = append(opts, gomail.WithSMTPAuth(auth),
			gomail.WithUsername(s.url.User.Username()), gomail.WithPassword(pw))
	}
	c, err := gomail.NewClient(s.url.Hostname(), opts...)
	if err != nil {
		return fmt.Errorf("smtp client: %w", err)
	}
	if err := c.DialAndSendWithContext(ctx, msg); err != nil {
		return fmt.Errorf("send mail via %s: %w", s.url.Host, err)
	}
	return nil
}

// Log writes messages to the log instead of sending them.
type Log struct {
	Logger *slog.Logger
}

// Send implements Sender.
func (l *Log) Send(ctx context.Context, m Message) error {
	l.Logger.WarnContext(ctx, "no mail server is set (admin mail settings or KUBEBYON_SMTP_URL): email logged instead of sent",
		"to", m.To, "subject", m.Subject, "text", m.Text)
	return nil
}
