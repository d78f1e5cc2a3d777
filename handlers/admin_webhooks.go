package handlers

import (
	"errors"
	"net/http"
	"strings"

	"github.com/labstack/echo/v4"

	"github.com/kubebyon/kubebyon/internal/adminauth"
	"github.com/kubebyon/kubebyon/internal/locale"
	"github.com/kubebyon/kubebyon/internal/webhooks"
	"github.com/kubebyon/kubebyon/views"
)

// adminWebhooksPath is where the platform channels' forms post.
const adminWebhooksPath = "/admin/notifications/channels"

// adminWebhookLogLength is how many attempts of every channel the admin
// page shows.
const adminWebhookLogLength = 100

func (h *Handlers) showAdminWebhooksPage(c echo.Context) error {
	h.viewAsAPICall(c, "adminListNotificationChannels", nil)
	return h.renderAdminWebhooks(c, http.StatusOK, views.NewForm(), nil, nil, nil)
}

// renderAdminWebhooks shows the page with f the add form and network the
// networks form as submitted (nil: the stored networks).
func (h *Handlers) renderAdminWebhooks(c echo.Context, status int, f views.Form, network *views.Form, created *views.WebhookCreated, test *views.WebhookTest) error {
	ctx := c.Request().Context()
	w, err := h.webhookViews(c, webhooks.Platform, adminWebhooksPath, f, test)
	if err != nil {
		return err
	}
	w.Created = created
	if network == nil {
		n, err := h.Webhooks.Network(ctx)
		if err != nil {
			return err
		}
		nf := views.NewForm()
		nf.Values[webhooks.FieldAllowed] = strings.Join(n.AllowedCIDRs, "\n")
		network = &nf
	}
	log, err := h.Webhooks.RecentLog(ctx, adminWebhookLogLength)
	if err != nil {
		return err
	}
	return render(c, status, views.AdminWebhooksPage(views.AdminWebhooks{Webhooks: w, NetworkForm: *network, Log: webhookAttemptViews(log)}))
}

func (h *Handlers) createPlatformWebhook(c echo.Context) error {
	f := formFrom(c, webhookFields...)
	created, err := h.Webhooks.Create(c.Request().Context(), webhooks.Platform, locale.From(c.Request().Context()).Tag(), webhookInput(c), actor(c))
	if err != nil {
		return adminSaveError(c, err, &f, "", nil, func(status int) error {
			return h.renderAdminWebhooks(c, status, f, nil, nil, nil)
		})
	}
	if created.Secret == "" {
		h.flash(c, "FlashWebhookAdded")
		return redirect(c, "/admin/notifications")
	}
	c.Response().Header().Set("Cache-Control", "no-store")
	return h.renderAdminWebhooks(c, http.StatusOK, views.NewForm(), nil, &views.WebhookCreated{Name: created.Channel.Name, Secret: created.Secret}, nil)
}

func (h *Handlers) testPlatformWebhook(c echo.Context) error {
	t, err := h.sendWebhookTest(c, webhooks.Platform)
	if err != nil {
		return err
	}
	if wantsFragment(c) {
		return render(c, http.StatusOK, views.WebhookTestResult(*t))
	}
	return h.renderAdminWebhooks(c, http.StatusOK, views.NewForm(), nil, nil, t)
}

func (h *Handlers) deletePlatformWebhook(c echo.Context) error {
	id, err := webhookID(c)
	if err != nil {
		return err
	}
	err = h.Webhooks.Delete(c.Request().Context(), webhooks.Platform, id, actor(c))
	if errors.Is(err, webhooks.ErrNotFound) || errors.Is(err, adminauth.ErrNotAdmin) {
		return echo.ErrNotFound
	}
	if err != nil {
		return err
	}
	h.flash(c, "FlashWebhookDeleted")
	return redirect(c, "/admin/notifications")
}

func (h *Handlers) saveWebhookNetwork(c echo.Context) error {
	nf := formFrom(c, webhooks.FieldAllowed)
	_, err := h.Webhooks.SaveNetwork(c.Request().Context(), nf.Value(webhooks.FieldAllowed), actor(c))
	if err != nil {
		return adminSaveError(c, err, &nf, "", nil, func(status int) error {
			return h.renderAdminWebhooks(c, status, views.NewForm(), &nf, nil, nil)
		})
	}
	h.flash(c, "FlashWebhookNetworkSaved")
	return redirect(c, "/admin/notifications")
}
