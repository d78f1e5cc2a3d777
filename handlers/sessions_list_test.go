package handlers_test

import (
	"net/http"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/kubebyon/kubebyon/handlers/handlerstest"
)

var sessionEndForm = regexp.MustCompile(`action="/settings/sessions/([^/"]+)/end"`)

// TestSessionsList: the sign-in page lists the user's signed-in browsers,
// signs one out (which is then signed out), then all the others; another
// user's session cannot be ended.
func TestSessionsList(t *testing.T) {
	t.Parallel()
	b := handlerstest.Setup(t)
	first, email := b.SignedUpUser(t, "sessions")
	second := b.SignIn(t, email, "password of sessions")
	third := b.SignIn(t, email, "password of sessions")
	stranger, _ := b.SignedUpUser(t, "stranger")

	status, page := first.Get("/settings/sign-in")
	require.Equal(t, http.StatusOK, status)
	require.Equal(t, 3, strings.Count(page, `data-testid="session"`), "three browsers signed in")
	require.Equal(t, 2, strings.Count(page, `data-testid="session-end"`), "the two others can be signed out")
	require.Contains(t, page, "This browser")
	ids := sessionEndForm.FindAllStringSubmatch(page, -1)
	require.Len(t, ids, 2)

	// Another user cannot end them: 404, and they stay signed in.
	resp := stranger.Post("/settings/sign-in", "/settings/sessions/"+ids[0][1]+"/end", nil)
	require.Equal(t, http.StatusNotFound, resp.StatusCode)
	resp.Body.Close()
	require.True(t, second.SignedIn() && third.SignedIn())

	resp = first.Post("/settings/sign-in", "/settings/sessions/"+ids[0][1]+"/end", nil)
	require.Equal(t, http.StatusSeeOther, resp.StatusCode, handlerstest.ReadBody(t, resp))
	resp.Body.Close()
	_, page = first.Get("/settings/sign-in")
	require.Contains(t, page, "That session is signed out.")
	require.Equal(t, 2, strings.Count(page, `data-testid="session"`))
	require.NotEqual(t, second.SignedIn(), third.SignedIn(), "exactly one of the other browsers was signed out")

	resp = first.Post("/settings/sign-in", "/settings/sessions/end-others", nil)
	require.Equal(t, http.StatusSeeOther, resp.StatusCode, handlerstest.ReadBody(t, resp))
	resp.Body.Close()
	require.False(t, second.SignedIn())
	require.False(t, third.SignedIn())
	require.True(t, first.SignedIn(), "this browser stays signed in")
	require.True(t, stranger.SignedIn())
	_, page = first.Get("/settings/sign-in")
	require.Equal(t, 1, strings.Count(page, `data-testid="session"`))
	require.NotContains(t, page, `data-testid="sessions-end-others"`)
}

// TestLanguageSwitch: the user menu's switch saves the language and goes
// back to the page, never to another site.
func TestLanguageSwitch(t *testing.T) {
	t.Parallel()
	b := handlerstest.Setup(t)
	c, _ := b.SignedUpUser(t, "polyglot")
	for _, tc := range []struct{ language, back, location, lang, says string }{
		{"zh-CN", "/clusters", "/clusters", `lang="zh-CN"`, ""},
		{"en", "//evil.example/x", "/", `lang="en"`, ""},
		// A refused language says so, and changes nothing.
		{"klingon", "/settings/profile", "/settings/profile", `lang="en"`, "That language is not offered."},
	} {
		resp := c.Post("/", "/settings/language", map[string][]string{"language": {tc.language}, "back": {tc.back}})
		require.Equal(t, http.StatusSeeOther, resp.StatusCode, tc.language)
		require.Equal(t, tc.location, resp.Header.Get("Location"), tc.language)
		resp.Body.Close()
		_, page := c.Get(tc.location)
		require.Contains(t, page, tc.lang, tc.language)
		require.Contains(t, page, tc.says, tc.language)
	}
}
