package handlerstest

import (
	"context"
	"crypto"
	"crypto/rand"
	"crypto/rsa"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"math/big"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"
	"golang.org/x/oauth2"

	"github.com/kubebyon/kubebyon/handlers"
)

// OAuthBundle is a platform that signs in with a fake GitHub and a fake
// Google, both served by the test.
type OAuthBundle struct {
	*Bundle
	GitHub *FakeProvider
	Google *FakeProvider
}

// SetupOAuth is Setup with the two fake providers configured.
func SetupOAuth(t *testing.T) *OAuthBundle {
	t.Helper()
	gh, google := newFakeProvider(t, false), newFakeProvider(t, true)
	b := Setup(t, func(d *handlers.Deps) {
		app := handlers.OAuthApp{ClientID: FakeClientID, ClientSecret: fakeClientSecret, BaseURL: d.BaseURL}
		d.OAuth = []handlers.OAuthProvider{
			handlers.GitHubSignIn(app, handlers.GitHubEndpoints{
				Auth: gh.url("/login/oauth/authorize"), Token: gh.url("/login/oauth/access_token"),
				Profile: gh.url("/user"), Emails: gh.url("/user/emails"),
			}),
			handlers.GoogleSignIn(app, google.url("/.well-known/openid-configuration")),
		}
	})
	return &OAuthBundle{Bundle: b, GitHub: gh, Google: google}
}

const (
	// FakeClientID is the platform's client id at the fake providers.
	FakeClientID     = "kubebyon-test-client"
	fakeClientSecret = "kubebyon-test-secret"
)

// Person is who is signed in at a fake provider.
type Person struct {
	ID       string // GitHub's numeric id, or the OpenID subject
	Login    string
	Name     string
	Email    string
	Verified bool
}

// FakeProvider is an OAuth 2 provider served by the test: GitHub's API, or
// an OpenID Connect provider like Google's (discovery, RS256-signed ID
// tokens, keys, userinfo). Its authorize endpoint approves at once, as the
// person signed in there.
type FakeProvider struct {
	t    *testing.T
	srv  *httptest.Server
	oidc bool
	key  *rsa.PrivateKey

	mu        sync.Mutex
	who       Person
	codes     map[string]grant
	tokens    map[string]Person
	authorize url.Values // the last authorize request's query
	exchanges int        // token requests
}

// grant is an authorization code's meaning.
type grant struct {
	who         Person
	redirectURI string
	nonce       string // for the ID token
	challenge   string // PKCE S256 code challenge, checked at the exchange
}

func newFakeProvider(t *testing.T, oidc bool) *FakeProvider {
	f := &FakeProvider{t: t, oidc: oidc, codes: map[string]grant{}, tokens: map[string]Person{}}
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

func (f *FakeProvider) url(path string) string { return f.srv.URL + path }

// SignIn makes p the person signed in at the provider.
func (f *FakeProvider) SignIn(p Person) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.who = p
}

// LastAuthorize is the query of the last authorize request.
func (f *FakeProvider) LastAuthorize() url.Values {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.authorize
}

