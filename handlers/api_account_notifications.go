package handlers

import (
	"errors"
	"fmt"
	"math"
	"net/http"
	"slices"
	"strconv"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/kubebyon/kubebyon/internal/accounts"
	"github.com/kubebyon/kubebyon/internal/adminauth"
	"github.com/kubebyon/kubebyon/internal/input"
	"github.com/kubebyon/kubebyon/internal/locale"
	"github.com/kubebyon/kubebyon/internal/notify"
	"github.com/kubebyon/kubebyon/internal/orgs"
	"github.com/kubebyon/kubebyon/internal/webhooks"
	"github.com/kubebyon/kubebyon/queries"
)

// The caller's notifications in the API: the inbox, the choice of what
// goes where, and the webhook channels.

// apiNotification is a notification of the inbox, worded in the caller's
// language as the console words it.
type apiNotification struct {
	ID        int64      `json:"id"`
	Kind      string     `json:"kind"`
	Title     string     `json:"title"`
	Body      string     `json:"body"`
	CreatedAt time.Time  `json:"created_at"`
	Read      bool       `json:"read"`
	ReadAt    *time.Time `json:"read_at"`
}

// apiNotificationList is one page of the inbox, newest first, with how
// many of all are unread.
type apiNotificationList struct {
	Notifications []apiNotification `json:"notifications"`
	Unread        int64             `json:"unread"`
	Next          string            `json:"next,omitempty"`
}

// listAPINotifications is GET /api/v1/notifications.
func (h *Handlers) listAPINotifications(c echo.Context) error {
	u, _ := currentUser(c)
	ctx := c.Request().Context()
	p, before, err := apiIDPageOf(c)
	if err != nil {
		return err
	}
	rows, err := h.Accounts.Notifications(ctx, u.ID, before, int32(p.Limit)+1)
	if err != nil {
		return err
	}
	rows, next := pageOf(rows, p.Limit, func(n queries.Notification) string { return idCursor(n.ID) })
	out := apiNotificationList{Notifications: make([]apiNotification, len(rows)), Next: next}
	if out.Unread, err = h.Accounts.UnreadNotifications(ctx, u.ID); err != nil {
		return err
	}
	for i, n := range rows {
		title, body := notify.Word(locale.From(ctx), n)
		out.Notifications[i] = apiNotification{
			ID: n.ID, Kind: n.Kind, Title: title, Body: body, CreatedAt: n.CreatedAt.Time.UTC(),
			Read: n.ReadAt.Valid, ReadAt: optionalTime(n.ReadAt),
		}
	}
	return c.JSON(http.StatusOK, out)
}

// markAPINotificationsRead is POST /api/v1/notifications/read: with
// {"ids": [...]}, those of the caller's; with no body or no ids, every
// one, as the console's button does. It answers how many were unread.
func (h *Handlers) markAPINotificationsRead(c echo.Context) error {
	u, _ := currentUser(c)
	var body struct {
		IDs *[]int64 `json:"ids"`
	}
	if c.Request().ContentLength != 0 {
		if err := decodeJSON(c, &body); err != nil {
			return err
		}
	}
	var (
		n   int64
		err error
	)
	if body.IDs == nil {
		n, err = h.Accounts.MarkNotificationsRead(c.Request().Context(), u.ID, actor(c))
	} else {
		if len(*body.IDs) > apiPageMax {
			return input.Errors{"ids": "ErrAPINotificationIDsTooMany"}
		}
		n, err = h.Accounts.MarkSomeNotificationsRead(c.Request().Context(), u.ID, *body.IDs, actor(c))
	}
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, map[string]int64{"marked": n})
}

// apiPreferences are the caller's choices: for each kind of notification
// the caller may be told of, each channel on or off.
type apiPreferences map[notify.Kind]map[notify.Channel]bool

// showAPINotificationSettings is GET /api/v1/notification-settings, with
// the ETag of every kind's choices (accounts.PreferencesTag).
func (h *Handlers) showAPINotificationSettings(c echo.Context) error {
	u, _ := currentUser(c)
	m, err := h.Accounts.NotificationPreferences(c.Request().Context(), u.ID)
	if err != nil {
		return err
	}
	tag, err := accounts.PreferencesTag(m)
	if err != nil {
		return err
	}
	c.Response().Header().Set("ETag", tag)
	out := apiPreferences{}
	for _, k := range notify.KindsFor(u.Role == adminauth.RoleAdmin) {
		out[k] = m[k]
	}
	return c.JSON(http.StatusOK, out)
}

