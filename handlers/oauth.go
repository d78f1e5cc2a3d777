package handlers

import "github.com/kubebyon/kubebyon/views"

// providerButtons lists the sign-in providers that are configured.
func (h *Handlers) providerButtons() []views.OAuthProvider {
	return nil
}
