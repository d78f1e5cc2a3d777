package handlers

import (
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/labstack/echo/v4"
	"github.com/stretchr/testify/require"

	"github.com/kubebyon/kubebyon/internal/input"
)

// FuzzRejectUnstorableInput: whatever query and URL-encoded form a request
// carries, the handler behind the check either sees only storable text or
// is not called, and the request is then refused with field errors.
func FuzzRejectUnstorableInput(f *testing.F) {
	for _, s := range [][2]string{
		{"", "name=ab%00cd"},
		{"", "email=a%ffb@x.test&password=x"},
		{"email=a%00b%40x.test", ""},
		{"q=%e4%bd%a0", "description=%e5%a5%bd&uses=1"},
		{"a=%ed%a0%80", "%ff=1"},
		{"", "name=%zz&x=%00"},
	} {
		f.Add(s[0], s[1])
	}
	f.Fuzz(func(t *testing.T, query, form string) {
		var reached bool
		h := rejectUnstorableInput(func(c echo.Context) error {
			reached = true
			values, err := c.FormParams()
			require.NoError(t, err)
			for name, vs := range values {
				require.True(t, input.Storable(name), "%q", name)
				for _, v := range vs {
					require.True(t, input.Storable(v), "%q", v)
				}
			}
			return nil
		})
		req := httptest.NewRequest(http.MethodPost, "/form", strings.NewReader(form))
		req.URL.RawQuery = query
		req.Header.Set(echo.HeaderContentType, echo.MIMEApplicationForm)
		err := h(echo.New().NewContext(req, httptest.NewRecorder()))
		if reached {
			require.NoError(t, err)
			return
		}
		var fe input.Errors
		var he *echo.HTTPError
		switch {
		case errors.As(err, &fe):
			require.NotEmpty(t, fe)
			for name, id := range fe {
				require.True(t, input.Storable(name), "%q", name)
				require.Equal(t, input.ErrUnstorable, id)
			}
		case errors.As(err, &he):
			require.Equal(t, http.StatusBadRequest, he.Code, "a form that cannot be parsed")
		default:
			t.Fatalf("unexpected error %v", err)
		}
	})
}

// FuzzDecodeJSON: an API body is either refused (400, 415 or field
// errors) or decoded into text that PostgreSQL can store.
func FuzzDecodeJSON(f *testing.F) {
	for _, s := range []string{
		`{"name":"demo"}`, `{"name":"demo","name":"x"}`, `{"owner":1}`, `{"Name":"demo"}`,
		`{"description":"a\u0000b"}`, "{\"name\":\"\xff\"}", `{"name":"demo"} {}`, `[]`, `{"description":"\ud800"}`,
		`{"node_quota_enabled":true,"description":"好"}`,
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, body string) {
		req := httptest.NewRequest(http.MethodPost, "/api/v1/clusters", strings.NewReader(body))
		req.Header.Set(echo.HeaderContentType, echo.MIMEApplicationJSON)
		var v apiClusterBody
		err := decodeJSON(echo.New().NewContext(req, httptest.NewRecorder()), &v)
		if err == nil {
			for _, s := range []*string{v.Name, v.KubernetesVersion, v.PublicAccessMode, v.Description} {
				if s != nil {
					require.True(t, input.Storable(*s), "%q", *s)
				}
			}
			return
		}
		var fe input.Errors
		var he *echo.HTTPError
		switch {
		case errors.As(err, &fe):
			require.NotEmpty(t, fe)
		case errors.As(err, &he):
			require.Equal(t, http.StatusBadRequest, he.Code)
		default:
			t.Fatalf("unexpected error %v", err)
		}
	})
}
