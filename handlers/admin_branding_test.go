package handlers_test

import (
	"bytes"
	"context"
	"html"
	"image"
	"image/png"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/kubebyon/kubebyon/handlers/handlerstest"
)

const brandingPage = "/admin/settings/branding"

// brandingForm is the branding form with every field filled in as an
// admin would, the defaults but for what over sets.
func brandingForm(over url.Values) url.Values {
	f := url.Values{
		"productName": {"KubeBYON"}, "supportContact": {""}, "footerText": {""}, "defaultLanguage": {"en"},
		"sessionLifetime": {"336"}, "idleTimeout": {"4320"},
	}
	for k, v := range over {
		f[k] = v
	}
	return f
}

// TestAdminBrandingValidation: bad input answers 422 with the message at
// each field and what was typed kept, and writes nothing.
func TestAdminBrandingValidation(t *testing.T) {
	t.Parallel()
	b := handlerstest.Setup(t)
	admin, _ := b.SignedUpAdmin(t, "brandcheck")
	tests := []struct {
		name   string
		over   url.Values
		field  string
		msg    string // the English message shown
		echoed string // what the page shows back
	}{
		{"no product name", url.Values{"productName": {"  "}}, "productName", "Enter a product name.", ""},
		{"long product name", url.Values{"productName": {strings.Repeat("n", 61)}}, "productName", "at most 60 characters", strings.Repeat("n", 61)},
		{"support contact", url.Values{"supportContact": {"call <us>"}}, "supportContact", "Enter an email address", "call &lt;us&gt;"},
		{"footer too long", url.Values{"footerText": {strings.Repeat("f", 501)}}, "footerText", "at most 500 characters", strings.Repeat("f", 501)},
		{"language", url.Values{"defaultLanguage": {"fr"}}, "defaultLanguage", "Choose one of the languages", ""},
		{"lifetime not a number", url.Values{"sessionLifetime": {"two weeks"}}, "sessionLifetime", "from 1 to 2160", "two weeks"},
		{"lifetime too long", url.Values{"sessionLifetime": {"2161"}}, "sessionLifetime", "from 1 to 2160", "2161"},
		{"idle too short", url.Values{"idleTimeout": {"14"}}, "idleTimeout", "from 15 up to the session lifetime", "14"},
		{"idle beyond the lifetime", url.Values{"sessionLifetime": {"1"}, "idleTimeout": {"61"}}, "idleTimeout", "from 15 up to the session lifetime", "61"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			resp := admin.Post(brandingPage, brandingPage, brandingForm(tt.over))
			body := handlerstest.ReadBody(t, resp)
			require.Equal(t, http.StatusUnprocessableEntity, resp.StatusCode, body)
			require.Contains(t, body, `data-testid="form-error"`)
			m := regexp.MustCompile(`data-testid="error-` + tt.field + `">([^<]*)<`).FindStringSubmatch(body)
			require.NotNil(t, m, "no error at %s", tt.field)
			require.Contains(t, html.UnescapeString(m[1]), tt.msg)
			require.Contains(t, body, tt.echoed)
		})
	}
	resp := admin.PostMultipart(brandingPage, brandingPage, brandingForm(url.Values{"productName": {"Kept"}}), "logo.gif", []byte("GIF89a\x01\x00\x01\x00"))
	body := handlerstest.ReadBody(t, resp)
	require.Equal(t, http.StatusUnprocessableEntity, resp.StatusCode, body)
	require.Contains(t, body, `data-testid="error-logo"`)
	require.Contains(t, body, "must be a PNG, WebP or SVG image")
	require.Contains(t, body, `value="Kept"`, "what was typed is kept")

	require.Empty(t, b.BrandingEvents(t))
	var n int
	require.NoError(t, b.Pool.QueryRow(context.Background(), "SELECT count(*) FROM settings WHERE key = 'branding'").Scan(&n))
	require.Zero(t, n, "nothing was written")
}

