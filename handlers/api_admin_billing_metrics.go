package handlers

import (
	"net/http"
	"slices"
	"strings"

	"github.com/labstack/echo/v4"

	"github.com/kubebyon/kubebyon/internal/billing"
)

// apiBillingSettings is the billing settings, without the Stripe keys:
// StripeMethods are the payment methods a Stripe Checkout offers (cards
// when never chosen); StripeWebhookURL is where Stripe is to send its
// events.
type apiBillingSettings struct {
	Methods                []string `json:"methods"`
	ManualInstructions     string   `json:"manual_instructions"`
	OrderExpiryHours       int      `json:"order_expiry_hours"`
	GraceDays              int      `json:"grace_days"`
	SellerName             string   `json:"seller_name"`
	SellerAddress          string   `json:"seller_address"`
	SellerTaxID            string   `json:"seller_tax_id"`
	TaxLabel               string   `json:"tax_label"`
	TaxRateBasisPoints     int      `json:"tax_rate_basis_points"`
	StripeMethods          []string `json:"stripe_methods"`
	StripeSecretKeySet     bool     `json:"stripe_secret_key_set"`
	StripeWebhookSecretSet bool     `json:"stripe_webhook_secret_set"`
	StripeWebhookURL       string   `json:"stripe_webhook_url"`
}

// apiBillingPatch is a PATCH of the billing settings. The Stripe keys,
// absent or empty, keep the stored ones (they cannot be cleared, as in
// the back office).
type apiBillingPatch struct {
	Methods             *[]string `json:"methods"`
	ManualInstructions  *string   `json:"manual_instructions"`
	OrderExpiryHours    *int      `json:"order_expiry_hours"`
	GraceDays           *int      `json:"grace_days"`
	SellerName          *string   `json:"seller_name"`
	SellerAddress       *string   `json:"seller_address"`
	SellerTaxID         *string   `json:"seller_tax_id"`
	TaxLabel            *string   `json:"tax_label"`
	TaxRateBasisPoints  *int      `json:"tax_rate_basis_points"`
	StripeMethods       *[]string `json:"stripe_methods"`
	StripeSecretKey     *string   `json:"stripe_secret_key"`
	StripeWebhookSecret *string   `json:"stripe_webhook_secret"`
}

// showAPIBillingSettings is GET /api/v1/admin/settings/billing.
func (h *Handlers) showAPIBillingSettings(c echo.Context) error {
	if err := setETag(c, h.Billing.SettingsTag); err != nil {
		return err
	}
	st, err := h.Billing.Settings(c.Request().Context())
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, apiBillingSettings{
		Methods: append([]string{}, st.Methods...), ManualInstructions: st.ManualInstructions,
		OrderExpiryHours: st.OrderExpiryHours, GraceDays: st.GraceDays,
		SellerName: st.SellerName, SellerAddress: st.SellerAddress, SellerTaxID: st.SellerTaxID,
		TaxLabel: st.TaxLabel, TaxRateBasisPoints: st.TaxRateBasisPoints,
		StripeMethods:      append([]string{}, st.StripeMethodsOffered()...),
		StripeSecretKeySet: st.StripeSecretKey != "", StripeWebhookSecretSet: st.StripeWebhookSecret != "",
		StripeWebhookURL: strings.TrimRight(h.BaseURL, "/") + "/webhooks/stripe",
	})
}

