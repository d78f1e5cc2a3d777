package views

import "time"

// AdminSignIn is the sign-in providers page: one section per provider in
// one form.
type AdminSignIn struct {
	// Form holds every provider's fields (named "<provider>-<field>",
	// never the client secrets) and their errors.
	Form      Form
	Providers []AdminSignInProvider
	Confirm   AdminConfirm
	// Test is the outcome of a discovery test; nil when none was made.
	Test *AdminSignInTest
	// TwoFactor is the form of the two-factor requirement.
	TwoFactor AdminTwoFactor
}

// AdminSignInTest is what the OpenID Connect issuer's discovery document
// said, or why it could not be read (Error, in English from Go).
type AdminSignInTest struct {
	Issuer        string
	AuthEndpoint  string
	TokenEndpoint string
	Error         string
}

// AdminSignInProvider is what the page says of one provider.
type AdminSignInProvider struct {
	// Name is in URLs and field names: "github", "google" or "oidc".
	Name  string
	Label string
	// Source is where the provider in effect comes from: "settings",
	// "env" or "off".
	Source string
	// EnvSet tells that the environment configures the provider too.
	EnvSet bool
	// CallbackURL is the redirect URI to register with the provider.
	CallbackURL string
	// SecretStored tells that a client secret is stored; Unreadable that
	// it was sealed with another KUBEBYON_SECRET_KEY.
	SecretStored bool
	Unreadable   bool
}

// Field is the form name of the provider's field.
func (p AdminSignInProvider) Field(field string) string { return p.Name + "-" + field }

// AdminConfirm is how an admin confirms a dangerous action: their
// password, or, for an admin without one, a sign-in again with one of
// Providers, which then counts until FreshUntil.
type AdminConfirm struct {
	HasPassword bool
	Providers   []OAuthProvider
	FreshUntil  time.Time
	// Next is the page to come back to after signing in again.
	Next string
}

// Fresh tells that a sign-in again counts now.
func (c AdminConfirm) Fresh() bool { return time.Now().Before(c.FreshUntil) }
