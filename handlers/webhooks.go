package handlers

import (
	"errors"
	"math"
	"net/http"
	"strconv"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/kubebyon/kubebyon/internal/adminauth"
	"github.com/kubebyon/kubebyon/internal/input"
	"github.com/kubebyon/kubebyon/internal/locale"
	"github.com/kubebyon/kubebyon/internal/notify"
	"github.com/kubebyon/kubebyon/internal/orgs"
	"github.com/kubebyon/kubebyon/internal/ratelimit"
	"github.com/kubebyon/kubebyon/internal/webhooks"
	"github.com/kubebyon/kubebyon/views"
)

// userWebhooksPath is where the forms of the webhooks of the organization
// the user works in post.
const userWebhooksPath = "/settings/notifications/webhooks"

// webhookFields are the add form's fields but the secret, which is never
// shown back.
var webhookFields = []string{webhooks.FieldName, webhooks.FieldKind, webhooks.FieldURL}

// webhookViews lists the channels of who's organization (or of the
// platform, webhooks.Platform), each with its log; test is a test message
// just sent.
func (h *Handlers) webhookViews(c echo.Context, who orgs.Acting, action string, f views.Form, test *views.WebhookTest) (views.Webhooks, error) {
	ctx := c.Request().Context()
	svc := h.Webhooks
	chans, err := svc.List(ctx, who)
	if err != nil {
		return views.Webhooks{}, err
	}
	if f.Values[webhooks.FieldKind] == "" {
		f.Values[webhooks.FieldKind] = webhooks.Generic
	}
	// The buttons show to whom they would work; the service checks again.
	w := views.Webhooks{Action: action, Kinds: webhooks.ChannelKinds, Form: f, Manage: who.May(orgs.ManageWebhooks)}
	for _, ch := range chans {
		log, err := svc.Log(ctx, who, ch.ID)
		if err != nil {
			return w, err
		}
		v := views.WebhookChannel{ID: ch.ID, Name: ch.Name, Kind: ch.Kind, Host: ch.Host, Signed: ch.Signed, Log: webhookAttemptViews(log)}
		if test != nil && test.ChannelID == ch.ID {
			v.Test = test
		}
		w.Channels = append(w.Channels, v)
	}
	return w, nil
}

func webhookAttemptViews(log []webhooks.Attempt) []views.WebhookAttempt {
	out := make([]views.WebhookAttempt, 0, len(log))
	for _, a := range log {
		out = append(out, views.WebhookAttempt{
			At: a.At, Channel: a.ChannelName, Owner: a.Owner, EventKind: a.EventKind, Attempt: a.Attempt,
			Status: a.Status, Code: a.ResponseCode, Error: a.Error,
		})
	}
	return out
}

// renderNotificationsPage shows the user's preferences and the webhooks
// of the organization they work in, with f the add form as submitted.
func (h *Handlers) renderNotificationsPage(c echo.Context, status int, f views.Form, created *views.WebhookCreated, test *views.WebhookTest) error {
	u, _ := currentUser(c)
	m, err := h.Accounts.NotificationPreferences(c.Request().Context(), u.ID)
	if err != nil {
		return err
	}
	who, err := h.acting(c)
	if err != nil {
		return err
	}
	w, err := h.webhookViews(c, who, userWebhooksPath, f, test)
	if err != nil {
		return err
	}
	w.Created = created
	return render(c, status, views.SettingsNotificationsPage(notificationSettings(m, notify.KindsFor(u.Role == adminauth.RoleAdmin)), w))
}

