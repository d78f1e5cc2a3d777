package billing

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/jackc/pgx/v5"

	"github.com/kubebyon/kubebyon/internal/adminauth"
	"github.com/kubebyon/kubebyon/internal/audit"
	"github.com/kubebyon/kubebyon/internal/input"
	"github.com/kubebyon/kubebyon/internal/secrets"
	"github.com/kubebyon/kubebyon/internal/stripepay"
	"github.com/kubebyon/kubebyon/queries"
)

// Payment methods.
const (
	MethodManual = "manual"
	MethodStripe = "stripe"
)

// Settings are the billing settings admins edit: which payment methods
// users may pay with, what a manual payment takes, how long an unpaid
// order and an unpaid period wait, the seller's details and tax line on
// receipts, and the Stripe keys (sealed when stored).
type Settings struct {
	Methods []string `json:"methods"`
	// ManualInstructions are shown with a manual order: where to send the
	// money, with the order number as the reference.
	ManualInstructions string `json:"manualInstructions"`
	// OrderExpiryHours: an unpaid order expires after this long.
	OrderExpiryHours int `json:"orderExpiryHours"`
	// GraceDays: a period that ended unpaid keeps its plan this long,
	// then the user is on the default plan.
	GraceDays int `json:"graceDays"`
	// Seller details and tax, for receipts: TaxRateBasisPoints on top of
	// the price after credit (0: no tax line).
	SellerName         string `json:"sellerName"`
	SellerAddress      string `json:"sellerAddress"`
	SellerTaxID        string `json:"sellerTaxId"`
	TaxLabel           string `json:"taxLabel"`
	TaxRateBasisPoints int    `json:"taxRateBasisPoints"`
	// StripeMethods are the payment methods a Stripe Checkout offers,
	// each in the currencies it takes (stripepay.Methods); empty as
	// stored before the admin chose: cards alone, which every account
	// takes.
	StripeMethods []string `json:"stripeMethods,omitempty"`
	// Stripe keys (secret).
	StripeSecretKey     string `json:"-"`
	StripeWebhookSecret string `json:"-"`
}

// storedSettings is Settings as stored: secrets sealed.
type storedSettings struct {
	Settings
	StripeSecretKeySealed     string `json:"stripeSecretKeySealed,omitempty"`
	StripeWebhookSecretSealed string `json:"stripeWebhookSecretSealed,omitempty"`
}

const settingsKey = "billing"

// Limits of the settings.
const (
	maxInstructions   = 2000
	maxSellerText     = 500
	maxOrderExpiry    = 30 * 24
	maxGraceDays      = 90
	maxTaxBasisPoints = 10000
)

// Field names of the billing settings form, for errors.
const (
	FieldMethods         = "methods"
	FieldInstructions    = "manual_instructions"
	FieldOrderExpiry     = "order_expiry_hours"
	FieldGraceDays       = "grace_days"
	FieldSellerName      = "seller_name"
	FieldSellerAddress   = "seller_address"
	FieldSellerTaxID     = "seller_tax_id"
	FieldTaxLabel        = "tax_label"
	FieldTaxRate         = "tax_rate"
	FieldStripeMethods   = "stripe_methods"
	FieldStripeSecretKey = "stripe_secret_key"
	FieldStripeWebhook   = "stripe_webhook_secret"
)

// DefaultSettings are the settings before an admin changes anything: no
// payment method (nobody can buy until an admin chooses one), orders
// unpaid for 72 hours expire, 3 days of grace.
func DefaultSettings() Settings {
	return Settings{Methods: []string{}, OrderExpiryHours: 72, GraceDays: 3}
}

// OrderExpiry is how long an unpaid order waits.
func (st Settings) OrderExpiry() time.Duration { return time.Duration(st.OrderExpiryHours) * time.Hour }

// Grace is how long an unpaid period keeps its plan.
func (st Settings) Grace() time.Duration { return time.Duration(st.GraceDays) * 24 * time.Hour }

// Accepts reports whether users may pay with method.
func (st Settings) Accepts(method string) bool { return slices.Contains(st.Methods, method) }

// StripeMethodsOffered are the Stripe payment methods the admin chose,
// cards alone when they never did.
func (st Settings) StripeMethodsOffered() []string {
	if len(st.StripeMethods) == 0 {
		return []string{stripepay.MethodCard}
	}
	return st.StripeMethods
}

