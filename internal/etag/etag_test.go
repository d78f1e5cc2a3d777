package etag_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/kubebyon/kubebyon/internal/etag"
)

func TestOf(t *testing.T) {
	t.Parallel()
	a, err := etag.Of(map[string]int{"b": 2, "a": 1})
	require.NoError(t, err)
	require.Regexp(t, `^"[0-9a-f]{32}"$`, a)
	same, err := etag.Of(map[string]int{"a": 1, "b": 2})
	require.NoError(t, err)
	require.Equal(t, a, same, "the same value, the same tag")
	other, err := etag.Of(map[string]int{"a": 1, "b": 3})
	require.NoError(t, err)
	require.NotEqual(t, a, other)
	_, err = etag.Of(func() {})
	require.Error(t, err)
}

func TestCheck(t *testing.T) {
	t.Parallel()
	only := func(want string) etag.Match { return func(tag string) bool { return tag == want } }
	for _, tt := range []struct {
		name string
		ctx  context.Context
		tag  string
		want error
	}{
		{"no If-Match", context.Background(), `"a"`, nil},
		{"a nil match is none", etag.WithMatch(context.Background(), nil), `"a"`, nil},
		{"the tag", etag.WithMatch(context.Background(), only(`"a"`)), `"a"`, nil},
		{"another tag", etag.WithMatch(context.Background(), only(`"a"`)), `"b"`, etag.ErrPreconditionFailed},
	} {
		require.ErrorIs(t, etag.Check(tt.ctx, tt.tag), tt.want, tt.name)
	}
}
