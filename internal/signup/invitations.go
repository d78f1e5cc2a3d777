package signup

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgtype"

	"github.com/kubebyon/kubebyon/internal/secrets"
	"github.com/kubebyon/kubebyon/queries"
)

// InvitationTTL is how long an invitation's link works.
const InvitationTTL = 7 * 24 * time.Hour

// States of an invitation.
const (
	StatePending  = "pending"
	StateAccepted = "accepted"
	StateExpired  = "expired"
	StateRevoked  = "revoked"
)

// Why an invitation's link does not work (catalog message IDs).
var (
	ErrInvitationUnknown  = errors.New("InvitationUnknown")
	ErrInvitationExpired  = errors.New("InvitationExpired")
	ErrInvitationRevoked  = errors.New("InvitationRevoked")
	ErrInvitationAccepted = errors.New("InvitationAccepted")
)

// State is what became of an invitation by now.
func State(inv queries.Invitation, now time.Time) string {
	switch {
	case inv.AcceptedAt.Valid:
		return StateAccepted
	case inv.RevokedAt.Valid:
		return StateRevoked
	case !now.Before(inv.ExpiresAt.Time):
		return StateExpired
	}
	return StatePending
}

// NewToken makes an invitation's token and the hash the row keeps of it.
func NewToken(box *secrets.Box) (token, hash string) {
	token = rand.Text()
	return token, TokenHash(box, token)
}

// TokenHash is the HMAC under which a token is stored.
func TokenHash(box *secrets.Box, token string) string {
	return box.MAC("invitation", []byte(token))
}

// Open finds the invitation a link's token names, with q, if it can be
// accepted at now; else ErrInvitationUnknown, ErrInvitationExpired,
// ErrInvitationRevoked or ErrInvitationAccepted.
func Open(ctx context.Context, q *queries.Queries, box *secrets.Box, token string, now time.Time) (queries.Invitation, error) {
	if token == "" || len(token) > 100 {
		return queries.Invitation{}, ErrInvitationUnknown
	}
	inv, err := q.InvitationGetByHash(ctx, TokenHash(box, token))
	if errors.Is(err, pgx.ErrNoRows) {
		return inv, ErrInvitationUnknown
	}
	if err != nil {
		return inv, fmt.Errorf("look up invitation: %w", err)
	}
	switch State(inv, now) {
	case StateAccepted:
		return inv, ErrInvitationAccepted
	case StateRevoked:
		return inv, ErrInvitationRevoked
	case StateExpired:
		return inv, ErrInvitationExpired
	}
	return inv, nil
}

// Accept uses the invitation id up for the account userID, with q (the
// transaction that made the account). ErrInvitationAccepted: it was used,
// revoked or expired since it was read.
func Accept(ctx context.Context, q *queries.Queries, id, userID int64, now time.Time) error {
	n, err := q.InvitationAccept(ctx, queries.InvitationAcceptParams{
		ID: id, UserID: pgtype.Int8{Int64: userID, Valid: true}, Now: timestamp(now),
	})
	if err != nil {
		return fmt.Errorf("accept invitation: %w", err)
	}
	if n == 0 {
		return ErrInvitationAccepted
	}
	return nil
}
