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

// TestCost is a cost for tests alone: it resists no attack. A test suite
// that signs up hundreds of users spends most of its CPU hashing at the
// production cost; a hash records its cost, so that checking a password
// against a cheap hash is cheap too.
var TestCost = &argon2id.Params{Memory: 64, Iterations: 1, Parallelism: 1, SaltLength: 16, KeyLength: 32}

// Hasher makes new password hashes. Its zero value hashes at the
// production cost.
type Hasher struct {
	// Cost replaces the production cost when set (TestCost).
	Cost *argon2id.Params
}

// Hash returns the PHC-encoded argon2id hash of pw at the production cost.
func Hash(pw string) (string, error) { return Hasher{}.Hash(pw) }

// Hash returns the PHC-encoded argon2id hash of pw.
func (h Hasher) Hash(pw string) (string, error) {
	cost := params
	if h.Cost != nil {
		cost = h.Cost
	}
	hash, err := argon2id.CreateHash(pw, cost)
	if err != nil {
		return "", fmt.Errorf("hash password: %w", err)
	}
	return hash, nil
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
