package jobs

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/riverqueue/river"

	"github.com/kubebyon/kubebyon/internal/branding"
	"github.com/kubebyon/kubebyon/internal/locale"
	"github.com/kubebyon/kubebyon/internal/mail"
	"github.com/kubebyon/kubebyon/internal/notify"
	"github.com/kubebyon/kubebyon/internal/secrets"
	"github.com/kubebyon/kubebyon/queries"
)

// EmailWorker renders an email in the recipient's language and sends it,
// naming the platform by the branding's product name (read at each email).
type EmailWorker struct {
	river.WorkerDefaults[notify.EmailArgs]
	Pool    *pgxpool.Pool
	Sender  mail.Sender
	Box     *secrets.Box
	Catalog *locale.Catalog
	BaseURL string
}

// Work implements river.Worker.
func (w *EmailWorker) Work(ctx context.Context, job *river.Job[notify.EmailArgs]) error {
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
	brand, err := branding.Load(ctx, queries.New(w.Pool))
	if err != nil {
		return err
	}
	data["BaseURL"], data["Product"] = w.BaseURL, brand.ProductName
	l := w.Catalog.For(job.Args.Lang)
	notify.Plain(l, data)
	msg := mail.Message{
		To:      job.Args.To,
		Subject: notify.Title(l, job.Args.Template, data),
		Text:    l.T("Mail"+job.Args.Template+"Body", data) + "\n\n-- \n" + l.T("MailFooter", data) + "\n",
	}
	return w.Sender.Send(ctx, msg)
}
