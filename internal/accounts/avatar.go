package accounts

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/kubebyon/kubebyon/internal/avatars"
	"github.com/kubebyon/kubebyon/queries"
)

// Avatar is a user's picture as served.
type Avatar struct {
	Body        []byte
	ContentType string
	ETag        string
}

// AvatarETag is the version of u's picture: the uploaded one's (has), or
// else that of their generated initials.
func (s *Service) AvatarETag(ctx context.Context, u queries.User) (etag string, has bool, err error) {
	etag, err = queries.New(s.Pool).UserAvatarETag(ctx, u.ID)
	switch {
	case errors.Is(err, pgx.ErrNoRows):
		return avatars.ETag(avatars.InitialsSVG(u.ID, u.Name)), false, nil
	case err != nil:
		return "", false, fmt.Errorf("avatar etag: %w", err)
	}
	return etag, true, nil
}

// Avatar is the user's uploaded picture, or else their generated
// initials; ErrUserNotFound when there is no such user.
func (s *Service) Avatar(ctx context.Context, userID int64) (Avatar, error) {
	q := queries.New(s.Pool)
	a, err := q.UserAvatarGet(ctx, userID)
	if err == nil {
		return Avatar{Body: a.Image, ContentType: "image/png", ETag: a.Etag}, nil
	}
	if !errors.Is(err, pgx.ErrNoRows) {
		return Avatar{}, fmt.Errorf("get avatar: %w", err)
	}
	u, err := q.UserGetByID(ctx, userID)
	if errors.Is(err, pgx.ErrNoRows) {
		return Avatar{}, ErrUserNotFound
	}
	if err != nil {
		return Avatar{}, fmt.Errorf("get user: %w", err)
	}
	svg := avatars.InitialsSVG(u.ID, u.Name)
	return Avatar{Body: svg, ContentType: "image/svg+xml", ETag: avatars.ETag(svg)}, nil
}
