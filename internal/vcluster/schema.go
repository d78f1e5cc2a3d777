package vcluster

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"helm.sh/helm/v3/pkg/chart"
	"helm.sh/helm/v3/pkg/chartutil"
	"k8s.io/client-go/rest"

	"github.com/kubebyon/kubebyon/internal/helm"
)

// Apply installs or upgrades the release (apply), with the chart's values
// schema compiled once per chart: Helm compiles it again on every install
// and upgrade (a fifth of an install's CPU). The values are checked as Helm checks them
// (merged with the chart's defaults), and Helm is then told to skip its
// own check. A chart whose schema cannot be compiled here (one with
// subcharts, or references outside itself) is left to Helm to check.
func (c *Charts) Apply(ctx context.Context, cfg *rest.Config, namespace, name string, ch *chart.Chart, values map[string]any, logger *slog.Logger) (helm.Outcome, error) {
	schema, ok := c.schema(ch)
	if !ok {
		return helm.Apply(ctx, cfg, namespace, name, ch, values, logger, false)
	}
	if schema != nil {
		merged, err := chartutil.CoalesceValues(ch, values)
		if err != nil {
			return "", fmt.Errorf("merge the values with the chart's defaults: %w", err)
		}
		if err := schema.Validate(merged.AsMap()); err != nil {
			return "", fmt.Errorf("values do not match the schema of chart %s %s: %w", ch.Name(), ch.Metadata.Version, err)
		}
	}
	return helm.Apply(ctx, cfg, namespace, name, ch, values, logger, true)
}

// compiledSchema is a chart's values schema compiled (nil without one),
// or that it cannot be compiled here (Helm checks the values then).
type compiledSchema struct {
	schema *jsonschema.Schema
	ok     bool
}

// schema is ch's values schema compiled, nil when it has none; false when
// it cannot be compiled here.
func (c *Charts) schema(ch *chart.Chart) (*jsonschema.Schema, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	cs, seen := c.schemas[ch]
	if !seen {
		s, err := compileSchema(ch)
		cs = compiledSchema{schema: s, ok: err == nil}
		if c.schemas == nil {
			c.schemas = map[*chart.Chart]compiledSchema{}
		}
		c.schemas[ch] = cs
	}
	return cs.schema, cs.ok
}

// compileSchema compiles ch's values schema as Helm does (nil without
// one), with no loader: a schema that refers outside itself, or a chart
// with subcharts (whose values Helm checks against their own schemas), is
// an error.
func compileSchema(ch *chart.Chart) (*jsonschema.Schema, error) {
	if len(ch.Dependencies()) > 0 {
		return nil, fmt.Errorf("chart %s has subcharts", ch.Name())
	}
	if ch.Schema == nil {
		return nil, nil
	}
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(ch.Schema))
	if err != nil {
		return nil, fmt.Errorf("read the values schema of chart %s: %w", ch.Name(), err)
	}
	compiler := jsonschema.NewCompiler()
	compiler.UseLoader(jsonschema.SchemeURLLoader{})
	if err := compiler.AddResource("file:///values.schema.json", doc); err != nil {
		return nil, fmt.Errorf("add the values schema of chart %s: %w", ch.Name(), err)
	}
	s, err := compiler.Compile("file:///values.schema.json")
	if err != nil {
		return nil, fmt.Errorf("compile the values schema of chart %s: %w", ch.Name(), err)
	}
	return s, nil
}
