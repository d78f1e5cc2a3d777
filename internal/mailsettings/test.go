package mailsettings

import (
	"context"
	"errors"
	"fmt"
	netmail "net/mail"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/kubebyon/kubebyon/internal/adminauth"
	"github.com/kubebyon/kubebyon/internal/audit"
	"github.com/kubebyon/kubebyon/internal/input"
	"github.com/kubebyon/kubebyon/internal/mail"
	"github.com/kubebyon/kubebyon/queries"
)

// TestTimeout bounds a test email: the admin waits for it.
const TestTimeout = 10 * time.Second

// FieldTestTo is the form field of the test email's recipient.
const FieldTestTo = "testTo"

// ErrNoServer: a test email was asked for with no server to send it to
// (mail is written to the log).
var ErrNoServer = errors.New("ErrAdminMailTestNoServer")

// SendError is a test email the server did not take.
type SendError struct {
	Kind mail.Failure
	// Server is the host:port that was tried.
	Server string
	Err    error
}

func (e *SendError) Error() string { return e.Err.Error() }

func (e *SendError) Unwrap() error { return e.Err }

// Tested is what a test email went through.
type Tested struct {
	Source Source
	Server string
}

// Test sends m (its To checked here) through the server the form c would
// put in effect, within TestTimeout, and records it in the audit log
// whatever came of it. An empty password is the stored one, but only for
// the stored server: a stored password never goes to a server that was
// not saved. A form with no server tests KUBEBYON_SMTP_URL. Errors:
// input.Errors, ErrNoServer, *SendError, and adminauth.ErrNotAdmin.
func (s *Service) Test(ctx context.Context, c Change, m mail.Message, actor audit.Actor) (Tested, error) {
	errs := input.Errors{}
	if _, err := netmail.ParseAddress(m.To); err != nil || !input.Storable(m.To) || len(m.To) > 320 {
		errs[FieldTestTo] = "ErrAdminMailTestTo"
	}
	if c.Password.Value != "" && c.Password.Clear {
		errs[FieldPassword] = ErrReplaceAndClear.Error()
	}
	cur, _, err := s.Load(ctx)
	if err != nil {
		return Tested{}, err
	}
	next := c.on(cur)
	if c.Password.Value == "" && (next.Host != cur.Host || next.Port != cur.Port) {
		next.Password = ""
	}
	var invalid input.Errors
	if err := next.Validate(); errors.As(err, &invalid) {
		for k, v := range invalid {
			if _, ok := errs[k]; !ok {
				errs[k] = v
			}
		}
	} else if err != nil {
		return Tested{}, err
	}
	if len(errs) > 0 {
		return Tested{}, errs
	}
	sender, src := s.sender(next)
	t := Tested{Source: src}
	switch src {
	case SourceSettings:
		t.Server = next.Server()
	case SourceEnv:
		t.Server = s.EnvServer()
	default:
		return t, ErrNoServer
	}
	sendCtx, cancel := context.WithTimeout(ctx, TestTimeout)
	sendErr := sender.Send(sendCtx, m)
	cancel()
	details := map[string]any{"to": m.To, "server": t.Server, "source": string(src), "sent": sendErr == nil}
	if sendErr != nil {
		sendErr = &SendError{Kind: mail.Explain(sendErr), Server: t.Server, Err: sendErr}
		details["failure"] = string(mail.Explain(sendErr))
	}
	err = pgx.BeginFunc(ctx, s.Pool, func(tx pgx.Tx) error {
		q := queries.New(tx)
		if err := adminauth.LockActiveAdmin(ctx, q, actor.UserID); err != nil {
			return err
		}
		return audit.Record(ctx, q, actor, audit.Event{Action: ActionTest, TargetType: "settings", TargetID: settingsKey, Details: details})
	})
	if err != nil {
		return t, fmt.Errorf("record test email: %w", err)
	}
	return t, sendErr
}
