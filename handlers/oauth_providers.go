package handlers

import (
	"cmp"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/markbates/goth"
	"github.com/markbates/goth/providers/github"
	"github.com/markbates/goth/providers/openidConnect"

	"github.com/kubebyon/kubebyon/internal/accounts"
	"github.com/kubebyon/kubebyon/internal/secrets"
)

// OAuthProvider is a configured way to sign in with another site; build it
// with GitHubSignIn or GoogleSignIn. The goth providers are driven directly
// (not through gothic, which keeps its state in globals and gorilla
// sessions); the flow's state lives in our session.
type OAuthProvider struct {
	Name  string // in URLs and in oauth_identities.provider
	Label string // on the sign-in button
	// openID tells an OpenID Connect provider, which can be asked to have
	// the person sign in again (prompt=login).
	openID bool
	// load returns the goth provider, built on first use when that needs
	// the network.
	load func(context.Context) (goth.Provider, error)
	// identity reads who signed in from an authorized session.
	identity func(context.Context, goth.Provider, goth.Session) (accounts.Identity, error)
}

// OAuthApp is the platform's application registered with a provider.
type OAuthApp struct {
	ClientID     string
	ClientSecret string
	// BaseURL is the platform's public URL; the provider sends people back
	// to <BaseURL>/auth/<provider>/callback.
	BaseURL string
}

func (a OAuthApp) callbackURL(provider string) string {
	return a.BaseURL + "/auth/" + provider + "/callback"
}

// providerTimeout bounds each call to a provider: goth's calls take no
// context, so their HTTP client carries the limit.
const providerTimeout = 15 * time.Second

func providerClient() *http.Client { return &http.Client{Timeout: providerTimeout} }

// GitHubEndpoints are where GitHub's OAuth and API live.
type GitHubEndpoints struct {
	Auth, Token, Profile, Emails string
}

// GitHubCom are github.com's endpoints.
func GitHubCom() GitHubEndpoints {
	return GitHubEndpoints{Auth: github.AuthURL, Token: github.TokenURL, Profile: github.ProfileURL, Emails: github.EmailURL}
}

// GitHubSignIn is sign-in with GitHub at the endpoints given.
func GitHubSignIn(app OAuthApp, e GitHubEndpoints) OAuthProvider {
	client := providerClient()
	p := github.NewCustomisedURL(app.ClientID, app.ClientSecret, app.callbackURL("github"),
		e.Auth, e.Token, e.Profile, e.Emails, "read:user", "user:email")
	p.HTTPClient = client
	return OAuthProvider{
		Name:  "github",
		Label: "GitHub",
		load:  func(context.Context) (goth.Provider, error) { return p, nil },
		identity: func(ctx context.Context, gp goth.Provider, sess goth.Session) (accounts.Identity, error) {
			u, err := gp.FetchUser(sess)
			// goth gives up when GitHub lists no verified primary email, but
			// the person may have linked this GitHub account already.
			if err != nil && !errors.Is(err, github.ErrNoVerifiedGitHubPrimaryEmail) {
				return accounts.Identity{}, fmt.Errorf("fetch GitHub user: %w", err)
			}
			if u.UserID == "" || u.UserID == "0" {
				return accounts.Identity{}, errors.New("fetch GitHub user: the profile has no id")
			}
			email, err := githubVerifiedEmail(ctx, client, e.Emails, u.AccessToken)
			if err != nil {
				return accounts.Identity{}, err
			}
			return accounts.Identity{Provider: "github", Subject: u.UserID, Email: email, Name: cmp.Or(u.Name, u.NickName)}, nil
		},
	}
}

