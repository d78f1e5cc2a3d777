package orgs

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgtype"

	"github.com/kubebyon/kubebyon/internal/audit"
	"github.com/kubebyon/kubebyon/internal/input"
	"github.com/kubebyon/kubebyon/internal/notify"
	"github.com/kubebyon/kubebyon/queries"
)

// InvitationTTL is how long an invitation's link works.
const InvitationTTL = 7 * 24 * time.Hour

// The states of an invitation.
const (
	InvitationPending  = "pending"
	InvitationAccepted = "accepted"
	InvitationExpired  = "expired"
	InvitationRevoked  = "revoked"
)

// Why an invitation's link does not work, or cannot be used by this
// account (catalog message IDs).
var (
	ErrInvitationUnknown    = errors.New("ErrOrgInvitationUnknown")
	ErrInvitationNotPending = errors.New("ErrOrgInvitationNotPending")
	ErrInvitationOtherEmail = errors.New("ErrOrgInvitationOtherEmail")
	// ErrInvitationNotFound is no invitation of the organization by that
	// id.
	ErrInvitationNotFound = errors.New("ErrOrgInvitationNotFound")
)

// FieldEmail is the invited address's field in errors.
const FieldEmail = "email"

// InvitationState is inv's state at now.
func InvitationState(inv queries.OrgInvitation, now time.Time) string {
	switch {
	case inv.AcceptedAt.Valid:
		return InvitationAccepted
	case inv.RevokedAt.Valid:
		return InvitationRevoked
	case !now.Before(inv.ExpiresAt.Time):
		return InvitationExpired
	}
	return InvitationPending
}

// tokenHash is the HMAC under which an invitation's token is stored.
func (s *Service) tokenHash(token string) string {
	return s.Box.MAC("org-invitation", []byte(token))
}

// Invite invites email to organization id in role, for the acting
// member, and mails the link in lang: owners may invite to any role,
// admins to any but owner (ErrForbidden); others none. An address that
// is a member's already is the field's error; its pending invitation is
// replaced by this one.
func (s *Service) Invite(ctx context.Context, id int64, email string, role Role, lang string, actor audit.Actor) (queries.OrgInvitation, error) {
	errs := input.Errors{}
	email, ok := input.Email(email)
	email = strings.ToLower(email)
	if !ok || !input.Storable(email) {
		errs[FieldEmail] = "ErrEmailInvalid"
	}
	if !role.Valid() {
		errs["role"] = "ErrOrgRoleInvalid"
	}
	if len(errs) > 0 {
		return queries.OrgInvitation{}, errs
	}
	var inv queries.OrgInvitation
	err := pgx.BeginFunc(ctx, s.Pool, func(tx pgx.Tx) error {
		q := queries.New(tx)
		m, err := s.lockAsManager(ctx, q, id, actor.UserID)
		if err != nil {
			return err
		}
		if role == Owner && !Allows(m.Role, ManageOwners) {
			return ErrForbidden
		}
		if _, err := q.OrgMemberByEmail(ctx, queries.OrgMemberByEmailParams{OrgID: id, Email: email}); err == nil {
			return input.Errors{FieldEmail: "ErrOrgAlreadyMember"}
		} else if !errors.Is(err, pgx.ErrNoRows) {
			return fmt.Errorf("look up member %s: %w", email, err)
		}
		now := s.now()
		if _, err := q.OrgInvitationRevokePending(ctx, queries.OrgInvitationRevokePendingParams{OrgID: id, Email: email, Now: ts(now)}); err != nil {
			return fmt.Errorf("revoke the pending invitation of %s: %w", email, err)
		}
		token := rand.Text()
		inv, err = q.OrgInvitationCreate(ctx, queries.OrgInvitationCreateParams{
			OrgID: id, Email: email, Role: string(role), TokenHash: s.tokenHash(token),
			InvitedBy: pgInt8(actor.UserID), ExpiresAt: ts(now.Add(InvitationTTL)),
		})
		if err != nil {
			return fmt.Errorf("create invitation: %w", err)
		}
		if err := audit.Record(ctx, q, actor, audit.Event{
			Action: "org.invite", TargetType: "organization", TargetID: fmt.Sprint(id),
			Details: map[string]any{"email": email, "role": role, "invitation_id": inv.ID},
		}); err != nil {
			return err
		}
		args, err := notify.NewEmail(s.Box, email, lang, notify.EmailOrgInvitation, map[string]any{
			"Token": token, "Inviter": actor.Email, "Organization": m.Org.Name, "Role": string(role),
			"Days":    int(InvitationTTL / (24 * time.Hour)),
			"Expires": inv.ExpiresAt.Time.UTC().Format("2006-01-02 15:04 MST"),
		})
		if err != nil {
			return err
		}
		if _, err := s.River.InsertTx(ctx, tx, args, nil); err != nil {
			return fmt.Errorf("enqueue invitation email: %w", err)
		}
		return nil
	})
	return inv, err
}

