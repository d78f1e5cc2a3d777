package apikeys

import "github.com/kubebyon/kubebyon/internal/bearer"

// keys are API keys: "kbn_" + an 8-character id + "_" + a 32-character
// secret (package bearer).
var keys = bearer.Kind{Prefix: "kbn_"}

// ParseBearer reads the key from an Authorization header value, strictly:
// the scheme "Bearer" (in any case), one space, and one well-formed key,
// nothing else.
func ParseBearer(header string) (string, bool) { return keys.Parse(header) }
