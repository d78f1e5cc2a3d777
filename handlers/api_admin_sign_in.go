package handlers

import (
	"context"
	"errors"
	"net/http"
	"slices"
	"strings"

	"github.com/labstack/echo/v4"

	"github.com/kubebyon/kubebyon/internal/input"
	"github.com/kubebyon/kubebyon/internal/signinproviders"
)

// apiSignInProvider is one sign-in provider: Source is where the one in
// effect comes from (settings, env or off), EnvSet whether the
// environment sets it too; the client secret is only said to be set, or
// stored but unreadable (sealed with another platform key). Label,
// Issuer and Scopes are the OpenID Connect provider's.
type apiSignInProvider struct {
	Source                 string `json:"source"`
	EnvSet                 bool   `json:"env_set"`
	CallbackURL            string `json:"callback_url"`
	ClientID               string `json:"client_id"`
	ClientSecretSet        bool   `json:"client_secret_set"`
	ClientSecretUnreadable bool   `json:"client_secret_unreadable"`
	Label                  string `json:"label"`
	Issuer                 string `json:"issuer"`
	Scopes                 string `json:"scopes"`
}

type apiSignIn struct {
	GitHub apiSignInProvider `json:"github"`
	Google apiSignInProvider `json:"google"`
	OIDC   apiSignInProvider `json:"oidc"`
}

// apiOAuthPatch changes GitHub or Google; ClientSecret is a secret
// (secretChange).
type apiOAuthPatch struct {
	ClientID     *string `json:"client_id"`
	ClientSecret *string `json:"client_secret"`
}

type apiOIDCPatch struct {
	ClientID     *string `json:"client_id"`
	ClientSecret *string `json:"client_secret"`
	Label        *string `json:"label"`
	Issuer       *string `json:"issuer"`
	Scopes       *string `json:"scopes"`
}

// apiSignInPatch changes the providers it names; the others stay as they
// are. A provider given with every field empty is switched off, its
// secret removed (signinproviders.ProviderChange).
type apiSignInPatch struct {
	GitHub *apiOAuthPatch `json:"github"`
	Google *apiOAuthPatch `json:"google"`
	OIDC   *apiOIDCPatch  `json:"oidc"`
}

// signInAPIFields are the providers' field names (signinproviders.FieldName)
// as the API names them: "oidc-clientId" is "oidc.client_id".
var signInAPIFields = func() map[string]string {
	m := map[string]string{}
	for _, name := range signinproviders.Names {
		for field, api := range map[string]string{
			signinproviders.FieldClientID: "client_id", signinproviders.FieldClientSecret: "client_secret",
			signinproviders.FieldLabel: "label", signinproviders.FieldIssuer: "issuer", signinproviders.FieldScopes: "scopes",
		} {
			m[signinproviders.FieldName(name, field)] = name + "." + api
		}
	}
	return m
}()

// showAPISignIn is GET /api/v1/admin/settings/sign-in.
func (h *Handlers) showAPISignIn(c echo.Context) error {
	if err := setETag(c, h.SignIn.Tag); err != nil {
		return err
	}
	ctx := c.Request().Context()
	l, err := h.SignIn.Load(ctx)
	if err != nil {
		return err
	}
	effective, err := h.signInProviders(ctx)
	if err != nil {
		return err
	}
	provider := func(name string) apiSignInProvider {
		p := l.Settings[name]
		out := apiSignInProvider{
			CallbackURL: h.BaseURL + "/auth/" + name + "/callback",
			ClientID:    p.ClientID, ClientSecretSet: p.ClientSecret != "", ClientSecretUnreadable: slices.Contains(l.Unreadable, name),
			Label: p.Label, Issuer: p.Issuer, Scopes: p.Scopes,
		}
		out.Source, out.EnvSet = h.signInSource(name, effective)
		return out
	}
	return c.JSON(http.StatusOK, apiSignIn{
		GitHub: provider(signinproviders.GitHub), Google: provider(signinproviders.Google), OIDC: provider(signinproviders.OIDC),
	})
}