// Invitation is one invitation as the organization's page lists it.
type Invitation struct {
	queries.OrgInvitation
	State     string
	InvitedBy string // the inviter's address; "" once their account is gone
}

// Invitations is organization id's latest invitations, newest first,
// for a member (userID) of it: ErrNotFound for anyone else.
func (s *Service) Invitations(ctx context.Context, userID, id int64) ([]Invitation, error) {
	q := queries.New(s.Pool)
	if _, err := s.Get(ctx, userID, id); err != nil {
		return nil, err
	}
	rows, err := q.OrgInvitationList(ctx, queries.OrgInvitationListParams{OrgID: id, MemberID: userID})
	if err != nil {
		return nil, fmt.Errorf("list the invitations of organization %d: %w", id, err)
	}
	now := s.now()
	out := make([]Invitation, 0, len(rows))
	for _, r := range rows {
		inv := queries.OrgInvitation{
			ID: r.ID, OrgID: r.OrgID, Email: r.Email, Role: r.Role, InvitedBy: r.InvitedBy, CreatedAt: r.CreatedAt,
			ExpiresAt: r.ExpiresAt, AcceptedAt: r.AcceptedAt, AcceptedUserID: r.AcceptedUserID, RevokedAt: r.RevokedAt,
		}
		out = append(out, Invitation{OrgInvitation: inv, State: InvitationState(inv, now), InvitedBy: r.InvitedByEmail})
	}
	return out, nil
}

// Invitation is invitation invID of organization id, for a member
// (userID) of it: ErrNotFound for anyone else, ErrInvitationNotFound for
// an invitation the organization does not have.
func (s *Service) Invitation(ctx context.Context, userID, id, invID int64) (Invitation, error) {
	if _, err := s.Get(ctx, userID, id); err != nil {
		return Invitation{}, err
	}
	r, err := queries.New(s.Pool).OrgInvitationGet(ctx, queries.OrgInvitationGetParams{ID: invID, OrgID: id, MemberID: userID})
	if errors.Is(err, pgx.ErrNoRows) {
		return Invitation{}, ErrInvitationNotFound
	}
	if err != nil {
		return Invitation{}, fmt.Errorf("read invitation %d of organization %d: %w", invID, id, err)
	}
	return Invitation{OrgInvitation: r.OrgInvitation, State: InvitationState(r.OrgInvitation, s.now()), InvitedBy: r.InvitedByEmail}, nil
}

// RevokeInvitation stops invitation invID of organization id working, for
// a member who may manage members: ErrNotFound for an unknown
// organization, ErrInvitationNotFound for an unknown invitation,
// ErrInvitationNotPending for one accepted or revoked.
func (s *Service) RevokeInvitation(ctx context.Context, id, invID int64, actor audit.Actor) error {
	return pgx.BeginFunc(ctx, s.Pool, func(tx pgx.Tx) error {
		q := queries.New(tx)
		if _, err := s.lockAsManager(ctx, q, id, actor.UserID); err != nil {
			return err
		}
		inv, err := q.OrgInvitationRevoke(ctx, queries.OrgInvitationRevokeParams{ID: invID, OrgID: id, Now: ts(s.now())})
		if errors.Is(err, pgx.ErrNoRows) {
			if _, err := q.OrgInvitationGet(ctx, queries.OrgInvitationGetParams{ID: invID, OrgID: id, MemberID: actor.UserID}); errors.Is(err, pgx.ErrNoRows) {
				return ErrInvitationNotFound
			} else if err != nil {
				return fmt.Errorf("read invitation %d: %w", invID, err)
			}
			return ErrInvitationNotPending
		}
		if err != nil {
			return fmt.Errorf("revoke invitation %d: %w", invID, err)
		}
		return audit.Record(ctx, q, actor, audit.Event{
			Action: "org.invitation_revoke", TargetType: "organization", TargetID: fmt.Sprint(id),
			Details: map[string]any{"email": inv.Email, "invitation_id": invID},
		})
	})
}

