package handlers

import (
	"errors"
	"fmt"
	"io"
	"net/http"

	"github.com/labstack/echo/v4"

	"github.com/kubebyon/kubebyon/internal/billing"
	"github.com/kubebyon/kubebyon/internal/locale"
	"github.com/kubebyon/kubebyon/internal/stripepay"
)

// maxStripeEvent bounds a webhook delivery's body; Stripe's events are a
// few kilobytes.
const maxStripeEvent = 256 << 10

// checkoutBillingOrder is POST /billing/orders/:id/checkout: a Stripe
// Checkout Session for a pending Stripe order of the current
// organization, for its owners, and off to it.
// Stripe unreachable or refusing: said on the order page, which offers
// to try again.
func (h *Handlers) checkoutBillingOrder(c echo.Context) error {
	o, err := h.ownOrder(c)
	if err != nil {
		return err
	}
	return h.checkout(c, o.Order.ID)
}

func (h *Handlers) checkout(c echo.Context, orderID int64) error {
	u, _ := currentUser(c)
	ctx := c.Request().Context()
	who, err := h.acting(c)
	if err != nil {
		return err
	}
	page := orderPagePath(orderID)
	to, err := h.Billing.Checkout(ctx, who, orderID, u.Email, h.BaseURL+page)
	switch {
	case errors.Is(err, billing.ErrStripe):
		h.Logger.WarnContext(ctx, "stripe checkout", "order", orderID, "error", err)
		h.flashError(c, billing.ErrStripe.Error())
		return redirect(c, page)
	case errors.Is(err, billing.ErrOrderClosed), errors.Is(err, billing.ErrMethod):
		h.flashError(c, err.Error())
		return redirect(c, page)
	case err != nil:
		return err
	}
	return c.Redirect(http.StatusSeeOther, to)
}

// stripeWebhook is POST /webhooks/stripe: Stripe's event deliveries,
// verified by their signature (400 with nothing changed when it does not
// verify, or is dated too long ago or in the future), applied once
// however often they come. A verified event that does not fit the order
// it names is logged and acknowledged with nothing changed: sent again,
// it would be refused again.
func (h *Handlers) stripeWebhook(c echo.Context) error {
	ctx := c.Request().Context()
	body, err := io.ReadAll(io.LimitReader(c.Request().Body, maxStripeEvent+1))
	if err != nil {
		return fmt.Errorf("read stripe event: %w", err)
	}
	if len(body) > maxStripeEvent {
		return c.JSON(http.StatusRequestEntityTooLarge, apiError{Error: apiErrorBody{Code: "too_large", Message: "event too large"}})
	}
	err = h.Billing.StripeEvent(ctx, body, c.Request().Header.Get("Stripe-Signature"))
	switch {
	case errors.Is(err, stripepay.ErrSignature):
		return c.JSON(http.StatusBadRequest, apiError{Error: apiErrorBody{Code: "bad_signature", Message: locale.T(ctx, "ErrStripeSignature")}})
	case errors.Is(err, billing.ErrEventRefused):
		h.Logger.WarnContext(ctx, "stripe event refused", "error", err)
	case err != nil:
		return err
	}
	return c.JSON(http.StatusOK, map[string]bool{"received": true})
}
