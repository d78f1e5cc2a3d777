package mail

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"net"
	"net/textproto"
	"strings"
	"syscall"

	gomail "github.com/wneessen/go-mail"
	"github.com/wneessen/go-mail/smtp"
)

// Failure is what kind of thing stopped a message, in words an admin can
// act on.
type Failure string

// Kinds of failure.
const (
	FailRefused  Failure = "refused"  // nothing listens at the host and port
	FailDNS      Failure = "dns"      // the host name does not resolve
	FailTimeout  Failure = "timeout"  // no answer in time
	FailTLS      Failure = "tls"      // TLS could not be set up
	FailAuth     Failure = "auth"     // the server refused the credentials
	FailRejected Failure = "rejected" // the server answered with an error
	FailOther    Failure = "other"
)

// Explain sorts an error of Send into a Failure; the error's own text is
// the detail to show with it (an SMTP reply such as "535 5.7.8
// Authentication failed", "connection refused", the TLS error).
func Explain(err error) Failure {
	var (
		dnsErr   *net.DNSError
		netErr   net.Error
		recErr   tls.RecordHeaderError
		certErr  *tls.CertificateVerificationError
		unknown  x509.UnknownAuthorityError
		hostErr  x509.HostnameError
		replyErr *textproto.Error
		sendErr  *gomail.SendError
	)
	text := err.Error()
	switch {
	case errors.Is(err, syscall.ECONNREFUSED):
		return FailRefused
	case errors.As(err, &dnsErr):
		return FailDNS
	case errors.Is(err, context.DeadlineExceeded), errors.As(err, &netErr) && netErr.Timeout():
		return FailTimeout
	case errors.As(err, &recErr), errors.As(err, &certErr), errors.As(err, &unknown), errors.As(err, &hostErr),
		strings.Contains(text, "STARTTLS"), strings.Contains(text, "tls: "):
		return FailTLS
	case errors.Is(err, smtp.ErrUnencrypted), errors.Is(err, gomail.ErrNoSupportedAuthDiscovered),
		strings.Contains(text, "SMTP AUTH failed"), strings.Contains(text, "does not support SMTP AUTH"):
		return FailAuth
	case errors.As(err, &replyErr):
		if replyErr.Code == 530 || replyErr.Code == 535 || replyErr.Code == 534 {
			return FailAuth
		}
		return FailRejected
	case errors.As(err, &sendErr):
		if c := sendErr.ErrorCode(); c == 530 || c == 535 {
			return FailAuth
		}
		return FailRejected
	}
	return FailOther
}
