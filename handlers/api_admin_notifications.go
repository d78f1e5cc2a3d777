package handlers

import (
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"

	"github.com/labstack/echo/v4"

	"github.com/kubebyon/kubebyon/internal/locale"
	"github.com/kubebyon/kubebyon/internal/webhooks"
)

// apiChannelList is one page of the platform's channels, which the API
// shows as it shows a user's webhooks (apiWebhook).
type apiChannelList struct {
	Channels []apiWebhook `json:"channels"`
	Next     string       `json:"next,omitempty"`
}

// errChannelNotFound answers for a platform channel that does not exist
// (a user's channel is not one).
var errChannelNotFound = echo.NewHTTPError(http.StatusNotFound, "ErrAPIChannelNotFound")

// channelError answers a channel action's error.
func channelError(err error) error {
	if errors.Is(err, webhooks.ErrNotFound) {
		return errChannelNotFound
	}
	return adminAPIError(err, nil)
}

func channelIDParam(c echo.Context) (int64, error) {
	id, err := strconv.ParseInt(c.Param("id"), 10, 64)
	if err != nil {
		return 0, errChannelNotFound
	}
	return id, nil
}

// listAPIChannels is GET /api/v1/admin/notification-channels: the
// platform's channels, newest first, a page at a time.
func (h *Handlers) listAPIChannels(c echo.Context) error {
	ctx := c.Request().Context()
	items, next, err := idPage(c, func(before int64, limit int32) ([]webhooks.Channel, error) {
		return h.Webhooks.Page(ctx, webhooks.Platform, before, limit)
	}, func(ch webhooks.Channel) int64 { return ch.ID }, apiWebhookOf)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, apiChannelList{Channels: items, Next: next})
}

// createAPIChannel is POST /api/v1/admin/notification-channels. Its
// messages are worded in the admin's language. A generic webhook's
// signing secret is made by the platform and answered this once; a
// DingTalk or Feishu channel's is the one given.
func (h *Handlers) createAPIChannel(c echo.Context) error {
	var body struct {
		Name   string `json:"name"`
		Kind   string `json:"kind"`
		URL    string `json:"url"`
		Secret string `json:"secret"`
	}
	if err := decodeJSON(c, &body); err != nil {
		return err
	}
	ctx := c.Request().Context()
	created, err := h.Webhooks.Create(ctx, webhooks.Platform, locale.From(ctx).Tag(), webhooks.Input{Name: body.Name, Kind: body.Kind, URL: body.URL, Secret: body.Secret}, actor(c))
	if err != nil {
		return adminAPIError(err, nil)
	}
	out := apiWebhookOf(created.Channel)
	out.Secret = created.Secret
	c.Response().Header().Set(echo.HeaderLocation, fmt.Sprintf("/api/v1/admin/notification-channels/%d", out.ID))
	c.Response().Header().Set(echo.HeaderCacheControl, "no-store")
	return c.JSON(http.StatusCreated, out)
}

// showAPIChannel is GET /api/v1/admin/notification-channels/:id: the
// channel with its latest delivery attempts.
func (h *Handlers) showAPIChannel(c echo.Context) error {
	id, err := channelIDParam(c)
	if err != nil {
		return err
	}
	ctx := c.Request().Context()
	ch, err := h.Webhooks.Get(ctx, webhooks.Platform, id)
	if err != nil {
		return channelError(err)
	}
	log, err := h.Webhooks.Log(ctx, webhooks.Platform, id)
	if err != nil {
		return channelError(err)
	}
	out := apiWebhookOf(ch)
	out.Deliveries = apiWebhookDeliveries(log)
	return c.JSON(http.StatusOK, out)
}

// deleteAPIChannel is DELETE /api/v1/admin/notification-channels/:id,
// with its log.
func (h *Handlers) deleteAPIChannel(c echo.Context) error {
	id, err := channelIDParam(c)
	if err != nil {
		return err
	}
	if err := h.Webhooks.Delete(c.Request().Context(), webhooks.Platform, id, actor(c)); err != nil {
		return channelError(err)
	}
	return c.NoContent(http.StatusNoContent)
}

// testAPIChannel is POST /api/v1/admin/notification-channels/:id/test: a
// test message, sent now, logged with the channel's deliveries. Tests
// count against the admin's budget of them, the console's too (429 with
// Retry-After beyond it). A test that ran is 200 whatever came of it.
func (h *Handlers) testAPIChannel(c echo.Context) error {
	id, err := channelIDParam(c)
	if err != nil {
		return err
	}
	return h.sendAPIWebhookTest(c, webhooks.Platform, id, channelError)
}

// apiWebhookNetwork is the internal networks webhooks (every user's and
// the platform's) may reach all the same, as CIDRs.
type apiWebhookNetwork struct {
	AllowedCIDRs []string `json:"allowed_cidrs"`
}

// showAPIWebhookNetwork is GET /api/v1/admin/settings/webhook-network.
func (h *Handlers) showAPIWebhookNetwork(c echo.Context) error {
	if err := setETag(c, h.Webhooks.NetworkTag); err != nil {
		return err
	}
	n, err := h.Webhooks.Network(c.Request().Context())
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, apiWebhookNetwork{AllowedCIDRs: append([]string{}, n.AllowedCIDRs...)})
}

// updateAPIWebhookNetwork is PATCH /api/v1/admin/settings/webhook-network:
// the list replaces the stored one (a bare address is its own network).
func (h *Handlers) updateAPIWebhookNetwork(c echo.Context) error {
	var body struct {
		AllowedCIDRs *[]string `json:"allowed_cidrs"`
	}
	if err := decodeJSON(c, &body); err != nil {
		return err
	}
	if body.AllowedCIDRs != nil {
		_, err := h.Webhooks.SaveNetwork(c.Request().Context(), strings.Join(*body.AllowedCIDRs, "\n"), actor(c))
		if err != nil {
			return adminAPIError(err, map[string]string{webhooks.FieldAllowed: "allowed_cidrs"})
		}
	}
	return h.showAPIWebhookNetwork(c)
}