// githubVerifiedEmail is the person's primary email when GitHub verified it,
// else "". goth's user carries an email without saying whether GitHub
// verified it (the public profile email wins over the emails list), so the
// list is read here.
func githubVerifiedEmail(ctx context.Context, client *http.Client, emailsURL, token string) (string, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, emailsURL, nil)
	if err != nil {
		return "", fmt.Errorf("GitHub emails request: %w", err)
	}
	req.Header.Set("Authorization", "Bearer "+token)
	req.Header.Set("Accept", "application/vnd.github+json")
	resp, err := client.Do(req)
	if err != nil {
		return "", fmt.Errorf("fetch GitHub emails: %w", err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return "", fmt.Errorf("fetch GitHub emails: status %s", resp.Status)
	}
	var emails []struct {
		Email    string `json:"email"`
		Primary  bool   `json:"primary"`
		Verified bool   `json:"verified"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&emails); err != nil {
		return "", fmt.Errorf("decode GitHub emails: %w", err)
	}
	for _, e := range emails {
		if e.Primary && e.Verified {
			return e.Email, nil
		}
	}
	return "", nil
}

// GoogleDiscoveryURL is Google's OpenID Connect discovery document.
const GoogleDiscoveryURL = "https://accounts.google.com/.well-known/openid-configuration"

// GoogleSignIn is sign-in with Google through goth's OpenID Connect
// provider, whose endpoints come from a discovery document. goth's google
// provider cannot be pointed anywhere but Google (its endpoints are fixed),
// and it does not say whether Google verified the email; OpenID Connect
// gives the email_verified claim and lets tests serve their own provider.
func GoogleSignIn(app OAuthApp, discoveryURL string) OAuthProvider {
	return openIDSignIn("google", "Google", app, discoveryURL, []string{"openid", "email", "profile"})
}

// openIDSignIn is sign-in with an OpenID Connect provider named name (in
// URLs and identities) and label (for people), found at discoveryURL.
//
// The document is fetched on first use rather than at start, so that the
// platform starts while the provider is unreachable, and with a timeout,
// which goth's own discovery (openidConnect.New) lacks.
func openIDSignIn(name, label string, app OAuthApp, discoveryURL string, scopes []string) OAuthProvider {
	client := providerClient()
	var mu sync.Mutex
	var provider *openidConnect.Provider
	return OAuthProvider{
		Name:   name,
		Label:  label,
		openID: true,
		load: func(ctx context.Context) (goth.Provider, error) {
			mu.Lock()
			defer mu.Unlock()
			if provider != nil {
				return provider, nil
			}
			cfg, err := discoverOIDC(ctx, client, discoveryURL)
			if err != nil {
				return nil, err
			}
			p, err := openidConnect.NewCustomisedURL(app.ClientID, app.ClientSecret, app.callbackURL(name),
				cfg.AuthEndpoint, cfg.TokenEndpoint, cfg.Issuer, cfg.UserInfoEndpoint, "", scopes...)
			if err != nil {
				return nil, fmt.Errorf("%s provider: %w", name, err)
			}
			p.SetName(name)
			p.HTTPClient = client
			provider = p
			return p, nil
		},
		identity: func(_ context.Context, gp goth.Provider, sess goth.Session) (accounts.Identity, error) {
			// goth checks the ID token's audience, issuer and expiry, not its
			// signature: it came straight from the token endpoint over TLS,
			// which OpenID Connect Core 3.1.3.7 accepts instead.
			u, err := gp.FetchUser(sess)
			if err != nil {
				return accounts.Identity{}, fmt.Errorf("fetch %s user: %w", name, err)
			}
			if u.UserID == "" {
				return accounts.Identity{}, fmt.Errorf("fetch %s user: no subject", name)
			}
			id := accounts.Identity{Provider: name, Subject: u.UserID, Name: cmp.Or(u.Name, strings.TrimSpace(u.FirstName+" "+u.LastName))}
			if claimTrue(u.RawData["email_verified"]) {
				id.Email = u.Email
			}
			return id, nil
		},
	}
}

// discoverOIDC reads a provider's discovery document, checking that it
// names the issuer it was found under (OpenID Connect Discovery 4.3).
func discoverOIDC(ctx context.Context, client *http.Client, discoveryURL string) (openidConnect.OpenIDConfig, error) {
	var cfg openidConnect.OpenIDConfig
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, discoveryURL, nil)
	if err != nil {
		return cfg, fmt.Errorf("OpenID discovery request: %w", err)
	}
	resp, err := client.Do(req)
	if err != nil {
		return cfg, fmt.Errorf("fetch OpenID discovery %s: %w", discoveryURL, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return cfg, fmt.Errorf("fetch OpenID discovery %s: status %s", discoveryURL, resp.Status)
	}
	if err := json.NewDecoder(resp.Body).Decode(&cfg); err != nil {
		return cfg, fmt.Errorf("decode OpenID discovery %s: %w", discoveryURL, err)
	}
	if strings.TrimSuffix(cfg.Issuer, "/")+"/.well-known/openid-configuration" != discoveryURL {
		return cfg, fmt.Errorf("OpenID discovery %s names issuer %q", discoveryURL, cfg.Issuer)
	}
	if cfg.AuthEndpoint == "" || cfg.TokenEndpoint == "" {
		return cfg, fmt.Errorf("OpenID discovery %s lacks the authorization or token endpoint", discoveryURL)
	}
	return cfg, nil
}

// claimTrue reads a boolean claim; some providers send "true" as a string.
func claimTrue(v any) bool {
	switch b := v.(type) {
	case bool:
		return b
	case string:
		return b == "true"
	}
	return false
}

// authorize completes the provider's side of a sign-in: it trades the
// callback's code for a token and reads who signed in. An OpenID Connect
// provider's ID token must carry nonce.
func (p OAuthProvider) authorize(ctx context.Context, marshalled string, params url.Values, nonce string) (accounts.Identity, error) {
	gp, err := p.load(ctx)
	if err != nil {
		return accounts.Identity{}, err
	}
	sess, err := gp.UnmarshalSession(marshalled)
	if err != nil {
		return accounts.Identity{}, fmt.Errorf("read %s session: %w", p.Name, err)
	}
	if _, err := sess.Authorize(gp, params); err != nil {
		return accounts.Identity{}, fmt.Errorf("%s token exchange: %w", p.Name, err)
	}
	if p.openID {
		if err := checkNonce(sess, nonce); err != nil {
			return accounts.Identity{}, fmt.Errorf("%s ID token: %w", p.Name, err)
		}
	}
	return p.identity(ctx, gp, sess)
}

// checkNonce tells whether the ID token of an authorized OpenID Connect
// session carries nonce. goth checks the token's audience, issuer and
// expiry but not its nonce.
func checkNonce(sess goth.Session, nonce string) error {
	s, ok := sess.(*openidConnect.Session)
	if !ok {
		return fmt.Errorf("session is a %T, not OpenID Connect's", sess)
	}
	parts := strings.Split(s.IDToken, ".")
	if len(parts) != 3 {
		return errors.New("no ID token")
	}
	payload, err := base64.RawURLEncoding.DecodeString(parts[1])
	if err != nil {
		return fmt.Errorf("decode: %w", err)
	}
	var claims struct {
		Nonce string `json:"nonce"`
	}
	if err := json.Unmarshal(payload, &claims); err != nil {
		return fmt.Errorf("decode: %w", err)
	}
	if nonce == "" || !secrets.Equal(claims.Nonce, nonce) {
		return errors.New("the nonce is not the one this sign-in sent")
	}
	return nil
}
