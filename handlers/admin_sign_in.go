package handlers

import (
	"context"
	"errors"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/kubebyon/kubebyon/internal/input"
	"github.com/kubebyon/kubebyon/internal/signinproviders"
	"github.com/kubebyon/kubebyon/views"
)

const adminSignInPath = "/admin/settings/sign-in"

// signInFields are a provider's plain form fields (the client secret is
// never shown back).
func signInFields(name string) []string {
	fields := []string{signinproviders.FieldClientID, signinproviders.FieldClientSecret + "Clear"}
	if name == signinproviders.OIDC {
		fields = append(fields, signinproviders.FieldLabel, signinproviders.FieldIssuer, signinproviders.FieldScopes)
	}
	return fields
}

func (h *Handlers) showAdminSignInPage(c echo.Context) error {
	h.viewAsAPICall(c, "adminGetSignIn", nil)
	return h.renderAdminSignIn(c, http.StatusOK, nil, nil)
}

// renderAdminSignIn shows the page with f, the form as submitted (nil:
// the stored settings), and test, the outcome of a discovery test (nil:
// none was made).
func (h *Handlers) renderAdminSignIn(c echo.Context, status int, f *views.Form, test *views.AdminSignInTest) error {
	return h.renderAdminSignInPage(c, status, f, test, views.NewForm())
}

// renderAdminSignInPage is renderAdminSignIn with tf, the two-factor
// requirement's form as submitted (admin_two_factor.go).
func (h *Handlers) renderAdminSignInPage(c echo.Context, status int, f *views.Form, test *views.AdminSignInTest, tf views.Form) error {
	ctx := c.Request().Context()
	l, err := h.SignIn.Load(ctx)
	if err != nil {
		return err
	}
	if f == nil {
		stored := views.NewForm()
		for name, p := range l.Settings {
			stored.Values[signinproviders.FieldName(name, signinproviders.FieldClientID)] = p.ClientID
			stored.Values[signinproviders.FieldName(name, signinproviders.FieldLabel)] = p.Label
			stored.Values[signinproviders.FieldName(name, signinproviders.FieldIssuer)] = p.Issuer
			stored.Values[signinproviders.FieldName(name, signinproviders.FieldScopes)] = p.Scopes
		}
		f = &stored
	}
	effective, err := h.signInProviders(ctx)
	if err != nil {
		return err
	}
	m := views.AdminSignIn{Form: *f, Test: test}
	for _, name := range signinproviders.Names {
		p := views.AdminSignInProvider{
			Name: name, CallbackURL: h.BaseURL + "/auth/" + name + "/callback",
			SecretStored: l.Settings[name].ClientSecret != "", Unreadable: slices.Contains(l.Unreadable, name),
		}
		switch name {
		case signinproviders.GitHub:
			p.Label = "GitHub"
		case signinproviders.Google:
			p.Label = "Google"
		default:
			p.Label = "OpenID Connect"
		}
		p.Source, p.EnvSet = h.signInSource(name, effective)
		m.Providers = append(m.Providers, p)
	}
	u, _ := currentUser(c)
	if m.Confirm, err = h.adminConfirm(c, u, adminSignInPath); err != nil {
		return err
	}
	policy, err := h.Accounts.LoadTwoFactorPolicy(ctx)
	if err != nil {
		return err
	}
	m.TwoFactor = views.AdminTwoFactor{Form: tf, Policy: string(policy), Confirm: m.Confirm}
	return render(c, status, views.AdminSignInPage(m))
}

// signInSource is where the provider name in effect comes from
// (sourceSettings, sourceEnv or sourceOff), of effective
// (signInProviders), and whether the environment sets it too.
func (h *Handlers) signInSource(name string, effective []effectiveProvider) (source string, envSet bool) {
	source = sourceOff
	for _, e := range effective {
		if e.Name == name {
			source = e.Source
		}
	}
	for _, e := range h.OAuth {
		if e.Name == name {
			envSet = true
		}
	}
	return source, envSet
}