// Invited is an invitation as its link shows it.
type Invited struct {
	Invitation   queries.OrgInvitation
	Organization string
	InvitedBy    string
	State        string
}

// Lookup is the invitation a link's token names (ErrInvitationUnknown).
func (s *Service) Lookup(ctx context.Context, token string) (Invited, error) {
	if token == "" || len(token) > 100 {
		return Invited{}, ErrInvitationUnknown
	}
	r, err := queries.New(s.Pool).OrgInvitationByHash(ctx, s.tokenHash(token))
	if errors.Is(err, pgx.ErrNoRows) {
		return Invited{}, ErrInvitationUnknown
	}
	if err != nil {
		return Invited{}, fmt.Errorf("look up invitation: %w", err)
	}
	return Invited{Invitation: r.OrgInvitation, Organization: r.OrgName, InvitedBy: r.InvitedByEmail,
		State: InvitationState(r.OrgInvitation, s.now())}, nil
}

// Accept uses the invitation a link's token names for user, who must
// have the invited address (ErrInvitationOtherEmail): user becomes a
// member in the invited role (one already keeps their role). It returns
// the organization's id. ErrInvitationUnknown, ErrInvitationNotPending
// (accepted, revoked or expired).
func (s *Service) Accept(ctx context.Context, token string, user queries.User, actor audit.Actor) (int64, error) {
	if token == "" || len(token) > 100 {
		return 0, ErrInvitationUnknown
	}
	var orgID int64
	err := pgx.BeginFunc(ctx, s.Pool, func(tx pgx.Tx) error {
		q := queries.New(tx)
		inv, err := q.OrgInvitationLockByHash(ctx, s.tokenHash(token))
		if errors.Is(err, pgx.ErrNoRows) {
			return ErrInvitationUnknown
		}
		if err != nil {
			return fmt.Errorf("look up invitation: %w", err)
		}
		now := s.now()
		if InvitationState(inv, now) != InvitationPending {
			return ErrInvitationNotPending
		}
		if !strings.EqualFold(inv.Email, user.Email) {
			return ErrInvitationOtherEmail
		}
		orgID = inv.OrgID
		if _, err := q.OrgMemberAddIfAbsent(ctx, queries.OrgMemberAddIfAbsentParams{OrgID: inv.OrgID, UserID: user.ID, Role: inv.Role}); err != nil {
			return fmt.Errorf("add member to organization %d: %w", inv.OrgID, err)
		}
		if err := q.OrgInvitationAccept(ctx, queries.OrgInvitationAcceptParams{ID: inv.ID, UserID: pgInt8(user.ID), Now: ts(now)}); err != nil {
			return fmt.Errorf("accept invitation %d: %w", inv.ID, err)
		}
		return audit.Record(ctx, q, actor, audit.Event{
			Action: "org.invitation_accept", TargetType: "organization", TargetID: fmt.Sprint(inv.OrgID),
			Details: map[string]any{"role": inv.Role, "invitation_id": inv.ID},
		})
	})
	return orgID, err
}

// lockAsManager locks organization id for a member userID who may manage
// members: ErrNotFound for a non-member, ErrForbidden for one who may
// not.
func (s *Service) lockAsManager(ctx context.Context, q *queries.Queries, id, userID int64) (Membership, error) {
	role, err := q.OrgLockForMember(ctx, queries.OrgLockForMemberParams{ID: id, UserID: userID})
	if errors.Is(err, pgx.ErrNoRows) {
		return Membership{}, ErrNotFound
	}
	if err != nil {
		return Membership{}, fmt.Errorf("lock organization %d: %w", id, err)
	}
	if !Allows(Role(role), ManageMembers) {
		return Membership{}, ErrForbidden
	}
	r, err := q.OrgGetForMember(ctx, queries.OrgGetForMemberParams{ID: id, UserID: userID})
	if err != nil {
		return Membership{}, fmt.Errorf("read organization %d: %w", id, err)
	}
	return Membership{Org: r.Organization, Role: Role(r.Role)}, nil
}

func ts(t time.Time) pgtype.Timestamptz { return pgtype.Timestamptz{Time: t, Valid: true} }
