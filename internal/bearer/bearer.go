// Package bearer makes and reads the platform's bearer secrets: API keys
// and edge tokens. A secret is a kind's prefix (such as "kbn_"), an
// 8-character id, "_", and a 32-character secret part, both in lowercase
// base32 (a-z, 2-7). The prefix and id (40 random bits) find the stored
// row and are shown in lists; the secret part (160 random bits) makes the
// whole unguessable. Only a SHA-256 of the whole is stored.
package bearer

import (
	"crypto/rand"
	"crypto/sha256"
	"encoding/base32"
	"encoding/hex"
	"strings"
)

const (
	idBytes     = 5 // 8 characters
	idLen       = 8
	secretBytes = 20 // 32 characters
	secretLen   = 32
	alphabet    = "abcdefghijklmnopqrstuvwxyz234567"
)

// encoding has no padding: 5 and 20 bytes encode to whole characters.
var encoding = base32.NewEncoding(alphabet).WithPadding(base32.NoPadding)

// Kind is one kind of secret, told apart by its prefix.
type Kind struct {
	// Prefix starts every secret of the kind, such as "kbn_".
	Prefix string
}

// New returns a fresh secret and its stored prefix (the kind's prefix
// and the id).
func (k Kind) New() (secret, prefix string) {
	b := make([]byte, idBytes+secretBytes)
	// crypto/rand.Read never returns an error: it crashes the program
	// rather than hand out predictable bytes.
	_, _ = rand.Read(b)
	prefix = k.Prefix + encoding.EncodeToString(b[:idBytes])
	return prefix + "_" + encoding.EncodeToString(b[idBytes:]), prefix
}

// PrefixOf is the stored prefix of a well-formed secret.
func (k Kind) PrefixOf(secret string) string { return secret[:k.prefixLen()] }

func (k Kind) prefixLen() int { return len(k.Prefix) + idLen }

// WellFormed reports whether s has exactly the shape of the kind's secrets.
func (k Kind) WellFormed(s string) bool {
	n := k.prefixLen()
	if len(s) != n+1+secretLen || !strings.HasPrefix(s, k.Prefix) || s[n] != '_' {
		return false
	}
	for i := len(k.Prefix); i < len(s); i++ {
		if i != n && strings.IndexByte(alphabet, s[i]) < 0 {
			return false
		}
	}
	return true
}

// Parse reads a secret from an Authorization header value, strictly: the
// scheme "Bearer" (in any case), one space, and one well-formed secret,
// nothing else.
func (k Kind) Parse(header string) (string, bool) {
	scheme, secret, found := strings.Cut(header, " ")
	if !found || !strings.EqualFold(scheme, "Bearer") || !k.WellFormed(secret) {
		return "", false
	}
	return secret, true
}

// Hash is what is stored of a secret. SHA-256 without salt or stretching
// is enough for 200 random bits; the whole secret, prefix included, is
// hashed.
func Hash(secret string) string {
	sum := sha256.Sum256([]byte(secret))
	return hex.EncodeToString(sum[:])
}
