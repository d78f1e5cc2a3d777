package apikeys

import (
	"crypto/rand"
	"crypto/sha256"
	"encoding/base32"
	"encoding/hex"
	"strings"
)

// A key is "kbn_" + an 8-character id + "_" + a 32-character secret, both
// in lowercase base32 (a-z, 2-7). The id (40 random bits) finds the row;
// the secret (160 random bits) makes the key unguessable.
const (
	keyPrefix   = "kbn_"
	idBytes     = 5 // 8 characters
	idLen       = 8
	secretBytes = 20 // 32 characters
	secretLen   = 32
	// prefixLen is the length of the stored prefix shown in lists:
	// "kbn_" and the id.
	prefixLen = len(keyPrefix) + idLen
	keyLen    = prefixLen + 1 + secretLen
)

const alphabet = "abcdefghijklmnopqrstuvwxyz234567"

// encoding has no padding: 5 and 20 bytes encode to whole characters.
var encoding = base32.NewEncoding(alphabet).WithPadding(base32.NoPadding)

// newKey returns a fresh key and its prefix.
func newKey() (key, prefix string) {
	b := make([]byte, idBytes+secretBytes)
	// crypto/rand.Read never returns an error: it crashes the program
	// rather than hand out predictable bytes.
	_, _ = rand.Read(b)
	prefix = keyPrefix + encoding.EncodeToString(b[:idBytes])
	return prefix + "_" + encoding.EncodeToString(b[idBytes:]), prefix
}

// hashKey is what is stored of a key. SHA-256 without salt or stretching is
// enough for 200 random bits; the whole key, prefix included, is hashed.
func hashKey(key string) string {
	sum := sha256.Sum256([]byte(key))
	return hex.EncodeToString(sum[:])
}

// wellFormed reports whether s has exactly the shape of a key.
func wellFormed(s string) bool {
	if len(s) != keyLen || !strings.HasPrefix(s, keyPrefix) || s[prefixLen] != '_' {
		return false
	}
	for i := len(keyPrefix); i < len(s); i++ {
		if i != prefixLen && strings.IndexByte(alphabet, s[i]) < 0 {
			return false
		}
	}
	return true
}

// ParseBearer reads the key from an Authorization header value, strictly:
// the scheme "Bearer" (in any case), one space, and one well-formed key,
// nothing else.
func ParseBearer(header string) (string, bool) {
	scheme, key, found := strings.Cut(header, " ")
	if !found || !strings.EqualFold(scheme, "Bearer") || !wellFormed(key) {
		return "", false
	}
	return key, true
}
