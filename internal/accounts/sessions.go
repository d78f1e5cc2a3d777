package accounts

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgtype"

	"github.com/kubebyon/kubebyon/queries"
)

// ErrNoSession is a signed-in session that ended: signed out elsewhere,
// reset, or its account disabled.
var ErrNoSession = errors.New("accounts: no such session")

// SessionUser is the user signed in by the session sid, with when the
// session was last seen and their unread notifications; ErrNoSession when
// it ended.
func (s *Service) SessionUser(ctx context.Context, sid string) (queries.UserSessionAuthenticateRow, error) {
	row, err := queries.New(s.Pool).UserSessionAuthenticate(ctx, sid)
	if errors.Is(err, pgx.ErrNoRows) {
		return queries.UserSessionAuthenticateRow{}, ErrNoSession
	}
	if err != nil {
		return queries.UserSessionAuthenticateRow{}, fmt.Errorf("authenticate session: %w", err)
	}
	return row, nil
}

// SetSessionOrg makes orgID the organization that user userID's session
// sid works in (read back with the session, SessionFindSignedIn).
func (s *Service) SetSessionOrg(ctx context.Context, sid string, userID, orgID int64) error {
	err := queries.New(s.Pool).UserSessionSetOrg(ctx, queries.UserSessionSetOrgParams{ID: sid, UserID: userID, OrgID: pgtype.Int8{Int64: orgID, Valid: true}})
	if err != nil {
		return fmt.Errorf("set the session's organization: %w", err)
	}
	return nil
}

// TouchSession records that the session sid was seen now.
func (s *Service) TouchSession(ctx context.Context, sid string) error {
	if err := queries.New(s.Pool).UserSessionTouch(ctx, sid); err != nil {
		return fmt.Errorf("touch session: %w", err)
	}
	return nil
}
