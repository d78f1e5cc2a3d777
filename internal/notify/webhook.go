package notify

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgtype"
	"github.com/riverqueue/river"

	"github.com/kubebyon/kubebyon/internal/secrets"
	"github.com/kubebyon/kubebyon/queries"
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

// webhookChannels is the user's webhook channels (userID > 0) or the
// platform's (userID 0).
func webhookChannels(ctx context.Context, q *queries.Queries, userID int64) ([]queries.WebhookChannel, error) {
	if userID > 0 {
		return q.WebhookChannelListByUser(ctx, pgtype.Int8{Int64: userID, Valid: true})
	}
	return q.WebhookChannelListPlatform(ctx)
}

// enqueueWebhooks inserts, with rc in tx, one delivery of the event (the
// message template and its data) to each of chans. lang is the user's
// language; a platform channel has its own.
func enqueueWebhooks(ctx context.Context, tx pgx.Tx, rc *river.Client[pgx.Tx], box *secrets.Box, chans []queries.WebhookChannel, lang string, kind Kind, template string, data map[string]any) error {
	raw, err := json.Marshal(data)
	if err != nil {
		return fmt.Errorf("encode webhook data: %w", err)
	}
	sealed := box.Seal(raw)
	id, now := NewEventID(), time.Now().UTC()
	for _, c := range chans {
		l := lang
		if !c.UserID.Valid {
			l = c.Lang
		}
		args := WebhookArgs{ChannelID: c.ID, EventID: id, EventKind: string(kind), Template: template, Lang: l, Time: now, Sealed: sealed}
		if _, err := rc.InsertTx(ctx, tx, args, nil); err != nil {
			return fmt.Errorf("queue webhook delivery to channel %d: %w", c.ID, err)
		}
	}
	return nil
}
