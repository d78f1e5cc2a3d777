package handlers

import (
	"context"
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"sync"

	"github.com/kubebyon/kubebyon/internal/signinproviders"
)

// Provider sources, as the admin page shows them.
const (
	sourceSettings = "settings" // the admin settings
	sourceEnv      = "env"      // the environment (Deps.OAuth)
	sourceOff      = "off"
)

// builtProviders keeps the providers built from the admin settings, one per
// name with the settings it was built from, so that an OpenID Connect
// provider's discovery is fetched once per change of its settings rather
// than at every sign-in.
type builtProviders struct {
	mu     sync.Mutex
	byName map[string]builtProvider
}

type builtProvider struct {
	key      [sha256.Size]byte
	provider OAuthProvider
}

// get returns the provider name built from p, building it when its
// settings changed.
func (b *builtProviders) get(name string, p signinproviders.Provider, build func() OAuthProvider) (OAuthProvider, error) {
	raw, err := json.Marshal(struct {
		P      signinproviders.Provider
		Secret string
	}{p, p.ClientSecret})
	if err != nil {
		return OAuthProvider{}, fmt.Errorf("encode %s settings: %w", name, err)
	}
	key := sha256.Sum256(raw)
	b.mu.Lock()
	defer b.mu.Unlock()
	if got, ok := b.byName[name]; ok && got.key == key {
		return got.provider, nil
	}
	if b.byName == nil {
		b.byName = map[string]builtProvider{}
	}
	built := build()
	b.byName[name] = builtProvider{key: key, provider: built}
	return built, nil
}

// effectiveProvider is a provider and where its settings come from.
type effectiveProvider struct {
	OAuthProvider
	Source string
}

// signInProviders are the providers people can sign in with now, in
// button order: for each, the admin settings when they name a client, else
// the environment's. They are read at each request, so that a change in
// the admin area takes effect at once in every process.
func (h *Handlers) signInProviders(ctx context.Context) ([]effectiveProvider, error) {
	var stored signinproviders.Settings
	if h.SignIn != nil {
		l, err := h.SignIn.Load(ctx)
		if err != nil {
			return nil, err
		}
		stored = l.Settings
	}
	var out []effectiveProvider
	for _, name := range signinproviders.Names {
		if p, ok := stored[name]; ok && p.Set() {
			built, err := h.builtProviders.get(name, p, func() OAuthProvider { return h.providerFromSettings(name, p) })
			if err != nil {
				return nil, err
			}
			out = append(out, effectiveProvider{OAuthProvider: built, Source: sourceSettings})
			continue
		}
		for _, env := range h.OAuth {
			if env.Name == name {
				out = append(out, effectiveProvider{OAuthProvider: env, Source: sourceEnv})
			}
		}
	}
	return out, nil
}

// providerFromSettings builds the provider name from its admin settings.
func (h *Handlers) providerFromSettings(name string, p signinproviders.Provider) OAuthProvider {
	app := OAuthApp{ClientID: p.ClientID, ClientSecret: p.ClientSecret, BaseURL: h.BaseURL}
	switch name {
	case signinproviders.GitHub:
		return GitHubSignIn(app, GitHubCom())
	case signinproviders.Google:
		return GoogleSignIn(app, GoogleDiscoveryURL)
	}
	return openIDSignIn(name, p.ButtonLabel(), app, p.DiscoveryURL(), p.ScopeList())
}