// updateAPISignIn is PATCH /api/v1/admin/settings/sign-in.
func (h *Handlers) updateAPISignIn(c echo.Context) error {
	var body apiSignInPatch
	if err := decodeJSON(c, &body); err != nil {
		return err
	}
	ctx := c.Request().Context()
	l, err := h.SignIn.Load(ctx)
	if err != nil {
		return err
	}
	change := signinproviders.Change{Providers: map[string]signinproviders.ProviderChange{}}
	add := func(name string, b apiOAuthPatch, label, issuer, scopes *string) {
		p := l.Settings[name]
		for _, f := range []struct{ dst, v *string }{
			{&p.ClientID, b.ClientID}, {&p.Label, label}, {&p.Issuer, issuer}, {&p.Scopes, scopes},
		} {
			if f.v != nil {
				*f.dst = strings.TrimSpace(*f.v)
			}
		}
		p.Scopes = strings.Join(strings.Fields(p.Scopes), " ")
		secret := secretChange(b.ClientSecret)
		secret.Value = strings.TrimSpace(secret.Value)
		change.Providers[name] = signinproviders.ProviderChange{Provider: p, Secret: secret}
	}
	if body.GitHub != nil {
		add(signinproviders.GitHub, *body.GitHub, nil, nil, nil)
	}
	if body.Google != nil {
		add(signinproviders.Google, *body.Google, nil, nil, nil)
	}
	if o := body.OIDC; o != nil {
		add(signinproviders.OIDC, apiOAuthPatch{ClientID: o.ClientID, ClientSecret: o.ClientSecret}, o.Label, o.Issuer, o.Scopes)
	}
	if _, err := h.SignIn.Apply(ctx, change, actor(c)); err != nil {
		return adminAPIError(err, signInAPIFields)
	}
	return h.showAPISignIn(c)
}

// apiDiscoveryTest is what the OpenID Connect issuer's discovery document
// says, or why it could not be read (Error).
type apiDiscoveryTest struct {
	Issuer                string `json:"issuer"`
	OK                    bool   `json:"ok"`
	AuthorizationEndpoint string `json:"authorization_endpoint,omitempty"`
	TokenEndpoint         string `json:"token_endpoint,omitempty"`
	Error                 string `json:"error,omitempty"`
}

// testAPISignIn is POST /api/v1/admin/settings/sign-in/test: it reads the
// discovery document of the issuer given (the stored one when none is),
// and saves nothing. A test that ran is 200, whatever it found; an issuer
// that is not a URL is 422.
func (h *Handlers) testAPISignIn(c echo.Context) error {
	var body struct {
		Issuer *string `json:"issuer"`
	}
	if err := decodeOptionalJSON(c, &body); err != nil {
		return err
	}
	ctx := c.Request().Context()
	l, err := h.SignIn.Load(ctx)
	if err != nil {
		return err
	}
	issuer := l.Settings[signinproviders.OIDC].Issuer
	if body.Issuer != nil {
		issuer = strings.TrimSpace(*body.Issuer)
	}
	p := signinproviders.Provider{Issuer: issuer, ClientID: "-", ClientSecret: "-"}
	var invalid input.Errors
	if err := p.Validate(signinproviders.OIDC); errors.As(err, &invalid) && invalid[signinproviders.FieldIssuer] != "" {
		return input.Errors{"issuer": invalid[signinproviders.FieldIssuer]}
	}
	dctx, cancel := context.WithTimeout(ctx, discoveryTimeout)
	cfg, err := discoverOIDC(dctx, providerClient(), p.DiscoveryURL())
	cancel()
	out := apiDiscoveryTest{Issuer: issuer, OK: err == nil}
	if err != nil {
		out.Error = err.Error()
	} else {
		out.AuthorizationEndpoint, out.TokenEndpoint = cfg.AuthEndpoint, cfg.TokenEndpoint
	}
	return c.JSON(http.StatusOK, out)
}
