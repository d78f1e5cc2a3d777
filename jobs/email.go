package jobs

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"

	"github.com/riverqueue/river"

	"github.com/kubebyon/kubebyon/internal/locale"
	"github.com/kubebyon/kubebyon/internal/mail"
	"github.com/kubebyon/kubebyon/internal/secrets"
)

// EmailArgs is one email to send. Its template data (which can hold a
// one-time code) is sealed with the platform key, since job arguments sit in
// the database.
type EmailArgs struct {
	To       string `json:"to"`
	Lang     string `json:"lang"`
	Template string `json:"template"`
	Sealed   string `json:"sealed"`
}

// Kind implements river.JobArgs.
func (EmailArgs) Kind() string { return "email" }

// InsertOpts keeps email jobs in their own queue, so a slow mail server
// never holds up cluster work.
func (EmailArgs) InsertOpts() river.InsertOpts {
	return river.InsertOpts{Queue: QueueEmail, MaxAttempts: 10}
}

// QueueEmail is the queue of email jobs.
const QueueEmail = "email"

// Email templates: each has the messages Mail<Template>Subject and
// Mail<Template>Body in the catalog.
const (
	EmailSignupCode      = "SignupCode"
	EmailSignupExists    = "SignupExists"
	EmailChangeCode      = "EmailChangeCode"
	EmailPasswordReset   = "PasswordReset"
	EmailNewSignIn       = "NewSignIn"
	EmailPasswordChanged = "PasswordChanged"
)

// NewEmail seals data into the arguments of an email job.
func NewEmail(box *secrets.Box, to, lang, template string, data map[string]any) (EmailArgs, error) {
	raw, err := json.Marshal(data)
	if err != nil {
		return EmailArgs{}, fmt.Errorf("encode email data: %w", err)
	}
	return EmailArgs{To: to, Lang: lang, Template: template, Sealed: box.Seal(raw)}, nil
}

// EmailWorker renders an email in the recipient's language and sends it.
type EmailWorker struct {
	river.WorkerDefaults[EmailArgs]
	Sender  mail.Sender
	Box     *secrets.Box
	Catalog *locale.Catalog
	BaseURL string
}

// Work implements river.Worker.
func (w *EmailWorker) Work(ctx context.Context, job *river.Job[EmailArgs]) error {
	raw, err := w.Box.Open(job.Args.Sealed)
	if err != nil {
		// Sealed with another key: retrying cannot help.
		return river.JobCancel(fmt.Errorf("open email data: %w", err))
	}
	// Numbers stay as written: a float64 id of a million would print 1e+06.
	data := map[string]any{}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	if err := dec.Decode(&data); err != nil {
		return river.JobCancel(fmt.Errorf("decode email data: %w", err))
	}
	data["BaseURL"] = w.BaseURL
	l := w.Catalog.For(job.Args.Lang)
	msg := mail.Message{
		To:      job.Args.To,
		Subject: l.T("Mail"+job.Args.Template+"Subject", data),
		Text:    l.T("Mail"+job.Args.Template+"Body", data) + "\n\n-- \n" + l.T("MailFooter", data) + "\n",
	}
	return w.Sender.Send(ctx, msg)
}
