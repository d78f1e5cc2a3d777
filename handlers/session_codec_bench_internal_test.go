package handlers

import (
	"testing"
	"time"
)

// BenchmarkSessionCodecDecode: a signed-in page's session, read back.
func BenchmarkSessionCodecDecode(b *testing.B) {
	values := map[string]any{sessionID: "f3c1e2a4b5d6c7e8f9a0b1c2d3e4f5a6", sessionCSRF: "JQ5NHTLVRK3Q2CJ6YJ7GXZP4SA", sessionSeen: int64(1_796_000_000)}
	enc, err := sessionCodec{}.Encode(time.Now().Add(time.Hour), values)
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		if _, _, err := (sessionCodec{}).Decode(enc); err != nil {
			b.Fatal(err)
		}
	}
}
