package handlers

import (
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/kubebyon/kubebyon/internal/branding"
	"github.com/kubebyon/kubebyon/internal/config"
	"github.com/kubebyon/kubebyon/internal/locale"
	"github.com/kubebyon/kubebyon/views"
)

// brandingLogoPath serves the admins' logo to everyone, without a session
// (isProbeOrStatic): pages link to it with its ETag (logoURL).
const brandingLogoPath = "/branding/logo"

// Caching of the logo: a year for the versioned URL the pages link to
// (a new logo has a new URL), a minute for any other.
const (
	logoCacheVersioned = "public, max-age=31536000, immutable"
	logoCacheOther     = "public, max-age=60"
)

// logoCSP lets a logo opened as a document run and load nothing: an SVG
// may style itself, no more.
const logoCSP = "default-src 'none'; style-src 'unsafe-inline'; sandbox"

// brandingFields are the plain fields of the form.
var brandingFields = []string{
	branding.FieldProductName, branding.FieldSupportContact, branding.FieldFooterText, branding.FieldDefaultLanguage,
	branding.FieldSessionLifetime, branding.FieldIdleTimeout, "logoRemove",
}

// logoURL is the address of the logo whose ETag is etag, "" for none.
func logoURL(etag string) string {
	if etag == "" {
		return ""
	}
	return brandingLogoPath + "?v=" + etag
}

// brandView is how the layout shows st.
func brandView(st branding.Settings) *views.Brand {
	return &views.Brand{
		ProductName: st.ProductName, LogoURL: logoURL(st.Logo),
		SupportEmail: st.SupportEmail(), SupportURL: st.SupportURL(), FooterText: st.FooterText,
	}
}

func (h *Handlers) showAdminBrandingPage(c echo.Context) error {
	h.viewAsAPICall(c, "adminGetBranding", nil)
	return h.renderAdminBranding(c, http.StatusOK, nil)
}

// renderAdminBranding shows the page with f, the form as submitted (nil:
// the stored settings, read now rather than from memory).
func (h *Handlers) renderAdminBranding(c echo.Context, status int, f *views.Form) error {
	st, err := h.Branding.Load(c.Request().Context())
	if err != nil {
		return err
	}
	if f == nil {
		stored := brandingForm(st)
		f = &stored
	}
	return render(c, status, views.AdminBrandingPage(views.AdminBranding{
		Form: *f, LogoURL: logoURL(st.Logo), Languages: branding.Languages,
		BaseURL: h.BaseURL, Loopback: config.LoopbackBaseURL(h.BaseURL),
	}))
}

// brandingForm shows stored settings in the form: the session lifetime in
// hours, the idle timeout in minutes.
func brandingForm(st branding.Settings) views.Form {
	f := views.NewForm()
	f.Values[branding.FieldProductName] = st.ProductName
	f.Values[branding.FieldSupportContact] = st.SupportContact
	f.Values[branding.FieldFooterText] = st.FooterText
	f.Values[branding.FieldDefaultLanguage] = st.DefaultLanguage
	f.Values[branding.FieldSessionLifetime] = strconv.FormatInt(int64(st.SessionLifetime/time.Hour), 10)
	f.Values[branding.FieldIdleTimeout] = strconv.FormatInt(int64(st.IdleTimeout/time.Minute), 10)
	return f
}

// brandingChangeFrom reads the form. A number that is not one reads as
// -1, which the range checks refuse. A logo too large to read is a field
// error in the form.
func brandingChangeFrom(c echo.Context) (views.Form, branding.Change, error) {
	f := formFrom(c, brandingFields...)
	for _, name := range []string{branding.FieldProductName, branding.FieldSupportContact, branding.FieldSessionLifetime, branding.FieldIdleTimeout} {
		f.Values[name] = strings.TrimSpace(f.Values[name])
	}
	f.Values[branding.FieldFooterText] = strings.TrimSpace(strings.ReplaceAll(f.Values[branding.FieldFooterText], "\r\n", "\n"))
	number := func(name string, unit time.Duration) time.Duration {
		n, err := strconv.ParseInt(f.Value(name), 10, 32)
		if err != nil {
			n = -1
		}
		return time.Duration(n) * unit
	}
	change := branding.Change{
		Settings: branding.Settings{
			ProductName:     f.Value(branding.FieldProductName),
			SupportContact:  f.Value(branding.FieldSupportContact),
			FooterText:      f.Value(branding.FieldFooterText),
			DefaultLanguage: f.Value(branding.FieldDefaultLanguage),
			SessionLifetime: number(branding.FieldSessionLifetime, time.Hour),
			IdleTimeout:     number(branding.FieldIdleTimeout, time.Minute),
		},
		RemoveLogo: f.Value("logoRemove") == "on",
	}
	// No file is no change of the logo.
	if fh, err := c.FormFile(branding.FieldLogo); err == nil && fh.Size > 0 {
		data, msgID, err := readUpload(c, branding.FieldLogo, branding.MaxLogoBytes)
		if err != nil {
			return f, change, err
		}
		if msgID != "" {
			f.Errors[branding.FieldLogo] = branding.ErrLogoTooLarge.Error()
		}
		change.NewLogo = data
	}
	return f, change, nil
}

// saveAdminBranding is POST /admin/settings/branding.
func (h *Handlers) saveAdminBranding(c echo.Context) error {
	f, change, err := brandingChangeFrom(c)
	if err != nil {
		return err
	}
	if len(f.Errors) > 0 {
		f.Error = "ErrAdminBrandingNotSaved"
		return h.renderAdminBranding(c, http.StatusUnprocessableEntity, &f)
	}
	changed, err := h.Branding.Apply(c.Request().Context(), change, actor(c))
	if err != nil {
		return adminSaveError(c, err, &f, "ErrAdminBrandingNotSaved", nil, func(status int) error {
			return h.renderAdminBranding(c, status, &f)
		})
	}
	if len(changed) == 0 {
		h.flash(c, "FlashAdminBrandingUnchanged")
	} else {
		h.flash(c, "FlashAdminBrandingSaved")
	}
	return redirect(c, "/admin/settings/branding")
}

// brand gives the request the branding (from memory, read again once per
// TTL), and the language: the browser's, else the admins' default. One
// new request context for both.
func (h *Handlers) brand(c echo.Context) {
	ctx := c.Request().Context()
	st := h.Branding.Current(ctx)
	l := h.Catalog.ForDefault(st.DefaultLanguage, c.Request().Header.Get("Accept-Language"))
	c.SetRequest(c.Request().WithContext(views.WithBrand(locale.With(ctx, l), brandView(st))))
}

// showBrandingLogo serves the admins' logo, to anyone. An SVG is served
// as an image under a policy that runs and loads nothing, whatever it
// holds (its contents were checked at upload too).
func (h *Handlers) showBrandingLogo(c echo.Context) error {
	logo, ok, err := h.Branding.LogoFile(c.Request().Context())
	if err != nil {
		return err
	}
	if !ok {
		return echo.ErrNotFound
	}
	hdr := c.Response().Header()
	hdr.Set("ETag", `"`+logo.ETag+`"`)
	hdr.Set("Cache-Control", logoCacheOther)
	if c.QueryParam("v") == logo.ETag {
		hdr.Set("Cache-Control", logoCacheVersioned)
	}
	hdr.Set("Content-Security-Policy", logoCSP)
	hdr.Set("X-Content-Type-Options", "nosniff")
	if etagMatches(c.Request().Header.Get("If-None-Match"), logo.ETag) {
		return c.NoContent(http.StatusNotModified)
	}
	return c.Blob(http.StatusOK, logo.ContentType, logo.Image)
}
