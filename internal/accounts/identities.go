package accounts

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/kubebyon/kubebyon/internal/audit"
	"github.com/kubebyon/kubebyon/queries"
)

// Errors of the sign-in methods page (catalog message IDs).
var (
	// ErrIdentityNotFound: no such identity of this user.
	ErrIdentityNotFound = errors.New("ErrIdentityNotFound")
	// ErrLastSignInMethod: unlinking would leave no way to sign in.
	ErrLastSignInMethod = errors.New("ErrIdentityLastSignIn")
	// ErrIdentityOtherAccount: the provider's account signs in to another
	// account of this platform.
	ErrIdentityOtherAccount = errors.New("ErrIdentityOtherAccount")
)

// Identities lists the accounts at providers that sign in to the user.
func (s *Service) Identities(ctx context.Context, userID int64) ([]queries.OauthIdentity, error) {
	ids, err := queries.New(s.Pool).OAuthIdentityListByUser(ctx, userID)
	if err != nil {
		return nil, fmt.Errorf("list identities: %w", err)
	}
	return ids, nil
}

// LinkIdentityToUser links an identity to a signed-in user who asked for
// it from their settings, whatever email the provider gives: signing in to
// both proves the person holds both. An identity already linked to the
// user changes nothing; one linked to another account is refused.
func (s *Service) LinkIdentityToUser(ctx context.Context, id Identity, u queries.User, actor audit.Actor) error {
	return s.inTx(ctx, func(tx pgx.Tx, q *queries.Queries) error {
		owner, err := q.OAuthIdentityGetUser(ctx, queries.OAuthIdentityGetUserParams{Provider: id.Provider, Subject: id.Subject})
		switch {
		case err == nil && owner.ID == u.ID:
			return nil
		case err == nil:
			return ErrIdentityOtherAccount
		case !errors.Is(err, pgx.ErrNoRows):
			return fmt.Errorf("look up identity: %w", err)
		}
		return linkIdentity(ctx, q, u, id, actor)
	})
}

// UnlinkIdentity removes one of the user's identities, unless it is the
// only way left to sign in (no password, no other identity).
func (s *Service) UnlinkIdentity(ctx context.Context, userID, identityID int64, actor audit.Actor) error {
	return s.inTx(ctx, func(tx pgx.Tx, q *queries.Queries) error {
		// Locked, so that two unlinks at once cannot each leave the other.
		u, err := q.UserLockByID(ctx, userID)
		if err != nil {
			return fmt.Errorf("lock user %d: %w", userID, err)
		}
		ids, err := q.OAuthIdentityListByUser(ctx, userID)
		if err != nil {
			return fmt.Errorf("list identities: %w", err)
		}
		var gone *queries.OauthIdentity
		for i := range ids {
			if ids[i].ID == identityID {
				gone = &ids[i]
			}
		}
		if gone == nil {
			return ErrIdentityNotFound
		}
		if !u.PasswordHash.Valid && len(ids) == 1 {
			return ErrLastSignInMethod
		}
		if _, err := q.OAuthIdentityDelete(ctx, queries.OAuthIdentityDeleteParams{ID: identityID, UserID: userID}); err != nil {
			return fmt.Errorf("unlink identity: %w", err)
		}
		return audit.Record(ctx, q, actor, audit.Event{
			Action: "user.unlink_identity", TargetType: "user", TargetID: fmt.Sprint(userID),
			Details: map[string]any{"provider": gone.Provider, "subject": gone.Subject},
		})
	})
}