// updateAPIBillingSettings is PATCH /api/v1/admin/settings/billing.
func (h *Handlers) updateAPIBillingSettings(c echo.Context) error {
	var body apiBillingPatch
	if err := decodeJSON(c, &body); err != nil {
		return err
	}
	ctx := c.Request().Context()
	st, err := h.Billing.Settings(ctx)
	if err != nil {
		return err
	}
	// Empty keys keep the stored ones (billing.Service.SaveSettings).
	st.StripeSecretKey, st.StripeWebhookSecret = "", ""
	for _, f := range []struct{ dst, p *string }{
		{&st.ManualInstructions, body.ManualInstructions}, {&st.SellerName, body.SellerName},
		{&st.SellerAddress, body.SellerAddress}, {&st.SellerTaxID, body.SellerTaxID}, {&st.TaxLabel, body.TaxLabel},
		{&st.StripeSecretKey, body.StripeSecretKey}, {&st.StripeWebhookSecret, body.StripeWebhookSecret},
	} {
		if f.p != nil {
			*f.dst = strings.TrimSpace(*f.p)
		}
	}
	patch(&st.OrderExpiryHours, body.OrderExpiryHours)
	patch(&st.GraceDays, body.GraceDays)
	patch(&st.TaxRateBasisPoints, body.TaxRateBasisPoints)
	// Each once, as the form's checkboxes give them.
	if body.Methods != nil {
		st.Methods = distinct(*body.Methods)
	}
	if body.StripeMethods != nil {
		st.StripeMethods = distinct(*body.StripeMethods)
	}
	if err := h.Billing.SaveSettings(ctx, st, actor(c)); err != nil {
		return adminAPIError(err, map[string]string{billing.FieldTaxRate: "tax_rate_basis_points"})
	}
	return h.showAPIBillingSettings(c)
}

// distinct is values without repeats, in their order; never nil.
func distinct(values []string) []string {
	out := []string{}
	for _, v := range values {
		if !slices.Contains(out, v) {
			out = append(out, v)
		}
	}
	return out
}

// apiMetricsSettings is the metrics settings: how often each control
// plane is scraped, how long each resolution is kept, and when a control
// plane's owner is alerted (0: never).
type apiMetricsSettings struct {
	IntervalSeconds         int     `json:"interval_seconds"`
	RawRetentionHours       int     `json:"raw_retention_hours"`
	FiveMinuteRetentionDays int     `json:"five_minute_retention_days"`
	HourlyRetentionDays     int     `json:"hourly_retention_days"`
	AlertErrorRate          float64 `json:"alert_error_rate"`
	AlertLatencyP99Ms       int     `json:"alert_latency_p99_ms"`
}

type apiMetricsPatch struct {
	IntervalSeconds         *int     `json:"interval_seconds"`
	RawRetentionHours       *int     `json:"raw_retention_hours"`
	FiveMinuteRetentionDays *int     `json:"five_minute_retention_days"`
	HourlyRetentionDays     *int     `json:"hourly_retention_days"`
	AlertErrorRate          *float64 `json:"alert_error_rate"`
	AlertLatencyP99Ms       *int     `json:"alert_latency_p99_ms"`
}

// showAPIMetricsSettings is GET /api/v1/admin/settings/metrics.
func (h *Handlers) showAPIMetricsSettings(c echo.Context) error {
	if err := setETag(c, h.ClusterMetrics.SettingsTag); err != nil {
		return err
	}
	st, err := h.ClusterMetrics.Settings(c.Request().Context())
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, apiMetricsSettings(st))
}

// updateAPIMetricsSettings is PATCH /api/v1/admin/settings/metrics.
func (h *Handlers) updateAPIMetricsSettings(c echo.Context) error {
	var body apiMetricsPatch
	if err := decodeJSON(c, &body); err != nil {
		return err
	}
	ctx := c.Request().Context()
	st, err := h.ClusterMetrics.Settings(ctx)
	if err != nil {
		return err
	}
	patch(&st.IntervalSeconds, body.IntervalSeconds)
	patch(&st.RawRetentionHours, body.RawRetentionHours)
	patch(&st.FiveMinuteRetentionDays, body.FiveMinuteRetentionDays)
	patch(&st.HourlyRetentionDays, body.HourlyRetentionDays)
	patch(&st.AlertErrorRate, body.AlertErrorRate)
	patch(&st.AlertLatencyP99Ms, body.AlertLatencyP99Ms)
	if err := h.ClusterMetrics.SaveSettings(ctx, st, actor(c)); err != nil {
		return adminAPIError(err, nil)
	}
	return h.showAPIMetricsSettings(c)
}