// TestAdminBrandingAppliesEverywhere: the page shows the stored settings
// and the base URL (a loopback one here, with its warning); a save is
// audited with the fields it changed, and its product name, footer text
// and support contact show on every page, to visitors and users, at once.
func TestAdminBrandingAppliesEverywhere(t *testing.T) {
	t.Parallel()
	b := handlerstest.Setup(t)
	admin, _ := b.SignedUpAdmin(t, "brander")
	user, _ := b.SignedUpUser(t, "branded")
	visitor := b.Client(t)

	status, body := admin.Get(brandingPage)
	require.Equal(t, http.StatusOK, status)
	require.Contains(t, body, `data-testid="admin-settings-nav"`)
	require.Contains(t, body, `href="/admin/settings/branding" aria-current="page"`)
	require.Contains(t, body, `value="KubeBYON"`)
	require.Contains(t, body, `value="336"`, "14 days, in hours")
	require.Contains(t, body, `value="4320"`, "3 days, in minutes")
	require.Contains(t, body, `data-testid="branding-base-url-value">`+b.Server.URL+`<`)
	require.Contains(t, body, `data-testid="branding-base-url-loopback"`)
	_, body = visitor.Get("/login")
	require.Contains(t, body, " · KubeBYON</title>")

	resp := admin.Post(brandingPage, brandingPage, brandingForm(url.Values{
		"productName": {"Acme <Cloud>"}, "supportContact": {"help@acme.example"},
		"footerText": {"© Acme Corp\r\nMade in <Mars>"},
	}))
	require.Equal(t, http.StatusSeeOther, resp.StatusCode, handlerstest.ReadBody(t, resp))
	_, body = admin.Get(brandingPage)
	require.Contains(t, body, "Branding and session settings saved.")
	require.Contains(t, body, `value="Acme &lt;Cloud&gt;"`)
	events := b.BrandingEvents(t)
	require.Len(t, events, 1)
	require.Equal(t, []any{"footerText", "productName", "supportContact"}, events[0]["changed"])

	for name, c := range map[string]*handlerstest.Client{"visitor": visitor, "user": user, "admin": admin} {
		for _, path := range []string{"/", "/login", "/no-such-page"} {
			if name != "visitor" && path == "/login" {
				continue
			}
			_, body := c.Get(path)
			require.Contains(t, body, " · Acme &lt;Cloud&gt;</title>", "%s %s", name, path)
			require.Contains(t, body, "<strong>Acme &lt;Cloud&gt;</strong>", "%s %s: the header", name, path)
			require.Contains(t, body, "© Acme Corp\nMade in &lt;Mars&gt;", "%s %s: the footer, escaped", name, path)
			require.NotContains(t, body, "Kubernetes, bring your own nodes", "%s %s: the footer text replaces the tagline", name, path)
			require.Contains(t, body, `href="mailto:help@acme.example"`, "%s %s", name, path)
			require.NotContains(t, body, "<Mars>")
		}
	}

	// The same form again changes nothing and is not audited.
	resp = admin.Post(brandingPage, brandingPage, brandingForm(url.Values{
		"productName": {"Acme <Cloud>"}, "supportContact": {"help@acme.example"},
		"footerText": {"© Acme Corp\nMade in <Mars>"},
	}))
	require.Equal(t, http.StatusSeeOther, resp.StatusCode)
	_, body = admin.Get(brandingPage)
	require.Contains(t, body, "Nothing changed")
	require.Len(t, b.BrandingEvents(t), 1)

	// Without footer text, the tagline names the product.
	resp = admin.Post(brandingPage, brandingPage, brandingForm(url.Values{"productName": {"Acme"}, "supportContact": {"https://acme.example/help"}}))
	require.Equal(t, http.StatusSeeOther, resp.StatusCode)
	_, body = visitor.Get("/")
	require.Contains(t, body, "Acme: Kubernetes, bring your own nodes.")
	require.Contains(t, body, `href="https://acme.example/help"`)
	require.Equal(t, []any{"footerText", "productName", "supportContact"}, b.BrandingEvents(t)[1]["changed"])
}

