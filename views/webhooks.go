package views

import (
	"strconv"
	"time"
)

// Webhooks is a list of webhook channels with their logs and the form to
// add one: those of the organization the user works in, in the
// notification settings, or the platform's, in the admin area.
type Webhooks struct {
	// Action is the path the forms post to: Action itself adds a channel,
	// Action/<id>/test and Action/<id>/delete act on one.
	Action   string
	Channels []WebhookChannel
	Kinds    []string
	Form     Form
	// Created is a channel just added whose secret is shown this once.
	Created *WebhookCreated
	// Manage: the reader may add, test and remove channels (an
	// organization's owners and admins; the admins for the platform's).
	Manage bool
}

// WebhookCreated is the secret of a generic webhook, shown once.
type WebhookCreated struct {
	Name   string
	Secret string
}

// WebhookChannel is one channel: never its URL nor its secret.
type WebhookChannel struct {
	ID     int64
	Name   string
	Kind   string
	Host   string
	Signed bool
	Log    []WebhookAttempt
	// Test is the result of a test message just sent, if any.
	Test *WebhookTest
}

// WebhookAttempt is one line of a delivery log; Channel and Owner (a
// personal organization's user, a team's name, empty for the platform's)
// are shown on the admins' log of every channel.
type WebhookAttempt struct {
	At        time.Time
	Channel   string
	Owner     string
	EventKind string
	Attempt   int32
	Status    string
	Code      int32
	Error     string
}

// WebhookTest is what came of a test message.
type WebhookTest struct {
	ChannelID int64
	Delivered bool
	Code      int
	Error     string
}

// AdminWebhooks is the admin page of operator alerts: the platform's
// channels, the allowed networks, and every channel's log.
type AdminWebhooks struct {
	Webhooks    Webhooks
	NetworkForm Form
	Log         []WebhookAttempt
}

// webhookPath is the path of an action on channel id.
func webhookPath(action string, id int64, verb string) string {
	return action + "/" + strconv.FormatInt(id, 10) + "/" + verb
}

// webhookResultID is the element a channel's test result goes in.
func webhookResultID(id int64) string { return "webhook-test-" + strconv.FormatInt(id, 10) }
