package handlers

import (
	"errors"
	"net/http"
	"strconv"
	"strings"

	"github.com/labstack/echo/v4"

	"github.com/kubebyon/kubebyon/internal/dnsrecords"
	"github.com/kubebyon/kubebyon/internal/input"
	"github.com/kubebyon/kubebyon/views"
)

// dnsFields are the DNS form's fields (keySecret and password are never
// shown back).
var dnsFields = []string{"mode", "addresses", "resolver", "server", "zone", "keyName", "keyAlgorithm", "ttl", "namespace"}

// dnsForm is the stored settings as the form shows them.
func dnsForm(s dnsrecords.Settings) views.Form {
	f := views.NewForm()
	f.Values = map[string]string{
		"mode": s.Mode, "addresses": strings.Join(s.Addresses, "\n"), "resolver": s.Resolver,
		"server": s.Server, "zone": s.Zone, "keyName": s.KeyName, "keyAlgorithm": s.KeyAlgorithm,
		"ttl": strconv.Itoa(s.TTL), "namespace": s.Namespace,
	}
	if s.KeySecret != "" {
		f.Values["keySecretSet"] = "yes"
	}
	return f
}

// dnsChangeFrom reads the submitted DNS form.
func dnsChangeFrom(c echo.Context) (views.Form, dnsrecords.Change) {
	f := formFrom(c, dnsFields...)
	s := dnsrecords.Settings{
		Mode: f.Value("mode"), Resolver: strings.TrimSpace(f.Value("resolver")),
		Server: strings.TrimSpace(f.Value("server")), Zone: strings.TrimSpace(f.Value("zone")),
		KeyName: strings.TrimSpace(f.Value("keyName")), KeyAlgorithm: f.Value("keyAlgorithm"),
		Namespace: strings.TrimSpace(f.Value("namespace")),
	}
	s.Addresses = strings.FieldsFunc(f.Value("addresses"), func(r rune) bool {
		return r == ',' || r == ' ' || r == '\n' || r == '\r' || r == '\t'
	})
	ttl, err := strconv.Atoi(strings.TrimSpace(f.Value("ttl")))
	if err != nil {
		f.Errors["ttl"] = "ErrDNSTTL"
	}
	s.TTL = ttl
	return f, dnsrecords.Change{Settings: s, KeySecret: c.FormValue("keySecret"), Password: c.FormValue("password")}
}

// saveAdminDNS is POST /admin/edge/dns.
func (h *Handlers) saveAdminDNS(c echo.Context) error {
	f, change := dnsChangeFrom(c)
	if len(f.Errors) > 0 {
		return h.renderAdminEdgeDNSError(c, http.StatusUnprocessableEntity, f)
	}
	changed, err := h.DNS.Apply(c.Request().Context(), change, actor(c))
	if err != nil {
		return adminSaveError(c, err, &f, "ErrAdminSettingsNotSaved", dnsrecords.ErrPasswordRequired, func(status int) error {
			return h.renderAdminEdgeDNSError(c, status, f)
		})
	}
	if len(changed) == 0 {
		h.flash(c, "FlashAdminSettingsUnchanged")
	} else {
		h.flash(c, "FlashDNSSaved")
	}
	return redirect(c, "/admin/edge#dns")
}

func (h *Handlers) renderAdminEdgeDNSError(c echo.Context, status int, f views.Form) error {
	if f.Error == "" {
		f.Error = "ErrAdminSettingsNotSaved"
	}
	return h.renderAdminEdge(c, status, adminEdgeForms{dns: &f})
}

// checkAdminDNS is POST /admin/edge/dns/check: it checks the stored
// settings (what the records are written with). htmx gets the result
// alone; without JavaScript the page comes back with it.
func (h *Handlers) checkAdminDNS(c echo.Context) error {
	res, err := h.DNS.Check(c.Request().Context(), actor(c))
	var invalid input.Errors
	check := views.DNSCheck{OK: res.OK, Name: res.Name, Found: res.Found, Detail: res.Err}
	switch {
	case errors.As(err, &invalid):
		check.Error = invalid["mode"]
	case err != nil:
		return err
	}
	if wantsFragment(c) {
		return render(c, http.StatusOK, views.AdminDNSCheckResult(check))
	}
	return h.renderAdminEdge(c, http.StatusOK, adminEdgeForms{check: &check})
}
