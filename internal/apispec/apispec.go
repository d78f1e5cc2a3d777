// Package apispec is the description of the JSON API (/api/v1), in
// OpenAPI 3.1: the source the API is held to. The handlers serve it, the
// console renders it, and the tests check every request and response of
// their API traffic against it (handlers/handlerstest), so that it cannot
// drift from what the handlers do.
package apispec

import (
	_ "embed"
	"fmt"

	"sigs.k8s.io/yaml"
)

// YAML is the description as it is written.
//
//go:embed openapi.yaml
var YAML []byte

// JSON is the description as JSON, as /api/v1/openapi.json serves it.
func JSON() ([]byte, error) {
	b, err := yaml.YAMLToJSON(YAML)
	if err != nil {
		return nil, fmt.Errorf("the API description: %w", err)
	}
	return b, nil
}
