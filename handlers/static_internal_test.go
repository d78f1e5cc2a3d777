package handlers

import "testing"

func TestCompressibleType(t *testing.T) {
	t.Parallel()
	for contentType, want := range map[string]bool{
		"text/html; charset=UTF-8":        true,
		"TEXT/CSS":                        true,
		"text/x-shellscript":              true,
		"application/json":                true,
		"application/json; charset=utf-8": true,
		"application/javascript":          true,
		" image/svg+xml ":                 true,
		"image/png":                       false,
		"application/octet-stream":        false,
		"text/":                           false,
		"":                                false,
	} {
		if got := compressibleType(contentType); got != want {
			t.Errorf("compressibleType(%q) = %v, want %v", contentType, got, want)
		}
	}
}
