package handlers_test

import (
	"encoding/json"
	"net/http"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/kubebyon/kubebyon/handlers/handlerstest"
	"github.com/kubebyon/kubebyon/internal/apispec"
)

// echoParam is a path parameter as echo writes it (:id).
var echoParam = regexp.MustCompile(`:([A-Za-z_]+)`)

// TestAPIDescriptionNamesEveryRoute: every route under /api/v1 is an
// operation of the description, and every operation a route, so that
// neither can be added without the other. The description itself is a
// valid OpenAPI 3.1 document (APISpec checks it), and it is served.
func TestAPIDescriptionNamesEveryRoute(t *testing.T) {
	t.Parallel()
	b := handlerstest.Setup(t)
	handlerstest.APISpec(t)

	var doc struct {
		OpenAPI string                                `json:"openapi"`
		Paths   map[string]map[string]json.RawMessage `json:"paths"`
	}
	spec, err := apispec.JSON()
	require.NoError(t, err)
	require.NoError(t, json.Unmarshal(spec, &doc))
	require.Equal(t, "3.1.0", doc.OpenAPI)
	var described []string
	for path, item := range doc.Paths {
		for method := range item {
			if method == "parameters" {
				continue
			}
			described = append(described, strings.ToUpper(method)+" "+path)
		}
	}

	var routed []string
	for _, r := range b.Echo.Routes() {
		if !strings.HasPrefix(r.Path, handlerstest.APIPrefix) || strings.HasPrefix(r.Method, "echo_route_") {
			continue
		}
		routed = append(routed, r.Method+" "+echoParam.ReplaceAllString(r.Path, "{$1}"))
	}
	slices.Sort(described)
	slices.Sort(routed)
	require.Equal(t, routed, slices.Compact(described), "the routes under /api/v1 and the operations of internal/apispec/openapi.yaml")

	resp, err := http.Get(b.Server.URL + "/api/v1/openapi.json")
	require.NoError(t, err)
	defer resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode)
	require.Equal(t, "application/json", resp.Header.Get("Content-Type"))
	require.JSONEq(t, string(spec), handlerstest.ReadBody(t, resp))
}
