package mailsettings

import (
	"bytes"
	"context"
	"crypto/rand"
	"log/slog"
	"net/url"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/kubebyon/kubebyon/internal/input"
	"github.com/kubebyon/kubebyon/internal/mail"
	"github.com/kubebyon/kubebyon/internal/secrets"
	"github.com/kubebyon/kubebyon/internal/testenv"
	"github.com/kubebyon/kubebyon/queries"
)

func TestMain(m *testing.M) { testenv.Main(m) }

func TestValidate(t *testing.T) {
	t.Parallel()
	ok := Settings{Host: "smtp.example.com", Port: 587, TLS: TLSStartTLS, Username: "u", Password: "p", From: "KubeBYON <noreply@example.com>"}
	tests := []struct {
		name   string
		change func(*Settings)
		field  string // "" when valid
	}{
		{"complete", func(*Settings) {}, ""},
		{"nothing at all", func(s *Settings) { *s = Settings{TLS: TLSStartTLS} }, ""},
		{"no sender", func(s *Settings) { s.From = "" }, ""},
		{"no credentials", func(s *Settings) { s.Username, s.Password = "", "" }, ""},
		{"IPv6 host", func(s *Settings) { s.Host = "::1" }, ""},
		{"no host", func(s *Settings) { s.Host = "" }, FieldHost},
		{"host with a port", func(s *Settings) { s.Host = "smtp.example.com:25" }, FieldHost},
		{"port 0", func(s *Settings) { s.Port = 0 }, FieldPort},
		{"port 65536", func(s *Settings) { s.Port = 65536 }, FieldPort},
		{"TLS mode", func(s *Settings) { s.TLS = "ssl" }, FieldTLS},
		{"password without user", func(s *Settings) { s.Username = "" }, FieldUsername},
		{"sender", func(s *Settings) { s.From = "noreply at example.com" }, FieldFrom},
		{"control characters", func(s *Settings) { s.Username = "u\x00" }, FieldUsername},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			s := ok
			tt.change(&s)
			err := s.Validate()
			if tt.field == "" {
				require.NoError(t, err)
				return
			}
			var errs input.Errors
			require.ErrorAs(t, err, &errs)
			require.Contains(t, errs, tt.field)
			require.Len(t, errs, 1)
		})
	}
}

func TestURL(t *testing.T) {
	t.Parallel()
	tests := []struct {
		s    Settings
		want string
	}{
		{Settings{Host: "mail.example.com", Port: 587, TLS: TLSStartTLS}, "smtp://mail.example.com:587?tls=starttls"},
		{Settings{Host: "mail.example.com", Port: 465, TLS: TLSImplicit, Username: "me", Password: "p@ss/word"}, "smtps://me:p%40ss%2Fword@mail.example.com:465"},
		{Settings{Host: "::1", Port: 25, TLS: TLSNone}, "smtp://[::1]:25?tls=none"},
	}
	for _, tt := range tests {
		u := tt.s.URL()
		require.Equal(t, tt.want, u.String())
		// What the URL says is what KUBEBYON_SMTP_URL would.
		parsed, err := mail.ParseSMTPURL(u.String())
		require.NoError(t, err)
		pw, _ := parsed.User.Password()
		require.Equal(t, tt.s.Password, pw)
	}
}

// TestSendFollowsTheSettings: each message goes through the settings as
// stored at the time it is sent, else KUBEBYON_SMTP_URL, else the log.
func TestSendFollowsTheSettings(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool := testenv.DB(t)
	box, err := secrets.New(bytes.Repeat([]byte{3}, 32))
	require.NoError(t, err)
	env, auth := testenv.Mail(t), testenv.MailAuth(t)
	envURL, err := mail.ParseSMTPURL(env.SMTPURL)
	require.NoError(t, err)
	var logged bytes.Buffer
	s := &Service{Pool: pool, Box: box, EnvURL: envURL, From: "KubeBYON <noreply@kubebyon.test>", Logger: slog.New(slog.NewTextHandler(&logged, nil))}
	to := "follow-" + strings.ToLower(rand.Text()[:12]) + "@example.com"
	send := func(subject string) error {
		return s.Send(ctx, mail.Message{To: to, Subject: subject, Text: "text"})
	}

	require.NoError(t, send("through the environment"))
	require.Equal(t, "through the environment", env.WaitMessages(t, to, 1)[0].Subject)

	u, err := url.Parse(auth.SMTPURL)
	require.NoError(t, err)
	port, err := strconv.Atoi(u.Port())
	require.NoError(t, err)
	st := Settings{Host: u.Hostname(), Port: port, TLS: TLSNone, Username: auth.Username, Password: auth.Password}
	require.NoError(t, save(ctx, queries.New(pool), box, st))
	require.NoError(t, send("through the settings"))
	require.Equal(t, "through the settings", auth.WaitMessages(t, to, 1)[0].Subject)

	st.Password = "wrong"
	require.NoError(t, save(ctx, queries.New(pool), box, st))
	err = send("refused")
	require.Error(t, err)
	require.Equal(t, mail.FailAuth, mail.Explain(err), err.Error())

	require.NoError(t, save(ctx, queries.New(pool), box, Settings{}))
	s.EnvURL = nil
	require.NoError(t, send("into the log"))
	require.Contains(t, logged.String(), "into the log")
	require.Len(t, env.Messages(t, to), 1)
	require.Len(t, auth.Messages(t, to), 1)
}

// TestUnreadablePassword: a password sealed with another platform key
// reads as empty, said so; mail is not sent without it.
func TestUnreadablePassword(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool := testenv.DB(t)
	other, err := secrets.New(bytes.Repeat([]byte{4}, 32))
	require.NoError(t, err)
	box, err := secrets.New(bytes.Repeat([]byte{5}, 32))
	require.NoError(t, err)
	st := Settings{Host: "127.0.0.1", Port: 25, TLS: TLSNone, Username: "u", Password: "sealed elsewhere"}
	require.NoError(t, save(ctx, queries.New(pool), other, st))

	s := &Service{Pool: pool, Box: box}
	got, unreadable, err := s.Load(ctx)
	require.NoError(t, err)
	require.True(t, unreadable)
	require.Equal(t, "u", got.Username)
	require.Empty(t, got.Password)
	require.ErrorIs(t, s.Send(ctx, mail.Message{To: "nobody@example.com", Subject: "s", Text: "t"}), ErrUnreadable)
	changed, err := changes(got, got, unreadable)
	require.NoError(t, err)
	require.Equal(t, []string{FieldPassword}, changed, "saving writes the password anew")
}

// TestSenderNamedAfterTheProduct: the sender carries the branding's
// product name unless its address names someone else.
func TestSenderNamedAfterTheProduct(t *testing.T) {
	t.Parallel()
	tests := []struct{ from, product, want string }{
		{"KubeBYON <noreply@example.com>", "Acme Cloud", `"Acme Cloud" <noreply@example.com>`},
		{"noreply@example.com", "Acme", `"Acme" <noreply@example.com>`},
		{"Ops Team <ops@example.com>", "Acme", "Ops Team <ops@example.com>"},
		{"KubeBYON <noreply@example.com>", "", "KubeBYON <noreply@example.com>"},
	}
	for _, tt := range tests {
		require.Equal(t, tt.want, named(tt.from, tt.product), tt.from)
	}
}
