package views

import (
	"net/url"

	"github.com/a-h/templ"
)

// oauthStartURL starts a sign-in with a provider that returns to next (a
// local path the handlers checked; "/" is the default and left out).
func oauthStartURL(provider, next string) templ.SafeURL {
	u := "/auth/" + url.PathEscape(provider)
	if next != "" && next != "/" {
		u += "?" + url.Values{"next": {next}}.Encode()
	}
	return templ.SafeURL(u)
}