// createWebhook adds a channel to the organization the user works in (its
// owners and admins; 403 for the others). A generic webhook's secret is
// shown in the response itself, once, never through a redirect.
func (h *Handlers) createWebhook(c echo.Context) error {
	who, err := h.acting(c)
	if err != nil {
		return err
	}
	f := formFrom(c, webhookFields...)
	created, err := h.Webhooks.Create(c.Request().Context(), who, locale.From(c.Request().Context()).Tag(), webhookInput(c), actor(c))
	if errors.Is(err, webhooks.ErrNotFound) {
		return echo.ErrNotFound
	}
	var invalid input.Errors
	if errors.As(err, &invalid) {
		f.Errors = invalid
		return h.renderNotificationsPage(c, http.StatusUnprocessableEntity, f, nil, nil)
	}
	if err != nil {
		return err
	}
	if created.Secret == "" {
		h.flash(c, "FlashWebhookAdded")
		return redirect(c, "/settings/notifications")
	}
	c.Response().Header().Set("Cache-Control", "no-store")
	return h.renderNotificationsPage(c, http.StatusOK, views.NewForm(), &views.WebhookCreated{Name: created.Channel.Name, Secret: created.Secret}, nil)
}

func webhookInput(c echo.Context) webhooks.Input {
	return webhooks.Input{
		Name: c.FormValue(webhooks.FieldName), Kind: c.FormValue(webhooks.FieldKind),
		URL: c.FormValue(webhooks.FieldURL), Secret: c.FormValue(webhooks.FieldSecret),
	}
}

// webhookID is the :id of the path; a malformed one is not found.
func webhookID(c echo.Context) (int64, error) {
	id, err := strconv.ParseInt(c.Param("id"), 10, 64)
	if err != nil {
		return 0, echo.ErrNotFound
	}
	return id, nil
}

// sendWebhookTest sends a test message to channel id of who's
// organization (or the platform's, webhooks.Platform) and words what came
// of it.
func (h *Handlers) sendWebhookTest(c echo.Context, who orgs.Acting) (*views.WebhookTest, error) {
	id, err := webhookID(c)
	if err != nil {
		return nil, err
	}
	// Tests go out at once, each a request from the platform: a few a
	// minute per person.
	u, _ := currentUser(c)
	d, err := h.limits.Hit(c.Request().Context(), webhookTestPerUser, userKey(u), time.Now())
	if err != nil {
		return nil, err
	}
	if !d.Allowed {
		c.Response().Header().Set("Retry-After", strconv.Itoa(int(math.Ceil(d.RetryAfter.Seconds()))))
		return &views.WebhookTest{ChannelID: id, Error: locale.T(c.Request().Context(), "ErrWebhookTestRateLimited",
			map[string]any{"Seconds": int(math.Ceil(d.RetryAfter.Seconds()))})}, nil
	}
	o, err := h.Webhooks.Test(c.Request().Context(), who, id, locale.From(c.Request().Context()).Tag(), actor(c))
	if errors.Is(err, webhooks.ErrNotFound) || errors.Is(err, adminauth.ErrNotAdmin) {
		return nil, echo.ErrNotFound
	}
	if err != nil {
		return nil, err
	}
	t := &views.WebhookTest{ChannelID: id, Delivered: o.Err == nil, Code: o.Code}
	if o.Err != nil {
		t.Error = o.Err.Error()
	}
	return t, nil
}

// webhookTestPerUser bounds the test messages one person sends.
var webhookTestPerUser = ratelimit.Rule{Name: "webhook-test-user", Limit: 10, Window: time.Minute}

// testWebhook answers htmx with the result alone, a browser without
// JavaScript with the page showing it.
func (h *Handlers) testWebhook(c echo.Context) error {
	who, err := h.acting(c)
	if err != nil {
		return err
	}
	t, err := h.sendWebhookTest(c, who)
	if err != nil {
		return err
	}
	if wantsFragment(c) {
		return render(c, http.StatusOK, views.WebhookTestResult(*t))
	}
	return h.renderNotificationsPage(c, http.StatusOK, views.NewForm(), nil, t)
}

func (h *Handlers) deleteWebhook(c echo.Context) error {
	who, err := h.acting(c)
	if err != nil {
		return err
	}
	id, err := webhookID(c)
	if err != nil {
		return err
	}
	err = h.Webhooks.Delete(c.Request().Context(), who, id, actor(c))
	if errors.Is(err, webhooks.ErrNotFound) {
		return echo.ErrNotFound
	}
	if err != nil {
		return err
	}
	h.flash(c, "FlashWebhookDeleted")
	return redirect(c, "/settings/notifications")
}