// updateAPINotificationSettings is PATCH /api/v1/notification-settings:
// the kinds and channels named change, the others stay. A kind the caller
// is not told of, or an unknown channel, is 422 on the kind.
func (h *Handlers) updateAPINotificationSettings(c echo.Context) error {
	u, _ := currentUser(c)
	var body map[string]map[string]bool
	if err := decodeJSON(c, &body); err != nil {
		return err
	}
	kinds := notify.KindsFor(u.Role == adminauth.RoleAdmin)
	change := make(map[notify.Kind]map[notify.Channel]bool, len(body))
	fe := input.Errors{}
	for k, channels := range body {
		if !slices.Contains(kinds, notify.Kind(k)) {
			fe[input.Printable(k)] = "ErrAPINotificationKind"
			continue
		}
		change[notify.Kind(k)] = map[notify.Channel]bool{}
		for ch, on := range channels {
			if !slices.Contains(notify.Channels, notify.Channel(ch)) {
				fe[k] = "ErrAPINotificationChannel"
			}
			change[notify.Kind(k)][notify.Channel(ch)] = on
		}
	}
	if len(fe) > 0 {
		return fe
	}
	if err := h.Accounts.SetNotificationPreferences(c.Request().Context(), u.ID, change, actor(c)); err != nil {
		return err
	}
	return h.showAPINotificationSettings(c)
}

// apiWebhook is one of the caller's webhook channels: never its URL
// (chat services put their token there) nor its secret. Secret is the
// signing secret of a generic webhook, in the answer that made it only.
type apiWebhook struct {
	ID        int64     `json:"id"`
	Name      string    `json:"name"`
	Kind      string    `json:"kind"`
	Host      string    `json:"host"`
	SecretSet bool      `json:"secret_set"`
	CreatedAt time.Time `json:"created_at"`
	Secret    string    `json:"secret,omitempty"`
	// Deliveries are its latest attempts, newest first (GET of one).
	Deliveries []apiWebhookDelivery `json:"deliveries,omitempty"`
}

// apiWebhookDelivery is one attempt at sending an event to a channel.
type apiWebhookDelivery struct {
	EventID      string    `json:"event_id"`
	EventKind    string    `json:"event_kind"`
	Attempt      int32     `json:"attempt"`
	Status       string    `json:"status"`
	ResponseCode int32     `json:"response_code"`
	Error        string    `json:"error"`
	At           time.Time `json:"at"`
}

type apiWebhookList struct {
	Webhooks []apiWebhook `json:"webhooks"`
	Next     string       `json:"next,omitempty"`
}

func apiWebhookOf(ch webhooks.Channel) apiWebhook {
	return apiWebhook{ID: ch.ID, Name: ch.Name, Kind: ch.Kind, Host: ch.Host, SecretSet: ch.Signed, CreatedAt: ch.CreatedAt.UTC()}
}

// listAPIWebhooks is GET /api/v1/webhooks: the channels of the key's
// organization, newest first (webhooks.MaxChannels at most).
func (h *Handlers) listAPIWebhooks(c echo.Context) error {
	who, err := h.acting(c)
	if err != nil {
		return err
	}
	p, err := apiPageOf(c)
	if err != nil {
		return err
	}
	chans, err := h.Webhooks.List(c.Request().Context(), who)
	if err != nil {
		return err
	}
	page, next, err := pageInMemory(chans, p, func(ch webhooks.Channel) int64 { return ch.ID })
	if err != nil {
		return err
	}
	out := apiWebhookList{Webhooks: make([]apiWebhook, len(page)), Next: next}
	for i, ch := range page {
		out.Webhooks[i] = apiWebhookOf(ch)
	}
	return c.JSON(http.StatusOK, out)
}

// apiWebhookBody is the body of POST /api/v1/webhooks. Secret is the
// signing secret DingTalk and Feishu give; a generic webhook's is made by
// the platform and answered once.
type apiWebhookBody struct {
	Name   string `json:"name"`
	Kind   string `json:"kind"`
	URL    string `json:"url"`
	Secret string `json:"secret"`
}

// createAPIWebhook is POST /api/v1/webhooks: 201 with the channel and,
// for a generic webhook, its secret, which is never shown again. The
// channel is the key's organization's: its owners and admins add them
// (403 for the others).
func (h *Handlers) createAPIWebhook(c echo.Context) error {
	who, err := h.acting(c)
	if err != nil {
		return err
	}
	var body apiWebhookBody
	if err := decodeJSON(c, &body); err != nil {
		return err
	}
	ctx := c.Request().Context()
	in := webhooks.Input{Name: body.Name, Kind: body.Kind, URL: body.URL, Secret: body.Secret}
	created, err := h.Webhooks.Create(ctx, who, locale.From(ctx).Tag(), in, actor(c))
	if err != nil {
		return webhookAPIError(err)
	}
	out := apiWebhookOf(created.Channel)
	out.Secret = created.Secret
	return createdOnce(c, fmt.Sprintf("/api/v1/webhooks/%d", out.ID), out)
}