// TestAdminBrandingLogo: an uploaded logo shows in every page's header and
// is served to anyone with caching by its version and headers that keep
// an SVG inert; a file that is not a logo is refused; removing it removes
// it.
func TestAdminBrandingLogo(t *testing.T) {
	t.Parallel()
	b := handlerstest.Setup(t)
	admin, _ := b.SignedUpAdmin(t, "logoist")
	visitor := b.Client(t)
	logoLink := regexp.MustCompile(`<img src="(/branding/logo\?v=[0-9a-f]+)" alt="" class="brand-logo"`)

	_, body := visitor.Get("/")
	require.NotRegexp(t, logoLink, body, "no logo yet")
	status, _ := visitor.Get("/branding/logo")
	require.Equal(t, http.StatusNotFound, status)

	var pngLogo bytes.Buffer
	require.NoError(t, png.Encode(&pngLogo, image.NewGray(image.Rect(0, 0, 32, 16))))
	for _, bad := range []struct{ name, file, content, msg string }{
		{"not an image", "logo.png", "just text", "must be a PNG, WebP or SVG image"},
		{"script in an SVG", "logo.svg", `<svg xmlns="http://www.w3.org/2000/svg"><script>alert(1)</script></svg>`, "holds scripts"},
		{"too large", "logo.png", string(pngLogo.Bytes()) + strings.Repeat("\x00", 256<<10), "larger than 256 KB"},
	} {
		resp := admin.PostMultipart(brandingPage, brandingPage, brandingForm(nil), bad.file, []byte(bad.content))
		body := handlerstest.ReadBody(t, resp)
		require.Equal(t, http.StatusUnprocessableEntity, resp.StatusCode, bad.name)
		require.Contains(t, body, `data-testid="error-logo"`, bad.name)
		require.Contains(t, body, bad.msg, bad.name)
	}
	require.Empty(t, b.BrandingEvents(t))

	resp := admin.PostMultipart(brandingPage, brandingPage, brandingForm(nil), "logo.png", pngLogo.Bytes())
	require.Equal(t, http.StatusSeeOther, resp.StatusCode, handlerstest.ReadBody(t, resp))
	require.Equal(t, []any{"logo"}, b.BrandingEvents(t)[0]["changed"])
	_, body = visitor.Get("/")
	m := logoLink.FindStringSubmatch(body)
	require.NotNil(t, m, "the header shows the logo")
	src := html.UnescapeString(m[1])

	fetch := func(c *handlerstest.Client, path, ifNoneMatch string) *http.Response {
		req, err := http.NewRequest(http.MethodGet, c.Base+path, nil)
		require.NoError(t, err)
		if ifNoneMatch != "" {
			req.Header.Set("If-None-Match", ifNoneMatch)
		}
		resp, err := c.HTTP.Do(req)
		require.NoError(t, err)
		t.Cleanup(func() { resp.Body.Close() })
		return resp
	}
	fresh := b.Client(t)
	resp = fetch(fresh, src, "")
	require.Equal(t, http.StatusOK, resp.StatusCode)
	require.Equal(t, pngLogo.Bytes(), []byte(handlerstest.ReadBody(t, resp)))
	require.Equal(t, "image/png", resp.Header.Get("Content-Type"))
	require.Equal(t, "public, max-age=31536000, immutable", resp.Header.Get("Cache-Control"))
	require.Equal(t, "nosniff", resp.Header.Get("X-Content-Type-Options"))
	require.Empty(t, resp.Header.Values("Set-Cookie"), "the logo makes no session")
	etag := resp.Header.Get("ETag")
	require.NotEmpty(t, etag)
	require.Equal(t, http.StatusNotModified, fetch(fresh, src, etag).StatusCode)
	require.Equal(t, "public, max-age=60", fetch(fresh, "/branding/logo", "").Header.Get("Cache-Control"), "an unversioned URL is kept briefly")

	// An SVG logo is served as an image that can run nothing.
	svg := `<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 10 10"><style>rect{fill:#c00}</style><rect width="10" height="10"/></svg>`
	resp = admin.PostMultipart(brandingPage, brandingPage, brandingForm(nil), "logo.svg", []byte(svg))
	require.Equal(t, http.StatusSeeOther, resp.StatusCode, handlerstest.ReadBody(t, resp))
	_, body = visitor.Get("/")
	m = logoLink.FindStringSubmatch(body)
	require.NotNil(t, m)
	require.NotEqual(t, src, html.UnescapeString(m[1]), "a new logo has a new URL")
	resp = fetch(fresh, html.UnescapeString(m[1]), "")
	require.Equal(t, http.StatusOK, resp.StatusCode)
	require.Equal(t, svg, handlerstest.ReadBody(t, resp))
	require.Equal(t, "image/svg+xml", resp.Header.Get("Content-Type"))
	require.Equal(t, "default-src 'none'; style-src 'unsafe-inline'; sandbox", resp.Header.Get("Content-Security-Policy"))
	require.Equal(t, "nosniff", resp.Header.Get("X-Content-Type-Options"))

	resp = admin.Post(brandingPage, brandingPage, brandingForm(url.Values{"logoRemove": {"on"}}))
	require.Equal(t, http.StatusSeeOther, resp.StatusCode)
	_, body = visitor.Get("/")
	require.NotRegexp(t, logoLink, body)
	require.Equal(t, http.StatusNotFound, fetch(fresh, "/branding/logo", "").StatusCode)
	require.Len(t, b.BrandingEvents(t), 3)
}

