package handlers

import (
	"errors"
	"io"
	"mime"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/kubebyon/kubebyon/internal/branding"
	"github.com/kubebyon/kubebyon/internal/input"
)

// apiBranding is the branding and session settings: the session lifetime
// in hours and the idle timeout in minutes, as the back office's form has
// them; LogoURL is where the logo is served, null for none.
type apiBranding struct {
	ProductName          string  `json:"product_name"`
	SupportContact       string  `json:"support_contact"`
	FooterText           string  `json:"footer_text"`
	DefaultLanguage      string  `json:"default_language"`
	SessionLifetimeHours int64   `json:"session_lifetime_hours"`
	IdleTimeoutMinutes   int64   `json:"idle_timeout_minutes"`
	LogoURL              *string `json:"logo_url"`
}

type apiBrandingPatch struct {
	ProductName          *string `json:"product_name"`
	SupportContact       *string `json:"support_contact"`
	FooterText           *string `json:"footer_text"`
	DefaultLanguage      *string `json:"default_language"`
	SessionLifetimeHours *int64  `json:"session_lifetime_hours"`
	IdleTimeoutMinutes   *int64  `json:"idle_timeout_minutes"`
}

var brandingAPIFields = map[string]string{
	branding.FieldProductName: "product_name", branding.FieldSupportContact: "support_contact",
	branding.FieldFooterText: "footer_text", branding.FieldDefaultLanguage: "default_language",
	branding.FieldSessionLifetime: "session_lifetime_hours", branding.FieldIdleTimeout: "idle_timeout_minutes",
	branding.FieldLogo: "logo",
}

// logoTypes are the logo's content types an upload may declare (its type
// is then told by its bytes, as the back office's upload's is).
var logoTypes = []string{branding.TypePNG, branding.TypeWebP, branding.TypeSVG}

// showAPIBranding is GET /api/v1/admin/settings/branding: as stored, not
// this process's copy in memory.
func (h *Handlers) showAPIBranding(c echo.Context) error {
	if err := setETag(c, h.Branding.Tag); err != nil {
		return err
	}
	st, err := h.Branding.Load(c.Request().Context())
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, apiBrandingOf(st))
}

func apiBrandingOf(st branding.Settings) apiBranding {
	out := apiBranding{
		ProductName: st.ProductName, SupportContact: st.SupportContact, FooterText: st.FooterText, DefaultLanguage: st.DefaultLanguage,
		SessionLifetimeHours: int64(st.SessionLifetime / time.Hour), IdleTimeoutMinutes: int64(st.IdleTimeout / time.Minute),
	}
	if u := logoURL(st.Logo); u != "" {
		out.LogoURL = &u
	}
	return out
}

// updateAPIBranding is PATCH /api/v1/admin/settings/branding; the logo
// has its own routes.
func (h *Handlers) updateAPIBranding(c echo.Context) error {
	var body apiBrandingPatch
	if err := decodeJSON(c, &body); err != nil {
		return err
	}
	return h.changeAPIBranding(c, func(change *branding.Change) {
		st := &change.Settings
		for _, f := range []struct{ dst, p *string }{
			{&st.ProductName, body.ProductName}, {&st.SupportContact, body.SupportContact}, {&st.DefaultLanguage, body.DefaultLanguage},
		} {
			if f.p != nil {
				*f.dst = strings.TrimSpace(*f.p)
			}
		}
		if body.FooterText != nil {
			st.FooterText = strings.TrimSpace(strings.ReplaceAll(*body.FooterText, "\r\n", "\n"))
		}
		if body.SessionLifetimeHours != nil {
			st.SessionLifetime = durationOf(*body.SessionLifetimeHours, time.Hour)
		}
		if body.IdleTimeoutMinutes != nil {
			st.IdleTimeout = durationOf(*body.IdleTimeoutMinutes, time.Minute)
		}
	})
}

// durationOf is n units; a number too large to be one reads as -1, which
// the range checks refuse.
func durationOf(n int64, unit time.Duration) time.Duration {
	if n < 0 || n > int64(time.Duration(1<<62)/unit) {
		return -1
	}
	return time.Duration(n) * unit
}

// putAPIBrandingLogo is PUT /api/v1/admin/settings/branding/logo: the
// body is the image (PNG, WebP or SVG), checked and bounded as the back
// office's upload is.
func (h *Handlers) putAPIBrandingLogo(c echo.Context) error {
	mt, _, err := mime.ParseMediaType(c.Request().Header.Get(echo.HeaderContentType))
	if err != nil || !slices.Contains(logoTypes, mt) {
		return echo.NewHTTPError(http.StatusUnsupportedMediaType, "ErrAPILogoMediaType")
	}
	data, err := io.ReadAll(io.LimitReader(c.Request().Body, branding.MaxLogoBytes+1))
	if err != nil {
		var he *echo.HTTPError
		if errors.As(err, &he) {
			return he
		}
		return echo.NewHTTPError(http.StatusBadRequest, "ErrAPILogoUnreadable").SetInternal(err)
	}
	if len(data) > branding.MaxLogoBytes {
		return input.Errors{"logo": branding.ErrLogoTooLarge.Error()}
	}
	return h.changeAPIBranding(c, func(change *branding.Change) { change.NewLogo = data })
}

// deleteAPIBrandingLogo is DELETE /api/v1/admin/settings/branding/logo:
// the product name shows in its place.
func (h *Handlers) deleteAPIBrandingLogo(c echo.Context) error {
	return h.changeAPIBranding(c, func(change *branding.Change) { change.RemoveLogo = true })
}

// changeAPIBranding applies edit to the stored settings (and no logo
// change) and answers with the settings as they are then.
func (h *Handlers) changeAPIBranding(c echo.Context, edit func(*branding.Change)) error {
	ctx := c.Request().Context()
	st, err := h.Branding.Load(ctx)
	if err != nil {
		return err
	}
	change := branding.Change{Settings: st}
	edit(&change)
	if _, err := h.Branding.Apply(ctx, change, actor(c)); err != nil {
		return adminAPIError(err, brandingAPIFields)
	}
	return h.showAPIBranding(c)
}
