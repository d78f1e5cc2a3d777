package notify

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/riverqueue/river"

	"github.com/kubebyon/kubebyon/internal/secrets"
)

// QueueWebhook is the queue of webhook deliveries, so a slow webhook never
// holds up other work.
const QueueWebhook = "webhook"

// WebhookMaxAttempts is how many times a delivery is tried, with River's
// backoff between attempts (about 1.3 hours in all).
const WebhookMaxAttempts = 8

// WebhookArgs is one event to deliver to one webhook channel (worked by
// jobs.WebhookWorker with package webhooks). Its data is sealed, as an
// email's is.
type WebhookArgs struct {
	ChannelID int64     `json:"channel_id"`
	EventID   string    `json:"event_id"`
	EventKind string    `json:"event_kind"`
	Template  string    `json:"template"`
	Lang      string    `json:"lang"`
	Time      time.Time `json:"time"`
	Sealed    string    `json:"sealed"`
}

// Kind implements river.JobArgs.
func (WebhookArgs) Kind() string { return "webhook_delivery" }

// InsertOpts implements river.JobArgsWithInsertOpts.
func (WebhookArgs) InsertOpts() river.InsertOpts {
	return river.InsertOpts{Queue: QueueWebhook, MaxAttempts: WebhookMaxAttempts}
}

// NewEventID is a random event ID: the same for every attempt at an
// event's delivery, so that a receiver can drop a repeat.
func NewEventID() string { return "evt_" + strings.ToLower(rand.Text()) }

// hook is a channel an event goes to, with the language it is worded in.
type hook struct {
	channelID int64
	lang      string
}

// enqueueWebhooks inserts, with rc in tx, one delivery of the event (the
// message template and its data) to each of hooks, under one event ID.
func enqueueWebhooks(ctx context.Context, tx pgx.Tx, rc *river.Client[pgx.Tx], box *secrets.Box, hooks []hook, kind Kind, template string, data map[string]any) error {
	if len(hooks) == 0 {
		return nil
	}
	raw, err := json.Marshal(data)
	if err != nil {
		return fmt.Errorf("encode webhook data: %w", err)
	}
	sealed := box.Seal(raw)
	id, now := NewEventID(), time.Now().UTC()
	for _, h := range hooks {
		args := WebhookArgs{ChannelID: h.channelID, EventID: id, EventKind: string(kind), Template: template, Lang: h.lang, Time: now, Sealed: sealed}
		if _, err := rc.InsertTx(ctx, tx, args, nil); err != nil {
			return fmt.Errorf("queue webhook delivery to channel %d: %w", h.channelID, err)
		}
	}
	return nil
}
