package handlers_test

import (
	"context"
	"crypto"
	"crypto/rand"
	"crypto/rsa"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"math/big"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"
	"golang.org/x/oauth2"

	"github.com/kubebyon/kubebyon/handlers"
	"github.com/kubebyon/kubebyon/internal/testenv"
)

// oauthBundle is a platform that signs in with a fake GitHub and a fake
// Google, both served by the test.
type oauthBundle struct {
	*testBundle
	github *fakeProvider
	google *fakeProvider
}

// setupOAuth is setup (main_test.go) with the two providers configured. It
// repeats setup's wiring because setup takes no further dependencies.
func setupOAuth(t *testing.T) *oauthBundle {
	t.Helper()
	gh, google := newFakeProvider(t, false), newFakeProvider(t, true)
	b := setup(t, func(d *handlers.Deps) {
		app := handlers.OAuthApp{ClientID: fakeClientID, ClientSecret: fakeClientSecret, BaseURL: d.BaseURL}
		d.OAuth = []handlers.OAuthProvider{
			handlers.GitHubSignIn(app, handlers.GitHubEndpoints{
				Auth: gh.url("/login/oauth/authorize"), Token: gh.url("/login/oauth/access_token"),
				Profile: gh.url("/user"), Emails: gh.url("/user/emails"),
			}),
			handlers.GoogleSignIn(app, google.url("/.well-known/openid-configuration")),
		}
	})
	return &oauthBundle{testBundle: b, github: gh, google: google}
}

const (
	fakeClientID     = "kubebyon-test-client"
	fakeClientSecret = "kubebyon-test-secret"
)

// person is who is signed in at a fake provider.
type person struct {
	ID       string // GitHub's numeric id, or the OpenID subject
	Login    string
	Name     string
	Email    string
	Verified bool
}

// fakeProvider is an OAuth 2 provider served by the test: GitHub's API, or
// an OpenID Connect provider like Google's (discovery, RS256-signed ID
// tokens, keys, userinfo). Its authorize endpoint approves at once, as the
// person signed in there.
type fakeProvider struct {
	t    *testing.T
	srv  *httptest.Server
	oidc bool
	key  *rsa.PrivateKey

	mu        sync.Mutex
	who       person
	codes     map[string]grant
	tokens    map[string]person
	authorize url.Values // the last authorize request's query
	exchanges int        // token requests
}

// grant is an authorization code's meaning.
type grant struct {
	who         person
	redirectURI string
	nonce       string // for the ID token
	challenge   string // PKCE S256 code challenge, checked at the exchange
}

func newFakeProvider(t *testing.T, oidc bool) *fakeProvider {
	f := &fakeProvider{t: t, oidc: oidc, codes: map[string]grant{}, tokens: map[string]person{}}
	mux := http.NewServeMux()
	if oidc {
		key, err := rsa.GenerateKey(rand.Reader, 2048)
		require.NoError(t, err)
		f.key = key
		mux.HandleFunc("GET /.well-known/openid-configuration", f.discovery)
		mux.HandleFunc("GET /authorize", f.approve)
		mux.HandleFunc("POST /token", f.token)
		mux.HandleFunc("GET /userinfo", f.userinfo)
		mux.HandleFunc("GET /jwks", f.jwks)
	} else {
		mux.HandleFunc("GET /login/oauth/authorize", f.approve)
		mux.HandleFunc("POST /login/oauth/access_token", f.token)
		mux.HandleFunc("GET /user", f.githubUser)
		mux.HandleFunc("GET /user/emails", f.githubEmails)
	}
	f.srv = httptest.NewServer(mux)
	t.Cleanup(f.srv.Close)
	return f
}

func (f *fakeProvider) url(path string) string { return f.srv.URL + path }

// signIn makes p the person signed in at the provider.
func (f *fakeProvider) signIn(p person) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.who = p
}

func (f *fakeProvider) lastAuthorize() url.Values {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.authorize
}

func (f *fakeProvider) tokenRequests() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.exchanges
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

