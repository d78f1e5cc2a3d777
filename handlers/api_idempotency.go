package handlers

import (
	"bytes"
	"errors"
	"io"
	"net/http"
	"strconv"

	"github.com/labstack/echo/v4"

	"github.com/kubebyon/kubebyon/internal/idempotency"
	"github.com/kubebyon/kubebyon/internal/locale"
)

// headerIdempotencyKey names a POST so that it is done once however often
// it is sent (draft-ietf-httpapi-idempotency-key-header).
const headerIdempotencyKey = "Idempotency-Key"

// idempotent runs next, an API POST of userID, at most once per
// Idempotency-Key: the same request with the same key again gets the first
// answer (marked Idempotent-Replayed), waiting for it while the first is
// still running. The same key with another request is 422. A server
// error's answer is not kept, so the request may be sent again. Without
// the header, or for other methods, next runs as it is.
func (h *Handlers) idempotent(c echo.Context, userID int64, next echo.HandlerFunc) error {
	req := c.Request()
	key := req.Header.Get(headerIdempotencyKey)
	if req.Method != http.MethodPost || key == "" {
		return next(c)
	}
	if len(req.Header.Values(headerIdempotencyKey)) > 1 || !idempotency.ValidKey(key) {
		return idempotencyError(c, http.StatusBadRequest, "invalid_idempotency_key", idempotency.ErrKeyInvalid)
	}
	body, err := io.ReadAll(req.Body)
	if err != nil {
		var he *echo.HTTPError
		if errors.As(err, &he) {
			return he
		}
		return echo.NewHTTPError(http.StatusBadRequest, "ErrAPIInvalidJSON").SetInternal(err)
	}
	req.Body = io.NopCloser(bytes.NewReader(body))
	hash := idempotency.Hash(req.Method, req.URL.RequestURI(), body)
	ctx := req.Context()
	claimed, first, err := h.idempotency.Claim(ctx, userID, key, hash)
	switch {
	case errors.Is(err, idempotency.ErrKeyReused):
		return idempotencyError(c, http.StatusUnprocessableEntity, "idempotency_key_reused", err)
	case errors.Is(err, idempotency.ErrInFlight):
		c.Response().Header().Set("Retry-After", "1")
		return idempotencyError(c, http.StatusConflict, "idempotency_key_in_flight", err)
	case err != nil:
		return err
	case !claimed:
		c.Response().Header().Set("Idempotent-Replayed", "true")
		if first.Location != "" {
			c.Response().Header().Set(echo.HeaderLocation, first.Location)
		}
		return c.Blob(first.Status, first.ContentType, first.Body)
	}

	// The answer is written here, errors included, to be kept.
	rec := &recordingWriter{ResponseWriter: c.Response().Writer}
	c.Response().Writer = rec
	if err := next(c); err != nil {
		c.Error(err)
	}
	c.Response().Writer = rec.ResponseWriter
	res := c.Response()
	if res.Status >= 500 {
		return h.idempotency.Release(ctx, userID, key, hash)
	}
	return h.idempotency.Finish(ctx, userID, key, hash, idempotency.Answer{
		Status: res.Status, ContentType: res.Header().Get(echo.HeaderContentType),
		Location: res.Header().Get(echo.HeaderLocation), Body: rec.body.Bytes(),
	})
}

// idempotencyError is the API's error answer with a code of its own.
func idempotencyError(c echo.Context, status int, code string, err error) error {
	return c.JSON(status, apiError{Error: apiErrorBody{Code: code, Message: locale.T(c.Request().Context(), err.Error(), map[string]any{"Max": strconv.Itoa(idempotency.MaxKeyLength)})}})
}

// recordingWriter passes an answer on and keeps a copy of its body.
type recordingWriter struct {
	http.ResponseWriter
	body bytes.Buffer
}

func (w *recordingWriter) Write(b []byte) (int, error) {
	w.body.Write(b)
	return w.ResponseWriter.Write(b)
}

// Unwrap lets http.ResponseController reach the connection's writer.
func (w *recordingWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }
