package jobs_test

import (
	"bytes"
	"context"
	"crypto/rand"
	"strings"
	"testing"

	"github.com/riverqueue/river"
	"github.com/riverqueue/river/riverdriver/riverpgxv5"
	"github.com/riverqueue/river/rivertest"
	"github.com/stretchr/testify/require"

	"github.com/kubebyon/kubebyon/internal/locale"
	"github.com/kubebyon/kubebyon/internal/mail"
	"github.com/kubebyon/kubebyon/internal/notify"
	"github.com/kubebyon/kubebyon/internal/secrets"
	"github.com/kubebyon/kubebyon/internal/testenv"
	"github.com/kubebyon/kubebyon/jobs"
)

// TestEmailWorker sends each email through a real SMTP server (mailpit),
// worded in the recipient's language with the data sealed in its job and
// the platform's base URL; a job whose data another key sealed is
// cancelled, as no retry can open it.
func TestEmailWorker(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()
	mp := testenv.Mail(t)
	smtpURL, err := mail.ParseSMTPURL(mp.SMTPURL)
	require.NoError(t, err)
	catalog, err := locale.New()
	require.NoError(t, err)
	box, err := secrets.New(bytes.Repeat([]byte{3}, 32))
	require.NoError(t, err)
	w := rivertest.NewWorker(t, riverpgxv5.New(b.pool), &river.Config{}, &jobs.EmailWorker{
		Pool: b.pool, Sender: mail.NewSMTP(smtpURL, "KubeBYON <noreply@kubebyon.test>"), Box: box, Catalog: catalog,
		BaseURL: "https://kubebyon.example.com",
	})
	send := func(args notify.EmailArgs) *rivertest.WorkResult {
		t.Helper()
		tx, err := b.pool.Begin(ctx)
		require.NoError(t, err)
		defer tx.Rollback(ctx) //nolint:errcheck // the job row only
		res, err := w.Work(ctx, t, tx, args, nil)
		if res == nil {
			require.NoError(t, err)
		}
		return res
	}

	tests := []struct {
		name, to, lang, subject, body string
	}{
		{"english", "en-reader@example.com", "en", "Your KubeBYON code: 123456", "Hello Ada,"},
		{"chinese", "zh-reader@example.com", "zh-CN", "您的 KubeBYON 验证码：123456", "Ada，您好："},
		{"unknown language falls back to english", "xx-reader@example.com", "xx", "Your KubeBYON code: 123456", "Hello Ada,"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			args, err := notify.NewEmail(box, tt.to, tt.lang, notify.EmailSignupCode, map[string]any{"Code": "123456", "Name": "Ada", "Minutes": 10})
			require.NoError(t, err)
			require.NotContains(t, args.Sealed, "123456", "the code is sealed in the job's arguments")
			require.Equal(t, river.EventKindJobCompleted, send(args).EventKind)
			msgs := mp.WaitMessages(t, tt.to, 1)
			require.Equal(t, tt.subject, msgs[0].Subject)
			require.Contains(t, msgs[0].Text, tt.body)
			require.Contains(t, msgs[0].Text, "    123456")
			require.Contains(t, msgs[0].Text, "KubeBYON · https://kubebyon.example.com", "the footer names the platform")
		})
	}

	// The admins' product name names the platform in the subject, the
	// text and the footer.
	_, err = b.pool.Exec(ctx, `INSERT INTO settings (key, value) VALUES ('branding', '{"productName": "Acme Cloud"}')`)
	require.NoError(t, err)
	branded := "branded-" + strings.ToLower(rand.Text()[:12]) + "@example.com"
	args, err := notify.NewEmail(box, branded, "en", notify.EmailSignupCode, map[string]any{"Code": "123456", "Name": "Ada", "Minutes": 10})
	require.NoError(t, err)
	require.Equal(t, river.EventKindJobCompleted, send(args).EventKind)
	msg := mp.WaitMessages(t, branded, 1)[0]
	require.Equal(t, "Your Acme Cloud code: 123456", msg.Subject)
	require.Contains(t, msg.Text, "creating your Acme Cloud account")
	require.Contains(t, msg.Text, "Acme Cloud · https://kubebyon.example.com")

	// A notice about a team's cluster names the team first.
	teamMember := "team-" + strings.ToLower(rand.Text()[:12]) + "@example.com"
	args, err = notify.NewEmail(box, teamMember, "en", notify.EmailClusterFailed, map[string]any{"Cluster": "web", "ClusterID": 7, "Org": "Acme", "Reason": "boom"})
	require.NoError(t, err)
	require.Equal(t, river.EventKindJobCompleted, send(args).EventKind)
	msg = mp.WaitMessages(t, teamMember, 1)[0]
	require.True(t, strings.HasPrefix(msg.Subject, "[Acme] "), msg.Subject)
	require.Contains(t, msg.Subject, "web")

	other, err := secrets.New(bytes.Repeat([]byte{4}, 32))
	require.NoError(t, err)
	args, err = notify.NewEmail(other, "lost@example.com", "en", notify.EmailSignupCode, map[string]any{"Code": "654321"})
	require.NoError(t, err)
	require.Equal(t, river.EventKindJobCancelled, send(args).EventKind, "data sealed with another key is cancelled, not retried")
	require.Empty(t, mp.Messages(t, "lost@example.com"))
}
