package views

import (
	"context"

	"github.com/kubebyon/kubebyon/internal/branding"
)

// Brand is how the layout presents the platform (the admin branding
// settings), put in each request's context by the handlers (WithBrand).
type Brand struct {
	ProductName string
	// LogoURL is the logo's address, versioned; "" for none.
	LogoURL string
	// SupportEmail or SupportURL is the support contact, if any.
	SupportEmail string
	SupportURL   string
	// FooterText replaces the footer's tagline when set.
	FooterText string
}

type brandKey struct{}

// WithBrand stores b in ctx.
func WithBrand(ctx context.Context, b *Brand) context.Context {
	return context.WithValue(ctx, brandKey{}, b)
}

// defaultBrand is the brand outside a request, and before anything set.
var defaultBrand = &Brand{ProductName: branding.DefaultProductName}

// BrandOf is the request's brand; the default one outside a request.
func BrandOf(ctx context.Context) *Brand {
	if b, ok := ctx.Value(brandKey{}).(*Brand); ok {
		return b
	}
	return defaultBrand
}