// TokenRequests counts the code exchanges.
func (f *FakeProvider) TokenRequests() int {
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
func (f *FakeProvider) approve(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	if q.Get("client_id") != FakeClientID || q.Get("response_type") != "code" || q.Get("redirect_uri") == "" {
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
func (f *FakeProvider) token(w http.ResponseWriter, r *http.Request) {
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
	if id != FakeClientID || secret != fakeClientSecret || r.PostForm.Get("grant_type") != "authorization_code" ||
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
func (f *FakeProvider) bearer(w http.ResponseWriter, r *http.Request) (Person, bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	p, ok := f.tokens[strings.TrimPrefix(r.Header.Get("Authorization"), "Bearer ")]
	if !ok {
		writeJSON(w, http.StatusUnauthorized, map[string]string{"message": "Bad credentials"})
	}
	return p, ok
}

func (f *FakeProvider) githubUser(w http.ResponseWriter, r *http.Request) {
	if p, ok := f.bearer(w, r); ok {
		// Like most GitHub users, no public email: goth then reads the list.
		writeJSON(w, http.StatusOK, map[string]any{"id": json.Number(p.ID), "login": p.Login, "name": p.Name, "email": nil})
	}
}

func (f *FakeProvider) githubEmails(w http.ResponseWriter, r *http.Request) {
	if p, ok := f.bearer(w, r); ok {
		writeJSON(w, http.StatusOK, []map[string]any{
			// A verified address that is not the primary one never counts.
			{"email": "secondary-" + p.Email, "primary": false, "verified": true, "visibility": nil},
			{"email": p.Email, "primary": true, "verified": p.Verified, "visibility": "private"},
		})
	}
}

func (f *FakeProvider) discovery(w http.ResponseWriter, r *http.Request) {
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

func (f *FakeProvider) claims(p Person) map[string]any {
	return map[string]any{"sub": p.ID, "email": p.Email, "email_verified": p.Verified, "name": p.Name}
}

func (f *FakeProvider) userinfo(w http.ResponseWriter, r *http.Request) {
	if p, ok := f.bearer(w, r); ok {
		writeJSON(w, http.StatusOK, f.claims(p))
	}
}

// jwks publishes the key that signs the ID tokens, as a real provider
// does, although goth does not check the signature (see GoogleSignIn).
func (f *FakeProvider) jwks(w http.ResponseWriter, r *http.Request) {
	writeJSON(w, http.StatusOK, map[string]any{"keys": []map[string]string{{
		"kty": "RSA", "use": "sig", "alg": "RS256", "kid": "test",
		"n": b64(f.key.N.Bytes()), "e": b64(big.NewInt(int64(f.key.E)).Bytes()),
	}}})
}

func b64(b []byte) string { return base64.RawURLEncoding.EncodeToString(b) }

// idToken is an RS256-signed JWT about p for the platform.
func (f *FakeProvider) idToken(p Person, nonce string) string {
	claims := f.claims(p)
	if nonce != "" {
		claims["nonce"] = nonce
	}
	now := time.Now()
	claims["iss"], claims["aud"], claims["iat"], claims["exp"] = f.srv.URL, FakeClientID, now.Unix(), now.Add(time.Hour).Unix()
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

// AccountRow is what the tests check of an account.
type AccountRow struct {
	ID          int64
	Name        string
	HasPassword bool
	Verified    bool
}

// Account reads the account with this email.
func (b *Bundle) Account(t *testing.T, email string) AccountRow {
	t.Helper()
	var a AccountRow
	require.NoError(t, b.Pool.QueryRow(context.Background(),
		"SELECT id, name, password_hash IS NOT NULL, email_verified_at IS NOT NULL FROM users WHERE lower(email) = lower($1)", email).
		Scan(&a.ID, &a.Name, &a.HasPassword, &a.Verified))
	return a
}

// Identities are a user's linked identities as "provider:subject:email".
func (b *Bundle) Identities(t *testing.T, userID int64) []string {
	t.Helper()
	rows, err := b.Pool.Query(context.Background(),
		"SELECT provider || ':' || subject || ':' || email FROM oauth_identities WHERE user_id = $1 ORDER BY provider", userID)
	require.NoError(t, err)
	out, err := pgx.CollectRows(rows, pgx.RowTo[string])
	require.NoError(t, err)
	return out
}

// AuditTrail is what a user did, as "action" or "action:provider".
func (b *Bundle) AuditTrail(t *testing.T, userID int64) []string {
	t.Helper()
	rows, err := b.Pool.Query(context.Background(),
		"SELECT action || coalesce(':' || coalesce(details->>'provider', details->>'method'), '') FROM audit_events WHERE actor_id = $1 ORDER BY id", userID)
	require.NoError(t, err)
	out, err := pgx.CollectRows(rows, pgx.RowTo[string])
	require.NoError(t, err)
	return out
}

// Count counts a table's rows.
func (b *Bundle) Count(t *testing.T, table string) int {
	t.Helper()
	var n int
	require.NoError(t, b.Pool.QueryRow(context.Background(), "SELECT count(*) FROM "+pgx.Identifier{table}.Sanitize()).Scan(&n))
	return n
}
