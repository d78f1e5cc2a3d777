// Package passwords hashes and checks passwords with argon2id.
package passwords

import (
	"crypto/rand"
	"fmt"

	"github.com/alexedwards/argon2id"
)

// MinLength is the shortest password accepted.
const MinLength = 12

// params follow RFC 9106's second recommended option, scaled for a server
// that hashes on sign-in: 64 MiB, 3 passes.
var params = &argon2id.Params{Memory: 64 * 1024, Iterations: 3, Parallelism: 2, SaltLength: 16, KeyLength: 32}

// Hash returns the PHC-encoded argon2id hash of pw.
func Hash(pw string) (string, error) {
	h, err := argon2id.CreateHash(pw, params)
	if err != nil {
		return "", fmt.Errorf("hash password: %w", err)
	}
	return h, nil
}

// Verify reports whether pw matches the encoded hash.
func Verify(pw, hash string) (bool, error) {
	ok, err := argon2id.ComparePasswordAndHash(pw, hash)
	if err != nil {
		return false, fmt.Errorf("check password: %w", err)
	}
	return ok, nil
}

// Generate returns a random password of at least 128 bits.
func Generate() string { return rand.Text() }
