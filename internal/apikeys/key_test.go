package apikeys_test

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/kubebyon/kubebyon/internal/apikeys"
)

// validKey has the shape of a real key.
const validKey = "kbn_abcdefgh_abcdefghijklmnopqrstuvwxyz234567"

func TestParseBearer(t *testing.T) {
	t.Parallel()
	tests := []struct {
		header string
		ok     bool
	}{
		{"Bearer " + validKey, true},
		{"bearer " + validKey, true},
		{"BEARER " + validKey, true},
		{"", false},
		{"Bearer", false},
		{"Bearer ", false},
		{validKey, false},
		{"Basic " + validKey, false},
		{"Token " + validKey, false},
		{"Bearer  " + validKey, false},
		{"Bearer\t" + validKey, false},
		{" Bearer " + validKey, false},
		{"Bearer " + validKey + " ", false},
		{"Bearer " + validKey + " " + validKey, false},
		{"Bearer " + validKey + "," + validKey, false},
		{"Bearer " + strings.ToUpper(validKey), false},
		{"Bearer " + validKey[:len(validKey)-1], false},
		{"Bearer " + validKey + "a", false},
		{"Bearer kbx_abcdefgh_abcdefghijklmnopqrstuvwxyz234567", false},
		{"Bearer kbn_abcdefgh-abcdefghijklmnopqrstuvwxyz234567", false},
		{"Bearer kbn_abcdefg1_abcdefghijklmnopqrstuvwxyz234567", false}, // 1 is not base32
		{"Bearer kbn_abcdefgh_abcdefghijklmnopqrstuvwxyz23456=", false},
		{"Bearer kbn_abcdefghi_bcdefghijklmnopqrstuvwxyz234567", false},
		{"Bearer kbn_abcdefgh_abcdefghijklmnopqrstuvwxyz23456é", false},
	}
	for _, tt := range tests {
		key, ok := apikeys.ParseBearer(tt.header)
		require.Equal(t, tt.ok, ok, "%q", tt.header)
		if ok {
			require.Equal(t, validKey, key, "%q", tt.header)
		} else {
			require.Empty(t, key, "%q", tt.header)
		}
	}
}

// FuzzParseBearer checks that whatever the header, the parser does not
// panic and accepts only "Bearer" (any case), one space and a key of the
// exact shape, which it returns unchanged.
func FuzzParseBearer(f *testing.F) {
	for _, seed := range []string{
		"Bearer " + validKey,
		"bearer " + validKey,
		"Bearer " + validKey + " x",
		"Bearer  " + validKey,
		"Basic dXNlcjpwYXNz",
		"Bearer kbn_",
		"Bearer kbn_abcdefgh_",
		"Bearer kbn_ABCDEFGH_abcdefghijklmnopqrstuvwxyz234567",
		"Bearer \x00",
		"",
		" ",
		"Bearer",
		"Bearer kbn_abcdefgh_abcdefghijklmnopqrstuvwxyz23456\xff",
	} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, header string) {
		key, ok := apikeys.ParseBearer(header)
		if !ok {
			if key != "" {
				t.Fatalf("rejected %q but returned %q", header, key)
			}
			return
		}
		scheme, rest, _ := strings.Cut(header, " ")
		if !strings.EqualFold(scheme, "bearer") || rest != key {
			t.Fatalf("accepted %q as %q", header, key)
		}
		if len(key) != len(validKey) || !strings.HasPrefix(key, "kbn_") || key[12] != '_' {
			t.Fatalf("accepted a key of the wrong shape: %q", key)
		}
		for i, r := range key[4:] {
			if i+4 == 12 {
				continue
			}
			if !strings.ContainsRune("abcdefghijklmnopqrstuvwxyz234567", r) {
				t.Fatalf("accepted a key with %q in it: %q", r, key)
			}
		}
		// What it accepts, it accepts again in any case of the scheme.
		if again, ok := apikeys.ParseBearer("BEARER " + key); !ok || again != key {
			t.Fatalf("does not accept %q again", key)
		}
	})
}