// TestBrandingDefaultLanguage: the default language is a visitor's when
// nothing else chooses: a browser's Accept-Language still wins.
func TestBrandingDefaultLanguage(t *testing.T) {
	t.Parallel()
	b := handlerstest.Setup(t)
	admin, _ := b.SignedUpAdmin(t, "linguist")
	visitor := b.Client(t)
	_, body := visitor.Get("/login")
	require.Contains(t, body, `<html lang="en">`)

	resp := admin.Post(brandingPage, brandingPage, brandingForm(url.Values{"defaultLanguage": {"zh-CN"}}))
	require.Equal(t, http.StatusSeeOther, resp.StatusCode, handlerstest.ReadBody(t, resp))
	require.Equal(t, []any{"defaultLanguage"}, b.BrandingEvents(t)[0]["changed"])

	_, body = visitor.Get("/login")
	require.Contains(t, body, `<html lang="zh-CN">`, "a visitor whose browser names no language")
	require.Contains(t, body, "KubeBYON：自带节点的 Kubernetes")

	english := b.Client(t)
	english.HTTP.Transport = handlerstest.AcceptLanguage{Lang: "en-US,en;q=0.9", Next: english.HTTP.Transport}
	_, body = english.Get("/login")
	require.Contains(t, body, `<html lang="en">`, "the browser's language wins")

	german := b.Client(t)
	german.HTTP.Transport = handlerstest.AcceptLanguage{Lang: "de-DE,de;q=0.9", Next: german.HTTP.Transport}
	_, body = german.Get("/login")
	require.Contains(t, body, `<html lang="zh-CN">`, "a language the platform does not have")
}

// TestSessionSettings: a new sign-in lasts the lifetime the settings say;
// a shorter idle timeout ends sessions idle longer than it, those signed
// in before the change too, without a restart.
func TestSessionSettings(t *testing.T) {
	t.Parallel()
	b := handlerstest.Setup(t)
	admin, _ := b.SignedUpAdmin(t, "sessionist")
	earlier, earlierEmail := b.SignedUpUser(t, "earlier")
	ctx := context.Background()

	resp := admin.Post(brandingPage, brandingPage, brandingForm(url.Values{"sessionLifetime": {"2"}, "idleTimeout": {"15"}}))
	require.Equal(t, http.StatusSeeOther, resp.StatusCode, handlerstest.ReadBody(t, resp))
	require.Equal(t, []any{"idleTimeout", "sessionLifetime"}, b.BrandingEvents(t)[0]["changed"])

	// A new sign-in: its cookie lasts the lifetime, its row the idle time.
	later, laterEmail := b.SignedUpUser(t, "later")
	resp = b.Client(t).Post("/login", "/login", url.Values{"email": {laterEmail}, "password": {"password of later"}})
	require.Equal(t, http.StatusSeeOther, resp.StatusCode)
	var cookie *http.Cookie
	for _, ck := range resp.Cookies() {
		if ck.Name == "kubebyon_session" {
			cookie = ck
		}
	}
	require.NotNil(t, cookie)
	require.WithinDuration(t, time.Now().Add(2*time.Hour), cookie.Expires, 2*time.Minute, "the lifetime counts from sign-in")
	status, _ := later.Get("/")
	require.Equal(t, http.StatusOK, status)
	_, expiry := handlerstest.SessionRow(t, b, later)
	require.WithinDuration(t, time.Now().Add(15*time.Minute), expiry, 2*time.Minute, "stored until the idle time from its last save")

	// A session saved 16 minutes ago is over, whatever its stored expiry
	// (this one, signed in before the change, has days left).
	_, expiry = handlerstest.SessionRow(t, b, earlier)
	require.True(t, expiry.After(time.Now().Add(24*time.Hour)), "saved under the old idle timeout")
	status, body := earlier.Get("/settings/profile")
	require.Equal(t, http.StatusOK, status)
	require.Contains(t, body, earlierEmail)
	age := func(c *handlerstest.Client, d time.Duration) {
		t.Helper()
		u, err := url.Parse(b.Server.URL)
		require.NoError(t, err)
		for _, ck := range c.HTTP.Jar.Cookies(u) {
			if ck.Name == "kubebyon_session" {
				_, err := b.Pool.Exec(ctx, "UPDATE sessions SET saved_at = now() - make_interval(secs => $2) WHERE token = $1",
					b.Box.MAC("session-token", []byte(ck.Value)), d.Seconds())
				require.NoError(t, err)
			}
		}
	}
	age(earlier, 14*time.Minute)
	status, _ = earlier.Get("/settings/profile")
	require.Equal(t, http.StatusOK, status, "idle less than the timeout")
	age(earlier, 16*time.Minute)
	status, _ = earlier.Get("/settings/profile")
	require.Equal(t, http.StatusSeeOther, status, "idle longer than the timeout: signed out")
	age(later, 16*time.Minute)
	status, _ = later.Get("/settings/profile")
	require.Equal(t, http.StatusSeeOther, status)
}
