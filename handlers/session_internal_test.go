package handlers

import (
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"

	"github.com/alexedwards/scs/v2"
	"github.com/alexedwards/scs/v2/memstore"
	"github.com/labstack/echo/v4"
	"github.com/stretchr/testify/require"

	"github.com/kubebyon/kubebyon/internal/branding"
)

// countingStore counts the sessions saved.
type countingStore struct {
	scs.Store
	commits atomic.Int32
}

func (s *countingStore) Commit(token string, b []byte, expiry time.Time) error {
	s.commits.Add(1)
	return s.Store.Commit(token, b, expiry)
}

// TestKeepSessionAlive checks that a stored session is saved when its data
// changes, and when it was last saved over touchEvery ago, and at no other
// request; and that a browser without a session gets none from it.
func TestKeepSessionAlive(t *testing.T) {
	t.Parallel()
	store := &countingStore{Store: memstore.New()}
	sm := scs.New()
	sm.Store = store
	sm.Lifetime = branding.DefaultSessionLifetime
	h := &Handlers{sessions: sm}
	e := echo.New()
	e.Use(echo.WrapMiddleware(sm.LoadAndSave), h.keepSessionAlive)
	e.GET("/read", func(c echo.Context) error { return c.String(http.StatusOK, sm.GetString(c.Request().Context(), "k")) })
	e.GET("/put", func(c echo.Context) error {
		sm.Put(c.Request().Context(), "k", "v")
		return c.String(http.StatusOK, "put")
	})
	// As the session would be once keepSessionAlive last saved it longer
	// than touchEvery ago.
	e.GET("/age", func(c echo.Context) error {
		sm.Put(c.Request().Context(), sessionSeen, time.Now().Add(-touchEvery-time.Second).Unix())
		return c.String(http.StatusOK, "aged")
	})

	var cookie *http.Cookie
	get := func(path string) *http.Response {
		t.Helper()
		req := httptest.NewRequest(http.MethodGet, path, nil)
		if cookie != nil {
			req.AddCookie(cookie)
		}
		rec := httptest.NewRecorder()
		e.ServeHTTP(rec, req)
		require.Equal(t, http.StatusOK, rec.Code)
		return rec.Result()
	}

	resp := get("/read")
	require.Empty(t, resp.Cookies(), "no session from merely visiting")
	require.Zero(t, store.commits.Load())

	resp = get("/put")
	require.Len(t, resp.Cookies(), 1)
	cookie = resp.Cookies()[0]
	require.EqualValues(t, 1, store.commits.Load(), "a change is saved")

	get("/read") // never kept alive yet: saved with its time
	require.EqualValues(t, 2, store.commits.Load())
	for range 3 {
		resp = get("/read")
		require.Empty(t, resp.Cookies(), "an unchanged session sets no cookie")
	}
	require.EqualValues(t, 2, store.commits.Load(), "an unchanged session is not saved again within touchEvery")

	get("/age")
	require.EqualValues(t, 3, store.commits.Load())
	get("/read")
	require.EqualValues(t, 4, store.commits.Load(), "saved again once touchEvery has passed")
	get("/read")
	require.EqualValues(t, 4, store.commits.Load())
}