// showAPIWebhook is GET /api/v1/webhooks/{id}: the channel with its
// latest deliveries.
func (h *Handlers) showAPIWebhook(c echo.Context) error {
	who, err := h.acting(c)
	if err != nil {
		return err
	}
	id, err := webhookID(c)
	if err != nil {
		return err
	}
	ctx := c.Request().Context()
	log, err := h.Webhooks.Log(ctx, who, id)
	if err != nil {
		return webhookAPIError(err)
	}
	chans, err := h.Webhooks.List(ctx, who)
	if err != nil {
		return err
	}
	i := slices.IndexFunc(chans, func(ch webhooks.Channel) bool { return ch.ID == id })
	if i < 0 {
		return webhookAPIError(webhooks.ErrNotFound) // deleted meanwhile
	}
	out := apiWebhookOf(chans[i])
	out.Deliveries = apiWebhookDeliveries(log)
	return c.JSON(http.StatusOK, out)
}

// apiWebhookDeliveries are a channel's delivery attempts as the API shows
// them.
func apiWebhookDeliveries(log []webhooks.Attempt) []apiWebhookDelivery {
	out := make([]apiWebhookDelivery, len(log))
	for i, a := range log {
		out[i] = apiWebhookDelivery{
			EventID: a.EventID, EventKind: a.EventKind, Attempt: a.Attempt, Status: a.Status,
			ResponseCode: a.ResponseCode, Error: a.Error, At: a.At.UTC(),
		}
	}
	return out
}

// apiWebhookTest is what came of a test message.
type apiWebhookTest struct {
	Delivered    bool   `json:"delivered"`
	ResponseCode int    `json:"response_code"`
	Error        string `json:"error,omitempty"`
}

// testAPIWebhook is POST /api/v1/webhooks/{id}/test: a test message, sent
// at once (a few a minute, as from the console).
func (h *Handlers) testAPIWebhook(c echo.Context) error {
	who, err := h.acting(c)
	if err != nil {
		return err
	}
	id, err := webhookID(c)
	if err != nil {
		return err
	}
	return h.sendAPIWebhookTest(c, who, id, webhookAPIError)
}

// sendAPIWebhookTest sends a test message to the channel id of who's
// organization (webhooks.Platform: the platform's) now, counted against the caller's budget of tests (the
// console's too: 429 with Retry-After beyond it), and answers what came
// of it, 200 whatever it was; notFound answers the service's errors.
func (h *Handlers) sendAPIWebhookTest(c echo.Context, who orgs.Acting, id int64, notFound func(error) error) error {
	u, _ := currentUser(c)
	ctx := c.Request().Context()
	d, err := h.limits.Hit(ctx, webhookTestPerUser, userKey(u), time.Now())
	if err != nil {
		return err
	}
	if !d.Allowed {
		seconds := int(math.Ceil(d.RetryAfter.Seconds()))
		c.Response().Header().Set("Retry-After", strconv.Itoa(seconds))
		return c.JSON(http.StatusTooManyRequests, apiError{Error: apiErrorBody{
			Code: "too_many_requests", Message: locale.T(ctx, "ErrWebhookTestRateLimited", map[string]any{"Seconds": seconds}),
		}})
	}
	o, err := h.Webhooks.Test(ctx, who, id, locale.From(ctx).Tag(), actor(c))
	if err != nil {
		return notFound(err)
	}
	out := apiWebhookTest{Delivered: o.Err == nil, ResponseCode: o.Code}
	if o.Err != nil {
		out.Error = o.Err.Error()
	}
	return c.JSON(http.StatusOK, out)
}

// deleteAPIWebhook is DELETE /api/v1/webhooks/{id}, with its log.
func (h *Handlers) deleteAPIWebhook(c echo.Context) error {
	who, err := h.acting(c)
	if err != nil {
		return err
	}
	id, err := webhookID(c)
	if err != nil {
		return err
	}
	if err := h.Webhooks.Delete(c.Request().Context(), who, id, actor(c)); err != nil {
		return webhookAPIError(err)
	}
	return c.NoContent(http.StatusNoContent)
}

// webhookAPIError answers a channel that is not the caller's
// organization's with 404 (orgs.ErrForbidden is 403 by handleError).
func webhookAPIError(err error) error {
	if errors.Is(err, webhooks.ErrNotFound) {
		return echo.ErrNotFound
	}
	return err
}
