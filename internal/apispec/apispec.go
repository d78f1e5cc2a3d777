// Package apispec is the description of the JSON API (/api/v1), in
// OpenAPI 3.1: the source the API is held to. The handlers serve it, the
// console renders it, and the tests check every request and response of
// their API traffic against it (handlers/handlerstest), so that it cannot
// drift from what the handlers do.
package apispec

import (
	_ "embed"
	"encoding/json"
	"fmt"
	"strings"

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

// Operation is one operation of the description: its method and path
// template (/api/v1/clusters/{id}), by its operationId.
type Operation struct {
	Method string
	Path   string
	// Tag is its first tag, which the reference groups it under.
	Tag string
}

// Operations are the description's operations by operationId.
func Operations() (map[string]Operation, error) {
	var doc struct {
		Paths map[string]map[string]json.RawMessage `json:"paths"`
	}
	if err := yaml.Unmarshal(YAML, &doc); err != nil {
		return nil, fmt.Errorf("the API description: %w", err)
	}
	ops := map[string]Operation{}
	for path, item := range doc.Paths {
		for method, raw := range item {
			if method == "parameters" {
				continue
			}
			var op struct {
				OperationID string   `json:"operationId"`
				Tags        []string `json:"tags"`
			}
			if err := json.Unmarshal(raw, &op); err != nil {
				return nil, fmt.Errorf("the API description's %s %s: %w", method, path, err)
			}
			o := Operation{Method: strings.ToUpper(method), Path: path}
			if len(op.Tags) > 0 {
				o.Tag = op.Tags[0]
			}
			ops[op.OperationID] = o
		}
	}
	return ops, nil
}
