package accounts

import (
	"crypto/rand"
	"strconv"
	"strings"
	"time"

	"github.com/kubebyon/kubebyon/internal/secrets"
)

// Device cookies (OWASP's "device cookie" pattern): a browser that signed
// in to an account keeps a cookie naming that account, keyed with the
// platform key. Its sign-in attempts for that account count against a limit
// of its own instead of the account's, so that someone who knows the email
// address and locks the account out with wrong passwords does not lock its
// owner out of the browsers they used before.

// DeviceLifetime is how long a device cookie is good for.
const DeviceLifetime = 365 * 24 * time.Hour

// NewDevice returns a device cookie's value for the account of email, and
// when it expires.
func (s *Service) NewDevice(email string, now time.Time) (value string, expires time.Time) {
	expires = now.Add(DeviceLifetime).Truncate(time.Second)
	nonce, exp := rand.Text(), strconv.FormatInt(expires.Unix(), 10)
	return nonce + "." + exp + "." + s.deviceMAC(email, nonce, exp), expires
}

// Device returns the device's id when value is an unexpired device cookie
// for the account of email (as typed in the sign-in form).
func (s *Service) Device(value, email string, now time.Time) (id string, ok bool) {
	nonce, rest, _ := strings.Cut(value, ".")
	exp, mac, _ := strings.Cut(rest, ".")
	unix, err := strconv.ParseInt(exp, 10, 64)
	if err != nil || nonce == "" || !now.Before(time.Unix(unix, 0)) {
		return "", false
	}
	if !secrets.Equal(mac, s.deviceMAC(email, nonce, exp)) {
		return "", false
	}
	return nonce, true
}

// deviceMAC binds a cookie's nonce and expiry to an account, named by its
// address as the sign-in rate limits name it (trimmed, lower case).
func (s *Service) deviceMAC(email, nonce, exp string) string {
	account := strings.ToLower(strings.TrimSpace(email))
	return s.Box.MAC("device-cookie", []byte(account+"\x00"+nonce+"\x00"+exp))
}
