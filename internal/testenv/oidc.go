package testenv

import (
	"context"
	"crypto/rand"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/zitadel/oidc/v3/example/server/storage"
	"github.com/zitadel/oidc/v3/pkg/op"
	"golang.org/x/text/language"
)

// OIDCUser is a person with an account at an OIDCProvider.
type OIDCUser struct {
	Subject       string
	Email         string
	EmailVerified bool
	GivenName     string
	FamilyName    string
}

// OIDCProvider is a real OpenID Connect provider (zitadel's op package,
// on the in-memory storage its example server ships) on an httptest
// server, with one confidential client. Its login page signs in at once
// as the person SignIn names, so that a test drives the whole
// authorization code flow without a form.
type OIDCProvider struct {
	// Issuer is the provider's issuer URL; discovery is at
	// Issuer/.well-known/openid-configuration.
	Issuer       string
	ClientID     string
	ClientSecret string

	users   *oidcUsers
	storage *storage.Storage

	mu         sync.Mutex
	logins     []OIDCLogin
	forgeNonce bool
}

// OIDCLogin is what an authorization request that reached the login page
// asked for.
type OIDCLogin struct {
	Prompt              []string
	Nonce               string
	CodeChallenge       string
	CodeChallengeMethod string
}

// NewOIDCProvider starts a provider whose client may send people back to
// redirectURIs, for the duration of the test.
func NewOIDCProvider(t testing.TB, redirectURIs ...string) *OIDCProvider {
	t.Helper()
	srv := httptest.NewUnstartedServer(nil)
	issuer := "http://" + srv.Listener.Addr().String()
	p := &OIDCProvider{
		Issuer: issuer, ClientID: "kubebyon-" + strings.ToLower(rand.Text()[:8]), ClientSecret: rand.Text(),
		users: &oidcUsers{byID: map[string]*storage.User{}},
	}
	p.storage = storage.NewStorageWithClients(p.users, map[string]*storage.Client{
		p.ClientID: storage.WebClient(p.ClientID, p.ClientSecret, redirectURIs...),
	})
	var key [32]byte
	_, _ = rand.Read(key[:])
	provider, err := op.NewProvider(&op.Config{CryptoKey: key, CodeMethodS256: true, AuthMethodPost: true, SupportedUILocales: []language.Tag{language.English}},
		p.storage, op.StaticIssuer(issuer), op.WithAllowInsecure())
	if err != nil {
		t.Fatalf("oidc provider: %v", err)
	}
	mux := http.NewServeMux()
	// The example clients send the browser to /login/username to sign in.
	mux.Handle("/login/username", op.NewIssuerInterceptor(provider.IssuerFromRequest).HandlerFunc(p.login(op.AuthCallbackURL(provider))))
	mux.Handle("/", provider)
	srv.Config.Handler = mux
	srv.Start()
	t.Cleanup(srv.Close)
	return p
}

// SignIn makes u the person signed in at the provider: its login page
// approves every request as them.
func (p *OIDCProvider) SignIn(u OIDCUser) {
	p.users.set(u)
}

// Logins are the authorization requests signed in so far, in order.
func (p *OIDCProvider) Logins() []OIDCLogin {
	p.mu.Lock()
	defer p.mu.Unlock()
	return slices.Clone(p.logins)
}

// ForgeNonce makes the provider put another nonce than the one asked for
// into the ID tokens of the next logins, as a token replayed from another
// sign-in would carry.
func (p *OIDCProvider) ForgeNonce(on bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.forgeNonce = on
}

// login is the provider's login page: it signs the pending authorization
// request in as the current person and sends the browser on to the
// provider's callback, which redirects to the client with a code.
func (p *OIDCProvider) login(callback func(context.Context, string) string) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		id := r.URL.Query().Get("authRequestID")
		req, err := p.storage.AuthRequestByID(r.Context(), id)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		u, ok := p.users.current()
		if !ok {
			http.Error(w, "nobody is signed in at the provider", http.StatusUnauthorized)
			return
		}
		if err := p.storage.CheckUsernamePassword(u.Username, u.Password, id); err != nil {
			http.Error(w, err.Error(), http.StatusUnauthorized)
			return
		}
		ar := req.(*storage.AuthRequest)
		login := OIDCLogin{Prompt: ar.Prompt, Nonce: ar.Nonce}
		if ar.CodeChallenge != nil {
			login.CodeChallenge, login.CodeChallengeMethod = ar.CodeChallenge.Challenge, ar.CodeChallenge.Method
		}
		p.mu.Lock()
		p.logins = append(p.logins, login)
		if p.forgeNonce {
			// The stored request is the one the ID token is made from.
			ar.Nonce = rand.Text()
		}
		p.mu.Unlock()
		http.Redirect(w, r, callback(r.Context(), id), http.StatusFound)
	}
}

// oidcUsers is the example storage's UserStore: the people with an
// account, and who is signed in.
type oidcUsers struct {
	mu   sync.Mutex
	byID map[string]*storage.User
	who  string
}

func (s *oidcUsers) set(u OIDCUser) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.byID[u.Subject] = &storage.User{
		ID: u.Subject, Username: u.Subject, Password: rand.Text(), FirstName: u.GivenName, LastName: u.FamilyName,
		Email: u.Email, EmailVerified: u.EmailVerified, PreferredLanguage: language.English,
	}
	s.who = u.Subject
}

func (s *oidcUsers) current() (storage.User, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	u, ok := s.byID[s.who]
	if !ok {
		return storage.User{}, false
	}
	return *u, true
}

func (s *oidcUsers) GetUserByID(id string) *storage.User {
	s.mu.Lock()
	defer s.mu.Unlock()
	if u, ok := s.byID[id]; ok {
		c := *u
		return &c
	}
	return nil
}

func (s *oidcUsers) GetUserByUsername(name string) *storage.User {
	// Usernames are the subjects.
	return s.GetUserByID(name)
}

func (s *oidcUsers) ExampleClientID() string { return "service" }
