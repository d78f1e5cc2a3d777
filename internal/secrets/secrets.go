// Package secrets encrypts values at rest and keys hashes of short secrets
// with the platform key (KUBEBYON_SECRET_KEY).
package secrets

import (
	"crypto/aes"
	"crypto/cipher"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
)

// Box seals and opens values with AES-256-GCM and computes HMAC-SHA256.
// Separate keys for the two uses are derived from the platform key.
type Box struct {
	aead   cipher.AEAD
	macKey []byte
}

// New builds a Box from the 32-byte platform key.
func New(key []byte) (*Box, error) {
	if len(key) != 32 {
		return nil, fmt.Errorf("secrets: key has %d bytes, want 32", len(key))
	}
	block, err := aes.NewCipher(derive(key, "kubebyon encryption v1"))
	if err != nil {
		return nil, fmt.Errorf("secrets: %w", err)
	}
	aead, err := cipher.NewGCM(block)
	if err != nil {
		return nil, fmt.Errorf("secrets: %w", err)
	}
	return &Box{aead: aead, macKey: derive(key, "kubebyon mac v1")}, nil
}

func derive(key []byte, label string) []byte {
	m := hmac.New(sha256.New, key)
	m.Write([]byte(label))
	return m.Sum(nil)
}

// Seal encrypts plaintext into printable text.
func (b *Box) Seal(plaintext []byte) string {
	nonce := make([]byte, b.aead.NonceSize())
	_, _ = rand.Read(nonce)
	return base64.RawStdEncoding.EncodeToString(b.aead.Seal(nonce, nonce, plaintext, nil))
}

// ErrOpen says a sealed value was damaged or sealed with another key.
var ErrOpen = errors.New("secrets: cannot decrypt (wrong key or damaged value)")

// Open decrypts what Seal produced.
func (b *Box) Open(sealed string) ([]byte, error) {
	raw, err := base64.RawStdEncoding.DecodeString(sealed)
	if err != nil || len(raw) < b.aead.NonceSize() {
		return nil, ErrOpen
	}
	n := b.aead.NonceSize()
	out, err := b.aead.Open(nil, raw[:n], raw[n:], nil)
	if err != nil {
		return nil, ErrOpen
	}
	return out, nil
}

// MAC returns the hex HMAC of data under a purpose label. Short secrets
// (six-digit codes) are stored this way: without the platform key the
// stored value cannot be brute-forced offline.
func (b *Box) MAC(purpose string, data []byte) string {
	m := hmac.New(sha256.New, b.macKey)
	m.Write([]byte(purpose))
	m.Write([]byte{0})
	m.Write(data)
	return hex.EncodeToString(m.Sum(nil))
}

// Equal compares two MACs in constant time.
func Equal(a, b string) bool { return hmac.Equal([]byte(a), []byte(b)) }