// signInChangeFrom reads the form.
func signInChangeFrom(c echo.Context) (views.Form, signinproviders.Change) {
	f := views.NewForm()
	change := signinproviders.Change{Providers: map[string]signinproviders.ProviderChange{}, Confirm: c.FormValue("password")}
	for _, name := range signinproviders.Names {
		field := func(n string) string { return signinproviders.FieldName(name, n) }
		for _, n := range signInFields(name) {
			f.Values[field(n)] = strings.TrimSpace(c.FormValue(field(n)))
		}
		change.Providers[name] = signinproviders.ProviderChange{
			Provider: signinproviders.Provider{
				Label: f.Value(field(signinproviders.FieldLabel)), Issuer: f.Value(field(signinproviders.FieldIssuer)),
				ClientID: f.Value(field(signinproviders.FieldClientID)), Scopes: strings.Join(strings.Fields(f.Value(field(signinproviders.FieldScopes))), " "),
			},
			Secret: input.SecretChange{
				Value: strings.TrimSpace(c.FormValue(field(signinproviders.FieldClientSecret))),
				Clear: f.Value(field(signinproviders.FieldClientSecret+"Clear")) == "on",
			},
		}
	}
	return f, change
}

// saveAdminSignIn is POST /admin/settings/sign-in: every change needs the
// admin's password (or a fresh sign-in with a provider); an empty client
// secret keeps the stored one.
func (h *Handlers) saveAdminSignIn(c echo.Context) error {
	f, change := signInChangeFrom(c)
	changed, err := h.SignIn.Apply(c.Request().Context(), change, actor(c))
	if err != nil {
		return adminSaveError(c, err, &f, "ErrAdminSignInNotSaved", signinproviders.ErrConfirmRequired, func(status int) error {
			return h.renderAdminSignIn(c, status, &f, nil)
		})
	}
	if len(changed) == 0 {
		h.flash(c, "FlashAdminSignInUnchanged")
	} else {
		h.flash(c, "FlashAdminSignInSaved")
	}
	return redirect(c, adminSignInPath)
}

// discoveryTimeout bounds the discovery test: the admin waits for it.
const discoveryTimeout = 10 * time.Second

// testAdminSignIn is POST /admin/settings/sign-in/test: it reads the
// discovery document of the OpenID Connect issuer typed in the form (saved
// or not) and shows what it found; nothing is saved. An unreachable or
// wrong provider is a warning (422), since it may be reachable later or
// from elsewhere; a malformed issuer URL is an error at the field.
func (h *Handlers) testAdminSignIn(c echo.Context) error {
	f, _ := signInChangeFrom(c)
	field := signinproviders.FieldName(signinproviders.OIDC, signinproviders.FieldIssuer)
	issuer := f.Value(field)
	p := signinproviders.Provider{Issuer: issuer, ClientID: "-", ClientSecret: "-"}
	var invalid input.Errors
	if err := p.Validate(signinproviders.OIDC); errors.As(err, &invalid) && invalid[signinproviders.FieldIssuer] != "" {
		f.Errors[field] = invalid[signinproviders.FieldIssuer]
		return h.renderAdminSignIn(c, http.StatusUnprocessableEntity, &f, nil)
	}
	ctx, cancel := context.WithTimeout(c.Request().Context(), discoveryTimeout)
	cfg, err := discoverOIDC(ctx, providerClient(), p.DiscoveryURL())
	cancel()
	test := &views.AdminSignInTest{Issuer: issuer}
	if err != nil {
		test.Error = err.Error()
		return h.renderAdminSignIn(c, http.StatusUnprocessableEntity, &f, test)
	}
	test.AuthEndpoint, test.TokenEndpoint = cfg.AuthEndpoint, cfg.TokenEndpoint
	return h.renderAdminSignIn(c, http.StatusOK, &f, test)
}