// Validate names the bad fields.
func (st Settings) Validate() error {
	errs := input.Errors{}
	for _, m := range st.Methods {
		if m != MethodManual && m != MethodStripe {
			errs[FieldMethods] = "ErrBillingMethod"
		}
	}
	if st.Accepts(MethodManual) && strings.TrimSpace(st.ManualInstructions) == "" {
		errs[FieldInstructions] = "ErrBillingInstructionsRequired"
	}
	for _, m := range st.StripeMethods {
		if !stripepay.ValidMethod(m) {
			errs[FieldStripeMethods] = "ErrBillingStripeMethod"
		}
	}
	if st.Accepts(MethodStripe) && st.StripeMethods != nil && len(st.StripeMethods) == 0 {
		errs[FieldStripeMethods] = "ErrBillingStripeMethodsRequired"
	}
	if st.Accepts(MethodStripe) && st.StripeSecretKey == "" {
		errs[FieldStripeSecretKey] = "ErrBillingStripeKeyRequired"
	}
	if st.Accepts(MethodStripe) && st.StripeWebhookSecret == "" {
		errs[FieldStripeWebhook] = "ErrBillingWebhookSecretRequired"
	}
	if st.OrderExpiryHours < 1 || st.OrderExpiryHours > maxOrderExpiry {
		errs[FieldOrderExpiry] = "ErrBillingOrderExpiry"
	}
	if st.GraceDays < 0 || st.GraceDays > maxGraceDays {
		errs[FieldGraceDays] = "ErrBillingGraceDays"
	}
	if st.TaxRateBasisPoints < 0 || st.TaxRateBasisPoints > maxTaxBasisPoints {
		errs[FieldTaxRate] = "ErrBillingTaxRate"
	}
	if st.TaxRateBasisPoints > 0 && strings.TrimSpace(st.TaxLabel) == "" {
		errs[FieldTaxLabel] = "ErrBillingTaxLabel"
	}
	for field, s := range map[string]string{
		FieldInstructions: st.ManualInstructions, FieldSellerName: st.SellerName, FieldSellerAddress: st.SellerAddress,
		FieldSellerTaxID: st.SellerTaxID, FieldTaxLabel: st.TaxLabel,
	} {
		max := maxSellerText
		if field == FieldInstructions {
			max = maxInstructions
		}
		if !input.Storable(s) {
			errs[field] = input.ErrUnstorable
		} else if utf8.RuneCountInString(s) > max {
			errs[field] = "ErrBillingTextTooLong"
		}
	}
	if len(errs) > 0 {
		return errs
	}
	return nil
}

// LoadSettings reads the billing settings, defaults for what was never
// set.
func LoadSettings(ctx context.Context, q *queries.Queries, box *secrets.Box) (Settings, error) {
	s := storedSettings{Settings: DefaultSettings()}
	row, err := q.SettingGet(ctx, settingsKey)
	if errors.Is(err, pgx.ErrNoRows) {
		return s.Settings, nil
	}
	if err != nil {
		return Settings{}, fmt.Errorf("load billing settings: %w", err)
	}
	if err := json.Unmarshal(row.Value, &s); err != nil {
		return Settings{}, fmt.Errorf("decode billing settings: %w", err)
	}
	for _, f := range []struct {
		sealed string
		into   *string
	}{{s.StripeSecretKeySealed, &s.StripeSecretKey}, {s.StripeWebhookSecretSealed, &s.StripeWebhookSecret}} {
		if f.sealed == "" {
			continue
		}
		b, err := box.Open(f.sealed)
		if err != nil {
			return Settings{}, fmt.Errorf("open billing settings: Stripe keys sealed with another KUBEBYON_SECRET_KEY: %w", err)
		}
		*f.into = string(b)
	}
	return s.Settings, nil
}

// SaveSettings checks and stores the settings, audited, in one
// transaction by an active admin, after other admins' saves
// (adminauth.SaveSettings). Empty Stripe keys keep the stored ones.
func (s *Service) SaveSettings(ctx context.Context, next Settings, actor audit.Actor) error {
	return adminauth.SaveSettings(ctx, s.Pool, actor.UserID, settingsKey, adminauth.Confirm{}, func(q *queries.Queries) error {
		cur, err := LoadSettings(ctx, q, s.Box)
		if err != nil {
			return err
		}
		if next.StripeSecretKey == "" {
			next.StripeSecretKey = cur.StripeSecretKey
		}
		if next.StripeWebhookSecret == "" {
			next.StripeWebhookSecret = cur.StripeWebhookSecret
		}
		if next.Methods == nil {
			next.Methods = []string{}
		}
		if err := next.Validate(); err != nil {
			return err
		}
		st := storedSettings{Settings: next}
		if next.StripeSecretKey != "" {
			st.StripeSecretKeySealed = s.Box.Seal([]byte(next.StripeSecretKey))
		}
		if next.StripeWebhookSecret != "" {
			st.StripeWebhookSecretSealed = s.Box.Seal([]byte(next.StripeWebhookSecret))
		}
		b, err := json.Marshal(st)
		if err != nil {
			return fmt.Errorf("encode billing settings: %w", err)
		}
		if err := q.SettingUpsert(ctx, queries.SettingUpsertParams{Key: settingsKey, Value: b, Secret: true}); err != nil {
			return fmt.Errorf("store billing settings: %w", err)
		}
		return audit.Record(ctx, q, actor, audit.Event{
			Action: "billing.settings", TargetType: "settings", TargetID: settingsKey,
			Details: map[string]any{"methods": next.Methods, "orderExpiryHours": next.OrderExpiryHours, "graceDays": next.GraceDays,
				"taxRateBasisPoints": next.TaxRateBasisPoints, "stripeKeyChanged": next.StripeSecretKey != cur.StripeSecretKey},
		})
	})
}

// SettingsTag is the entity tag of the stored settings
// (adminauth.SettingsTag).
func (s *Service) SettingsTag(ctx context.Context) (string, error) {
	return adminauth.SettingsTag(ctx, queries.New(s.Pool), settingsKey)
}
