// Package etag makes the entity tags of what the API's PATCH routes
// change, and carries a request's If-Match to the service that checks it
// under the lock of its change: a change made over a state that changed
// since it was read is refused (412), never applied over the newer one.
package etag

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
)

// ErrPreconditionFailed refuses a change whose If-Match names none of
// the tags of what it changes: that changed since it was read.
var ErrPreconditionFailed = errors.New("ErrPreconditionFailed")

// Match is an If-Match as a test of a tag; nil matches any (a request
// without one).
type Match func(tag string) bool

// Of is the strong entity tag of v: a hash of its JSON, quoted as an
// ETag header is. The services tag what a change changes, read under the
// change's lock (a stored settings row, a plan's editable fields), and
// the same value gives the same tag on every replica.
func Of(v any) (string, error) {
	b, err := json.Marshal(v)
	if err != nil {
		return "", fmt.Errorf("entity tag: %w", err)
	}
	sum := sha256.Sum256(b)
	return `"` + hex.EncodeToString(sum[:16]) + `"`, nil
}

type matchKey struct{}

// WithMatch is ctx carrying a request's If-Match (m nil: none) to the
// service that makes its change (Check).
func WithMatch(ctx context.Context, m Match) context.Context {
	if m == nil {
		return ctx
	}
	return context.WithValue(ctx, matchKey{}, m)
}

// Check is ErrPreconditionFailed when ctx carries an If-Match that tag
// does not meet. The services call it in the change's transaction, after
// taking its lock and before writing.
func Check(ctx context.Context, tag string) error {
	m, _ := ctx.Value(matchKey{}).(Match)
	if m != nil && !m(tag) {
		return ErrPreconditionFailed
	}
	return nil
}
