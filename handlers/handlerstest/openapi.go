package handlerstest

import (
	"bytes"
	"compress/gzip"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/pb33f/libopenapi"
	validator "github.com/pb33f/libopenapi-validator"
	"github.com/pb33f/libopenapi-validator/config"
	valerrors "github.com/pb33f/libopenapi-validator/errors"

	"github.com/kubebyon/kubebyon/internal/apispec"
)

// APIPrefix is where the JSON API is served: every request under it is
// checked against the API description.
const APIPrefix = "/api/v1/"

// apiSpec is the API description's validator, built once per test binary
// (APISpec). The validator's caches are not documented as safe for
// concurrent use, so that calls to it take mu.
type apiSpec struct {
	mu sync.Mutex
	v  validator.Validator
}

var (
	apiSpecOnce sync.Once
	apiSpecVal  *apiSpec
	apiSpecErr  error
)

// APISpec is the validator of internal/apispec's description, which must
// itself be a valid OpenAPI 3.1 document.
func APISpec(t testing.TB) *apiSpec {
	t.Helper()
	apiSpecOnce.Do(func() { apiSpecVal, apiSpecErr = newAPISpec() })
	if apiSpecErr != nil {
		t.Fatal(apiSpecErr)
	}
	return apiSpecVal
}

func newAPISpec() (*apiSpec, error) {
	doc, err := libopenapi.NewDocument(apispec.YAML)
	if err != nil {
		return nil, fmt.Errorf("the API description: %w", err)
	}
	v, errs := validator.NewValidator(doc, config.WithFormatAssertions(), config.WithContentAssertions())
	if len(errs) > 0 {
		return nil, fmt.Errorf("the API description: %v", errs)
	}
	if ok, verrs := v.ValidateDocument(); !ok {
		return nil, fmt.Errorf("the API description is not valid OpenAPI: %s", describe(verrs))
	}
	return &apiSpec{v: v}, nil
}

// Check serves next, checking each API request and its answer against
// the description, and fails t on what does not match:
//   - a request the description allows must get an answer it describes;
//   - a request it does not allow (a bad body, a missing key, a path or
//     method it does not name) must be refused with a 4xx, itself
//     described when the operation is.
func (s *apiSpec) Check(t testing.TB, next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !strings.HasPrefix(r.URL.Path, APIPrefix) {
			next.ServeHTTP(w, r)
			return
		}
		body, err := io.ReadAll(r.Body)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		r.Body = io.NopCloser(bytes.NewReader(body))
		rec := httptest.NewRecorder()
		next.ServeHTTP(rec, r)
		resp := rec.Result()
		for k, vs := range resp.Header {
			w.Header()[k] = vs
		}
		w.WriteHeader(resp.StatusCode)
		_, _ = w.Write(rec.Body.Bytes())

		if r.Context().Err() != nil {
			// The client went away (a long poll given up: 499): no
			// answer reached anyone.
			return
		}
		req := r.Clone(r.Context())
		req.Body = io.NopCloser(bytes.NewReader(body))
		answer := rec.Body.Bytes()
		if resp.Header.Get("Content-Encoding") == "gzip" {
			zr, err := gzip.NewReader(bytes.NewReader(answer))
			if err == nil {
				answer, err = io.ReadAll(zr)
			}
			if err != nil {
				t.Errorf("API description: %s %s: the gzip answer: %v", r.Method, r.URL.RequestURI(), err)
				return
			}
			resp.Header.Del("Content-Encoding")
		}
		if problem := s.check(req, resp, answer); problem != "" {
			t.Errorf("API description: %s %s (%d): %s", r.Method, r.URL.RequestURI(), resp.StatusCode, problem)
		}
	})
}

// check says what of the exchange does not match the description, or "".
func (s *apiSpec) check(req *http.Request, resp *http.Response, body []byte) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	reqOK, reqErrs := s.v.ValidateHttpRequestSync(req)
	if !reqOK {
		if resp.StatusCode < 400 || resp.StatusCode >= 500 {
			return "the request does not match the description, yet it was not refused: " + describe(reqErrs)
		}
		if unknownOperation(reqErrs) {
			// A path or method the description does not name: a
			// route the API does not have, as the 4xx says.
			return ""
		}
	}
	resp.Body = io.NopCloser(bytes.NewReader(body))
	if ok, errs := s.v.ValidateHttpResponse(req, resp); !ok {
		return "the answer does not match the description: " + describe(errs)
	}
	return ""
}

// unknownOperation: the errors say the description names no such path or
// method.
func unknownOperation(errs []*valerrors.ValidationError) bool {
	for _, e := range errs {
		if e.ValidationType == "path" || e.ValidationSubType == "missingOperation" {
			return true
		}
	}
	return false
}

func describe(errs []*valerrors.ValidationError) string {
	var b strings.Builder
	for _, e := range errs {
		fmt.Fprintf(&b, "\n  - %s", e.Message)
		if e.Reason != "" {
			fmt.Fprintf(&b, ": %s", e.Reason)
		}
		for _, f := range e.SchemaValidationErrors {
			fmt.Fprintf(&b, "\n      %s: %s", f.FieldPath, f.Reason)
		}
	}
	return b.String()
}
