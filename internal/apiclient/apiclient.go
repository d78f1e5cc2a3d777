// Package apiclient holds what the platform's own API clients (kubebyon
// edge, kubebyon route-agent) share.
package apiclient

import (
	"encoding/json"
	"io"
	"strings"
)

// Message is the message of the API's JSON error body
// ({"error": {"message": ...}}), or the body itself.
func Message(r io.Reader) string {
	b, _ := io.ReadAll(io.LimitReader(r, 4096))
	var e struct {
		Error struct {
			Message string `json:"message"`
		} `json:"error"`
	}
	if json.Unmarshal(b, &e) == nil && e.Error.Message != "" {
		return e.Error.Message
	}
	return strings.TrimSpace(string(b))
}