// approve is the authorize endpoint: back to the client with a code.
func (f *fakeProvider) approve(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	if q.Get("client_id") != fakeClientID || q.Get("response_type") != "code" || q.Get("redirect_uri") == "" {
		http.Error(w, "bad authorize request", http.StatusBadRequest)
		return
	}
	code := rand.Text()
	f.mu.Lock()
	f.authorize = q
	g := grant{who: f.who, redirectURI: q.Get("redirect_uri"), nonce: q.Get("nonce")}
	if q.Get("code_challenge_method") == "S256" {
		g.challenge = q.Get("code_challenge")
	}
	f.codes[code] = g
	f.mu.Unlock()
	back, err := url.Parse(q.Get("redirect_uri"))
	require.NoError(f.t, err)
	back.RawQuery = url.Values{"code": {code}, "state": {q.Get("state")}}.Encode()
	http.Redirect(w, r, back.String(), http.StatusFound)
}

// token trades a code, once, for an access token (and an ID token).
func (f *fakeProvider) token(w http.ResponseWriter, r *http.Request) {
	require.NoError(f.t, r.ParseForm())
	id, secret, ok := r.BasicAuth()
	if !ok {
		id, secret = r.PostForm.Get("client_id"), r.PostForm.Get("client_secret")
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.exchanges++
	g, found := f.codes[r.PostForm.Get("code")]
	delete(f.codes, r.PostForm.Get("code"))
	if id != fakeClientID || secret != fakeClientSecret || r.PostForm.Get("grant_type") != "authorization_code" ||
		!found || r.PostForm.Get("redirect_uri") != g.redirectURI ||
		(g.challenge != "" && oauth2.S256ChallengeFromVerifier(r.PostForm.Get("code_verifier")) != g.challenge) {
		writeJSON(w, http.StatusBadRequest, map[string]string{"error": "invalid_grant"})
		return
	}
	access := rand.Text()
	f.tokens[access] = g.who
	resp := map[string]any{"access_token": access, "token_type": "bearer"}
	if f.oidc {
		resp["expires_in"] = 3600
		resp["id_token"] = f.idToken(g.who, g.nonce)
	}
	writeJSON(w, http.StatusOK, resp)
}

// bearer is the person whose access token authorizes r.
func (f *fakeProvider) bearer(w http.ResponseWriter, r *http.Request) (person, bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	p, ok := f.tokens[strings.TrimPrefix(r.Header.Get("Authorization"), "Bearer ")]
	if !ok {
		writeJSON(w, http.StatusUnauthorized, map[string]string{"message": "Bad credentials"})
	}
	return p, ok
}

func (f *fakeProvider) githubUser(w http.ResponseWriter, r *http.Request) {
	if p, ok := f.bearer(w, r); ok {
		// Like most GitHub users, no public email: goth then reads the list.
		writeJSON(w, http.StatusOK, map[string]any{"id": json.Number(p.ID), "login": p.Login, "name": p.Name, "email": nil})
	}
}

func (f *fakeProvider) githubEmails(w http.ResponseWriter, r *http.Request) {
	if p, ok := f.bearer(w, r); ok {
		writeJSON(w, http.StatusOK, []map[string]any{
			// A verified address that is not the primary one never counts.
			{"email": "secondary-" + p.Email, "primary": false, "verified": true, "visibility": nil},
			{"email": p.Email, "primary": true, "verified": p.Verified, "visibility": "private"},
		})
	}
}

func (f *fakeProvider) discovery(w http.ResponseWriter, r *http.Request) {
	writeJSON(w, http.StatusOK, map[string]any{
		"issuer":                                f.srv.URL,
		"authorization_endpoint":                f.url("/authorize"),
		"token_endpoint":                        f.url("/token"),
		"userinfo_endpoint":                     f.url("/userinfo"),
		"jwks_uri":                              f.url("/jwks"),
		"response_types_supported":              []string{"code"},
		"subject_types_supported":               []string{"public"},
		"id_token_signing_alg_values_supported": []string{"RS256"},
	})
}

func (f *fakeProvider) claims(p person) map[string]any {
	return map[string]any{"sub": p.ID, "email": p.Email, "email_verified": p.Verified, "name": p.Name}
}

func (f *fakeProvider) userinfo(w http.ResponseWriter, r *http.Request) {
	if p, ok := f.bearer(w, r); ok {
		writeJSON(w, http.StatusOK, f.claims(p))
	}
}

// jwks publishes the key that signs the ID tokens, as a real provider
// does, although goth does not check the signature (see GoogleSignIn).
func (f *fakeProvider) jwks(w http.ResponseWriter, r *http.Request) {
	writeJSON(w, http.StatusOK, map[string]any{"keys": []map[string]string{{
		"kty": "RSA", "use": "sig", "alg": "RS256", "kid": "test",
		"n": b64(f.key.N.Bytes()), "e": b64(big.NewInt(int64(f.key.E)).Bytes()),
	}}})
}

func b64(b []byte) string { return base64.RawURLEncoding.EncodeToString(b) }

// idToken is an RS256-signed JWT about p for the platform.
func (f *fakeProvider) idToken(p person, nonce string) string {
	claims := f.claims(p)
	if nonce != "" {
		claims["nonce"] = nonce
	}
	now := time.Now()
	claims["iss"], claims["aud"], claims["iat"], claims["exp"] = f.srv.URL, fakeClientID, now.Unix(), now.Add(time.Hour).Unix()
	header, err := json.Marshal(map[string]string{"alg": "RS256", "kid": "test", "typ": "JWT"})
	require.NoError(f.t, err)
	payload, err := json.Marshal(claims)
	require.NoError(f.t, err)
	signed := b64(header) + "." + b64(payload)
	digest := sha256.Sum256([]byte(signed))
	sig, err := rsa.SignPKCS1v15(rand.Reader, f.key, crypto.SHA256, digest[:])
	require.NoError(f.t, err)
	return signed + "." + b64(sig)
}

// fetchURL requests an absolute URL, the platform's or a provider's, with c's
// cookies and without following redirects.
func (c *client) fetchURL(rawURL string) (*http.Response, string) {
	c.t.Helper()
	resp, err := c.http.Get(rawURL)
	require.NoError(c.t, err)
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	require.NoError(c.t, err)
	return resp, string(body)
}

// start begins a sign-in with a provider and returns where the platform
// sends the browser: the provider's authorize URL.
func (c *client) start(provider string) *url.URL {
	c.t.Helper()
	return c.startAt("/auth/" + provider)
}

// startAt is start from a given start URL (path and query).
func (c *client) startAt(path string) *url.URL {
	c.t.Helper()
	resp, _ := c.fetchURL(c.base + path)
	require.Equal(c.t, http.StatusSeeOther, resp.StatusCode)
	u, err := url.Parse(resp.Header.Get("Location"))
	require.NoError(c.t, err)
	return u
}

// signInWith goes through a provider as a browser does: to the platform, to
// the provider, back to the platform's callback. It returns where the
// callback sends the browser.
func (c *client) signInWith(provider string) string {
	c.t.Helper()
	return c.signInFrom("/auth/"+provider, provider)
}

// signInFrom is signInWith from a given start URL (path and query).
func (c *client) signInFrom(path, provider string) string {
	c.t.Helper()
	resp, body := c.fetchURL(c.startAt(path).String())
	require.Equal(c.t, http.StatusFound, resp.StatusCode, body)
	callback := resp.Header.Get("Location")
	require.True(c.t, strings.HasPrefix(callback, c.base+"/auth/"+provider+"/callback?"), callback)
	resp, body = c.fetchURL(callback)
	require.Equal(c.t, http.StatusSeeOther, resp.StatusCode, body)
	return resp.Header.Get("Location")
}

type accountRow struct {
	ID          int64
	Name        string
	HasPassword bool
	Verified    bool
}

func (b *testBundle) account(t *testing.T, email string) accountRow {
	t.Helper()
	var a accountRow
	require.NoError(t, b.pool.QueryRow(context.Background(),
		"SELECT id, name, password_hash IS NOT NULL, email_verified_at IS NOT NULL FROM users WHERE lower(email) = lower($1)", email).
		Scan(&a.ID, &a.Name, &a.HasPassword, &a.Verified))
	return a
}

// identities are a user's linked identities as "provider:subject:email".
func (b *testBundle) identities(t *testing.T, userID int64) []string {
	t.Helper()
	rows, err := b.pool.Query(context.Background(),
		"SELECT provider || ':' || subject || ':' || email FROM oauth_identities WHERE user_id = $1 ORDER BY provider", userID)
	require.NoError(t, err)
	out, err := pgx.CollectRows(rows, pgx.RowTo[string])
	require.NoError(t, err)
	return out
}

// auditTrail is what a user did, as "action" or "action:provider".
func (b *testBundle) auditTrail(t *testing.T, userID int64) []string {
	t.Helper()
	rows, err := b.pool.Query(context.Background(),
		"SELECT action || coalesce(':' || coalesce(details->>'provider', details->>'method'), '') FROM audit_events WHERE actor_id = $1 ORDER BY id", userID)
	require.NoError(t, err)
	out, err := pgx.CollectRows(rows, pgx.RowTo[string])
	require.NoError(t, err)
	return out
}

func (b *testBundle) count(t *testing.T, table string) int {
	t.Helper()
	var n int
	require.NoError(t, b.pool.QueryRow(context.Background(), "SELECT count(*) FROM "+pgx.Identifier{table}.Sanitize()).Scan(&n))
	return n
}

// TestOAuthGitHubSignUpAndSignInAgain: a verified GitHub email nobody has
// makes an account; the same GitHub account later signs in to it.
func TestOAuthGitHubSignUpAndSignInAgain(t *testing.T) {
	t.Parallel()
	b := setupOAuth(t)
	email := uniqueEmail("octo")
	b.github.signIn(person{ID: "4242", Login: "octocat", Name: "Octo Cat", Email: email, Verified: true})

	c := b.client(t)
	require.Equal(t, "/", c.signInWith("github"))
	q := b.github.lastAuthorize()
	require.Equal(t, "read:user user:email", q.Get("scope"))
	require.Equal(t, b.server.URL+"/auth/github/callback", q.Get("redirect_uri"))
	_, body := c.get("/")
	require.Contains(t, body, `data-testid="dashboard-greeting">Welcome, Octo Cat<`)
	require.Contains(t, body, "Your account was made with the email address your provider verified.")

	a := b.account(t, email)
	require.Equal(t, accountRow{ID: a.ID, Name: "Octo Cat", HasPassword: false, Verified: true}, a)
	require.Equal(t, []string{"github:4242:" + email}, b.identities(t, a.ID))
	require.Equal(t, []string{"user.signup:github", "user.sign_in:github"}, b.auditTrail(t, a.ID))

	// Another browser, the same GitHub account: the same KubeBYON account.
	c2 := b.client(t)
	require.Equal(t, "/", c2.signInWith("github"))
	_, body = c2.get("/")
	require.Contains(t, body, `data-testid="dashboard-greeting">Welcome, Octo Cat<`)
	require.NotContains(t, body, "Your account was made")
	require.Equal(t, 1, b.count(t, "users"))
	require.Equal(t, []string{"user.signup:github", "user.sign_in:github", "user.sign_in:github"}, b.auditTrail(t, a.ID))

	// A disabled account stays shut.
	_, err := b.pool.Exec(context.Background(), "UPDATE users SET disabled_at = now() WHERE id = $1", a.ID)
	require.NoError(t, err)
	c3 := b.client(t)
	require.Equal(t, "/login", c3.signInWith("github"))
	_, body = c3.get("/login")
	require.Contains(t, body, "This account is disabled.")
	require.Len(t, b.auditTrail(t, a.ID), 3)
}

// TestOAuthGoogleSignUp signs up through the OpenID Connect provider.
func TestOAuthGoogleSignUp(t *testing.T) {
	t.Parallel()
	b := setupOAuth(t)
	email := uniqueEmail("grace")
	b.google.signIn(person{ID: "108234567890", Name: "Grace Hopper", Email: email, Verified: true})

	c := b.client(t)
	require.Equal(t, "/", c.signInWith("google"))
	q := b.google.lastAuthorize()
	require.Equal(t, "openid email profile", q.Get("scope"))
	require.Equal(t, b.server.URL+"/auth/google/callback", q.Get("redirect_uri"))
	require.Equal(t, "S256", q.Get("code_challenge_method"), "PKCE, checked at the exchange")
	require.NotEmpty(t, q.Get("nonce"), "the ID token's nonce is checked")
	_, body := c.get("/")
	require.Contains(t, body, `data-testid="dashboard-greeting">Welcome, Grace Hopper<`)

	a := b.account(t, email)
	require.True(t, a.Verified)
	require.False(t, a.HasPassword)
	require.Equal(t, []string{"google:108234567890:" + email}, b.identities(t, a.ID))
	require.Equal(t, []string{"user.signup:google", "user.sign_in:google"}, b.auditTrail(t, a.ID))
}

// TestOAuthLinkExistingAccount: a verified email that belongs to an account
// links only once the account's password is given.
func TestOAuthLinkExistingAccount(t *testing.T) {
	t.Parallel()
	b := setupOAuth(t)
	_, email := b.signedUpUser(t, "linker")
	a := b.account(t, email)
	// GitHub spells the address in capitals: still the same account.
	b.github.signIn(person{ID: "777", Login: "linker", Name: "Someone Else", Email: strings.ToUpper(email), Verified: true})

	c := b.client(t)
	require.Equal(t, "/auth/link", c.signInWith("github"))
	code, body := c.get("/auth/link")
	require.Equal(t, http.StatusOK, code)
	require.Contains(t, body, `data-testid="oauth-link-heading">Link your GitHub account to `+email+`<`)

	resp := c.post("/auth/link", "/auth/link", url.Values{"password": {"not the password"}})
	body = readBody(t, resp)
	require.Equal(t, http.StatusUnauthorized, resp.StatusCode)
	require.Contains(t, body, `data-testid="error-password">That password is not right.<`)
	require.Empty(t, b.identities(t, a.ID))
	_, body = c.get("/")
	require.NotContains(t, body, "dashboard-greeting")

	resp = c.post("/auth/link", "/auth/link", url.Values{"password": {"password of linker"}})
	require.Equal(t, http.StatusSeeOther, resp.StatusCode, readBody(t, resp))
	require.Equal(t, "/", resp.Header.Get("Location"))
	_, body = c.get("/")
	require.Contains(t, body, `data-testid="dashboard-greeting">Welcome, linker<`, "the account keeps its name")
	require.Contains(t, body, "Your accounts are linked")
	require.Equal(t, []string{"github:777:" + email}, b.identities(t, a.ID))
	trail := b.auditTrail(t, a.ID)
	require.Equal(t, []string{"user.link_identity:github", "user.sign_in:github"}, trail[len(trail)-2:])

	// The pending link was used up; the next GitHub sign-in goes straight in.
	resp, _ = c.fetchURL(c.base + "/auth/link")
	require.Equal(t, "/", resp.Header.Get("Location"))
	require.Equal(t, "/", b.client(t).signInWith("github"))
	require.Equal(t, 1, b.count(t, "users"))
}

// TestOAuthLinkAccountWithoutPassword: an account made with Google has no
// password to prove it with; signed in with Google, the same browser links
// GitHub.
func TestOAuthLinkAccountWithoutPassword(t *testing.T) {
	t.Parallel()
	b := setupOAuth(t)
	email := uniqueEmail("nopassword")
	b.google.signIn(person{ID: "g-1", Name: "Only Google", Email: email, Verified: true})
	b.github.signIn(person{ID: "99", Login: "onlygoogle", Email: email, Verified: true})
	withGoogle := b.client(t)
	require.Equal(t, "/", withGoogle.signInWith("google"))

	c := b.client(t)
	require.Equal(t, "/auth/link", c.signInWith("github"))
	_, body := c.get("/auth/link")
	require.Contains(t, body, "That account has no password. Sign in to it with Google first")
	require.NotContains(t, body, "oauth-link-form")
	// The page has no form; a password posted anyway opens nothing.
	resp := c.post("/login", "/auth/link", url.Values{"password": {"any password at all"}})
	require.Equal(t, http.StatusUnauthorized, resp.StatusCode)

	require.Equal(t, "/", withGoogle.signInWith("github"))
	_, body = withGoogle.get("/")
	require.Contains(t, body, "Your accounts are linked")
	a := b.account(t, email)
	require.Equal(t, []string{"github:99:" + email, "google:g-1:" + email}, b.identities(t, a.ID))
	require.Equal(t, []string{"user.signup:google", "user.sign_in:google", "user.link_identity:github"}, b.auditTrail(t, a.ID))
	require.Equal(t, "/", b.client(t).signInWith("github"))
}

// TestOAuthClaimsUnverifiedAccount: an address someone signed up with but
// never verified goes to the person the provider vouches for, without the
// sign-up's password.
func TestOAuthClaimsUnverifiedAccount(t *testing.T) {
	t.Parallel()
	b := setupOAuth(t)
	email := uniqueEmail("claimed")
	signUp(t, b.client(t), email, "Squatter", "squatter password")
	b.github.signIn(person{ID: "31", Login: "owner", Name: "Real Owner", Email: email, Verified: true})

	require.Equal(t, "/", b.client(t).signInWith("github"))
	a := b.account(t, email)
	require.Equal(t, accountRow{ID: a.ID, Name: "Real Owner", HasPassword: false, Verified: true}, a)
	resp := b.client(t).post("/login", "/login", url.Values{"email": {email}, "password": {"squatter password"}})
	require.Equal(t, http.StatusUnauthorized, resp.StatusCode)
	var replaced bool
	require.NoError(t, b.pool.QueryRow(context.Background(),
		"SELECT (details->>'replaced_unverified')::boolean FROM audit_events WHERE actor_id = $1 AND action = 'user.signup' AND details ? 'provider'", a.ID).Scan(&replaced))
	require.True(t, replaced)
}

// TestOAuthUnverifiedEmailRefused: no account is made or linked from an
// email the provider has not verified.
func TestOAuthUnverifiedEmailRefused(t *testing.T) {
	t.Parallel()
	b := setupOAuth(t)
	b.github.signIn(person{ID: "5", Login: "unverified", Email: uniqueEmail("unverified-gh"), Verified: false})
	b.google.signIn(person{ID: "g-5", Name: "Unverified", Email: uniqueEmail("unverified-g"), Verified: false})
	for _, provider := range []string{"github", "google"} {
		c := b.client(t)
		require.Equal(t, "/login", c.signInWith(provider), provider)
		_, body := c.get("/login")
		require.Contains(t, body, "That account has no verified email address.", provider)
	}
	require.Zero(t, b.count(t, "users"))
	require.Zero(t, b.count(t, "oauth_identities"))
	require.Zero(t, b.count(t, "audit_events"))
}

// TestOAuthRefusedCallbacks: a callback whose state this browser did not
// start with, or that carries the provider's refusal, writes nothing and
// never reaches the provider's token endpoint.
func TestOAuthRefusedCallbacks(t *testing.T) {
	t.Parallel()
	b := setupOAuth(t)
	b.github.signIn(person{ID: "6", Login: "victim", Email: uniqueEmail("victim"), Verified: true})
	callback := b.server.URL + "/auth/github/callback?"
	stateFlash := "That sign-in did not start in this browser"

	c := b.client(t)
	state := c.start("github").Query().Get("state")
	require.NotEmpty(t, state)
	resp, _ := c.fetchURL(callback + url.Values{"code": {"forged"}, "state": {state + "x"}}.Encode())
	require.Equal(t, "/login", resp.Header.Get("Location"))
	_, body := c.get("/login")
	require.Contains(t, body, stateFlash)
	// The flow is used up: its own state no longer works either.
	resp, _ = c.fetchURL(callback + url.Values{"code": {"forged"}, "state": {state}}.Encode())
	require.Equal(t, "/login", resp.Header.Get("Location"))

	// A browser that never started gets nowhere with another's state.
	c2 := b.client(t)
	state = c.start("github").Query().Get("state")
	resp, _ = c2.fetchURL(callback + url.Values{"code": {"forged"}, "state": {state}}.Encode())
	require.Equal(t, "/login", resp.Header.Get("Location"))
	_, body = c2.get("/login")
	require.Contains(t, body, stateFlash)

	// Started here but another provider's callback.
	c3 := b.client(t)
	state = c3.start("google").Query().Get("state")
	resp, _ = c3.fetchURL(callback + url.Values{"code": {"forged"}, "state": {state}}.Encode())
	require.Equal(t, "/login", resp.Header.Get("Location"))

	// The person said no at the provider.
	c4 := b.client(t)
	state = c4.start("github").Query().Get("state")
	resp, _ = c4.fetchURL(callback + url.Values{"error": {"access_denied"}, "state": {state}}.Encode())
	require.Equal(t, "/login", resp.Header.Get("Location"))
	_, body = c4.get("/login")
	require.Contains(t, body, "Sign-in was cancelled or refused at the provider.")

	require.Zero(t, b.github.tokenRequests())
	require.Zero(t, b.google.tokenRequests())
	require.Zero(t, b.count(t, "users"))
	require.Zero(t, b.count(t, "audit_events"))
}

// TestOAuthUnconfiguredProviders: only configured providers have buttons
// and routes.
func TestOAuthUnconfiguredProviders(t *testing.T) {
	t.Parallel()
	none := setup(t).client(t)
	_, body := none.get("/login")
	require.NotContains(t, body, `data-testid="oauth-`)
	for _, path := range []string{"/auth/github", "/auth/github/callback?code=x&state=y", "/auth/google"} {
		code, _ := none.get(path)
		require.Equal(t, http.StatusNotFound, code, path)
	}

	c := setupOAuth(t).client(t)
	_, body = c.get("/login")
	require.Contains(t, body, `data-testid="oauth-github">Sign in with GitHub<`)
	require.Contains(t, body, `data-testid="oauth-google">Sign in with Google<`)
	code, _ := c.get("/auth/gitlab")
	require.Equal(t, http.StatusNotFound, code)
	code, _ = c.get("/auth/link")
	require.Equal(t, http.StatusSeeOther, code, "no pending link: back to sign-in")
}

// TestOAuthSignInInBrowser clicks "Sign in with GitHub" and lands on the
// dashboard of a new account.
func TestOAuthSignInInBrowser(t *testing.T) {
	t.Parallel()
	b := setupOAuth(t)
	b.github.signIn(person{ID: "1001", Login: "browser", Name: "Browser Octo", Email: uniqueEmail("oauth-browser"), Verified: true})
	ctx := testenv.Browser(t)

	var greeting, flash string
	require.NoError(t, chromedp.Run(ctx,
		chromedp.Navigate(b.server.URL+"/login"),
		chromedp.Click(`[data-testid="oauth-github"]`, chromedp.ByQuery),
		chromedp.WaitVisible(`[data-testid="dashboard-greeting"]`, chromedp.ByQuery),
		chromedp.Text(`[data-testid="dashboard-greeting"]`, &greeting, chromedp.ByQuery),
		chromedp.Text(`[data-testid="flash"]`, &flash, chromedp.ByQuery),
	))
	require.Equal(t, "Welcome, Browser Octo", greeting)
	require.Contains(t, flash, "Welcome to KubeBYON!")
}

// TestOAuthReturnsToNext: a sign-in with a provider started from a page
// that asked for one lands back on it, also after linking; a next that is
// not a local path lands on the dashboard.
func TestOAuthReturnsToNext(t *testing.T) {
	t.Parallel()
	b := setupOAuth(t)
	b.github.signIn(person{ID: "9001", Login: "returner", Name: "Returner", Email: uniqueEmail("returner"), Verified: true})

	c := b.client(t)
	resp, _ := c.fetchURL(c.base + "/clusters")
	require.Equal(t, "/login?next=%2Fclusters", resp.Header.Get("Location"))
	_, body := c.get("/login?next=%2Fclusters")
	require.Contains(t, body, `href="/auth/github?next=%2Fclusters"`)
	require.Equal(t, "/clusters", c.signInFrom("/auth/github?next=%2Fclusters", "github"))

	require.Equal(t, "/", b.client(t).signInFrom("/auth/github?next=%2F%2Fevil.example%2F", "github"))

	// Through the link page too.
	_, email := b.signedUpUser(t, "returning-linker")
	b.github.signIn(person{ID: "9002", Login: "rl", Name: "RL", Email: email, Verified: true})
	c = b.client(t)
	require.Equal(t, "/auth/link", c.signInFrom("/auth/github?next=%2Fsettings%2Fprofile", "github"))
	resp = c.post("/auth/link", "/auth/link", url.Values{"password": {"password of returning-linker"}})
	require.Equal(t, http.StatusSeeOther, resp.StatusCode, readBody(t, resp))
	require.Equal(t, "/settings/profile", resp.Header.Get("Location"))
}

// TestSignInMethods: a signed-in user links a GitHub account with another
// email from the settings, sees and unlinks it; nobody else can unlink it
// or link it to theirs; the only way left to sign in cannot be unlinked.
func TestSignInMethods(t *testing.T) {
	t.Parallel()
	b := setupOAuth(t)
	c, email := b.signedUpUser(t, "methods")
	a := b.account(t, email)
	b.github.signIn(person{ID: "5150", Login: "methods-gh", Name: "M", Email: uniqueEmail("elsewhere"), Verified: true})

	code, body := c.get("/settings/sign-in")
	require.Equal(t, http.StatusOK, code)
	require.Contains(t, body, `data-testid="identities-empty"`)
	require.Contains(t, body, `href="/auth/github?link=1"`)
	require.Equal(t, "/settings/sign-in", c.signInFrom("/auth/github?link=1", "github"))
	require.Len(t, b.identities(t, a.ID), 1, "linked to the signed-in account, whatever email GitHub gives")
	require.Equal(t, 1, b.count(t, "users"), "no account was made")
	_, body = c.get("/settings/sign-in")
	require.Contains(t, body, `data-testid="identity" data-provider="github"`)
	require.NotContains(t, body, `href="/auth/github?link=1"`)
	var identityID int64
	require.NoError(t, b.pool.QueryRow(context.Background(), "SELECT id FROM oauth_identities WHERE user_id = $1", a.ID).Scan(&identityID))
	unlink := fmt.Sprintf("/settings/sign-in/%d/unlink", identityID)

	// Someone else can neither unlink it nor take it.
	other, _ := b.signedUpUser(t, "other-methods")
	resp := other.post("/settings/sign-in", unlink, nil)
	require.Equal(t, http.StatusNotFound, resp.StatusCode)
	require.Equal(t, "/settings/sign-in", other.signInFrom("/auth/github?link=1", "github"))
	_, body = other.get("/settings/sign-in")
	require.Contains(t, body, "already signs in to another KubeBYON account")
	require.Len(t, b.identities(t, a.ID), 1)

	resp = c.post("/settings/sign-in", unlink, nil)
	require.Equal(t, http.StatusSeeOther, resp.StatusCode, readBody(t, resp))
	require.Empty(t, b.identities(t, a.ID))
	require.Contains(t, b.auditTrail(t, a.ID), "user.unlink_identity:github")

	// An account made with Google has no password: its only identity stays.
	b.google.signIn(person{ID: "424242", Name: "Only Google", Email: uniqueEmail("only-google"), Verified: true})
	g := b.client(t)
	require.Equal(t, "/", g.signInWith("google"))
	var googleUser, googleID int64
	require.NoError(t, b.pool.QueryRow(context.Background(), "SELECT user_id, id FROM oauth_identities WHERE provider = 'google'").Scan(&googleUser, &googleID))
	resp = g.post("/settings/sign-in", fmt.Sprintf("/settings/sign-in/%d/unlink", googleID), nil)
	require.Equal(t, http.StatusSeeOther, resp.StatusCode)
	_, body = g.get("/settings/sign-in")
	require.Contains(t, body, "This is your only way to sign in.")
	require.Len(t, b.identities(t, googleUser), 1)
}
