package handlerstest

import (
	"context"
	"encoding/json"
	"errors"
	"regexp"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/riverqueue/river"
	"github.com/stretchr/testify/require"

	"github.com/kubebyon/kubebyon/internal/notify"
	"github.com/kubebyon/kubebyon/internal/testenv"
)

var codeInMail = regexp.MustCompile(`\b(\d{6})\b`)

// CodeFrom returns the 6-digit code in a message.
func CodeFrom(t *testing.T, m testenv.Message) string {
	t.Helper()
	c := codeInMail.FindStringSubmatch(m.Text)
	require.NotNil(t, c, "no code in %q", m.Text)
	return c[1]
}

// FailingEmail inserts an email to an address the mailer refuses, so the
// job fails with an error of ours on every attempt, and returns its ID.
// Its sealed data must not reach the page.
func (b *Bundle) FailingEmail(t *testing.T, to string, opts *river.InsertOpts) (int64, string) {
	t.Helper()
	sealed := b.Box.Seal([]byte(`{"Code":"123456"}`))
	res, err := b.River.Insert(context.Background(), notify.EmailArgs{To: to, Lang: "en", Template: notify.EmailSignupCode, Sealed: sealed}, opts)
	require.NoError(t, err)
	return res.Job.ID, sealed
}

// MailRow is the stored mail settings row as text; "" when there is none.
func (b *Bundle) MailRow(t *testing.T) string {
	t.Helper()
	var v string
	err := b.Pool.QueryRow(context.Background(), "SELECT value::text FROM settings WHERE key = 'mail'").Scan(&v)
	if errors.Is(err, pgx.ErrNoRows) {
		return ""
	}
	require.NoError(t, err)
	return v
}

// MailEvents are the details of every audit event of action, oldest
// first, as JSON text and decoded.
func (b *Bundle) MailEvents(t *testing.T, action string) ([]string, []map[string]any) {
	t.Helper()
	rows, err := b.Pool.Query(context.Background(), "SELECT details::text FROM audit_events WHERE action = $1 ORDER BY id", action)
	require.NoError(t, err)
	defer rows.Close()
	var raw []string
	var out []map[string]any
	for rows.Next() {
		var s string
		require.NoError(t, rows.Scan(&s))
		d := map[string]any{}
		require.NoError(t, json.Unmarshal([]byte(s), &d))
		raw, out = append(raw, s), append(out, d)
	}
	require.NoError(t, rows.Err())
	return raw, out
}

// DeliverMail sends the mail queued to an address, working its email
// jobs as the email queue's worker would. Under SetupWorking the client's
// own worker sends it, and DeliverMail does nothing.
func (b *Bundle) DeliverMail(t *testing.T, to string) {
	t.Helper()
	if b.working {
		return
	}
	rows, err := b.Pool.Query(context.Background(), `SELECT id FROM river_job
		WHERE kind = 'email' AND state = 'available' AND lower(args->>'to') = lower($1) ORDER BY id`, to)
	require.NoError(t, err)
	ids, err := pgx.CollectRows(rows, pgx.RowTo[int64])
	require.NoError(t, err)
	workJobs(t, b, b.emailWorker, ids)
}

// WaitMessages sends the mail queued to addr (DeliverMail) and waits
// until addr has received at least n messages, returning them all.
func (b *Bundle) WaitMessages(t *testing.T, addr string, n int) []testenv.Message {
	t.Helper()
	b.DeliverMail(t, addr)
	return b.Mail.WaitMessages(t, addr, n)
}

// WaitMail sends the mail queued to email (DeliverMail) and waits for the
// message with this subject.
func (b *Bundle) WaitMail(t *testing.T, email, subject string) testenv.Message {
	t.Helper()
	b.DeliverMail(t, email)
	var found testenv.Message
	WaitFor(t, func() bool {
		for _, m := range b.Mail.Messages(t, email) {
			if m.Subject == subject {
				found = m
				return true
			}
		}
		return false
	}, "the email "+subject)
	return found
}

// EmailJobs counts the email jobs enqueued to an address with a template:
// what was sent, or will be, without waiting for the mail.
func (b *Bundle) EmailJobs(t *testing.T, to, template string) int {
	t.Helper()
	var n int
	require.NoError(t, b.Pool.QueryRow(context.Background(),
		"SELECT count(*) FROM river_job WHERE kind = 'email' AND lower(args->>'to') = lower($1) AND args->>'template' = $2", to, template).Scan(&n))
	return n
}
