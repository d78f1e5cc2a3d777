package orgs

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgtype"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/riverqueue/river"

	"github.com/kubebyon/kubebyon/internal/audit"
	"github.com/kubebyon/kubebyon/internal/clusteraccess"
	"github.com/kubebyon/kubebyon/internal/input"
	"github.com/kubebyon/kubebyon/internal/secrets"
	"github.com/kubebyon/kubebyon/queries"
)

// Errors of the organization services (catalog message IDs).
var (
	// ErrNotFound is an organization the user is not a member of, or a
	// member who is not one: as if it did not exist.
	ErrNotFound = errors.New("ErrOrgNotFound")
	// ErrForbidden is an action the member's role does not allow.
	ErrForbidden = errors.New("ErrOrgForbidden")
	// ErrLastOwner refuses to leave an organization without an owner.
	ErrLastOwner = errors.New("ErrOrgLastOwner")
	// ErrPersonalOwner refuses to take the owner of a personal
	// organization out of it, or out of its ownership.
	ErrPersonalOwner = errors.New("ErrOrgPersonalOwner")
)

// FieldName is the name's field in errors.
const FieldName = "name"

// maxName bounds an organization's name, in characters.
const maxName = 100

// Service is the organizations and their members.
type Service struct {
	Pool *pgxpool.Pool
	// Box makes the invitations' token hashes and seals their emails;
	// River queues the emails. Both only for invitations.
	Box   *secrets.Box
	River *river.Client[pgx.Tx]
	// Now is the clock of invitations' expiry; nil: time.Now.
	Now func() time.Time
}

func (s *Service) now() time.Time {
	if s.Now != nil {
		return s.Now()
	}
	return time.Now()
}

// Membership is an organization as one of its members sees it.
type Membership struct {
	Org  queries.Organization
	Role Role
}

// Personal reports whether m is the member's personal organization.
func (m Membership) Personal() bool { return m.Org.PersonalOf.Valid }

// Create makes an organization named name, of which the acting user is
// the owner.
func (s *Service) Create(ctx context.Context, name string, actor audit.Actor) (queries.Organization, error) {
	name = strings.TrimSpace(name)
	switch {
	case name == "":
		return queries.Organization{}, input.Errors{FieldName: "ErrOrgNameRequired"}
	case utf8.RuneCountInString(name) > maxName || !input.Storable(name):
		return queries.Organization{}, input.Errors{FieldName: "ErrOrgNameInvalid"}
	}
	var o queries.Organization
	err := pgx.BeginFunc(ctx, s.Pool, func(tx pgx.Tx) error {
		q := queries.New(tx)
		var err error
		o, err = q.OrgCreate(ctx, queries.OrgCreateParams{Name: name, CreatedBy: pgInt8(actor.UserID)})
		if err != nil {
			return fmt.Errorf("create organization: %w", err)
		}
		if err := q.OrgMemberAdd(ctx, queries.OrgMemberAddParams{OrgID: o.ID, UserID: actor.UserID, Role: string(Owner)}); err != nil {
			return fmt.Errorf("add the owner of organization %d: %w", o.ID, err)
		}
		return audit.Record(ctx, q, actor, audit.Event{
			Action: "org.create", TargetType: "organization", TargetID: fmt.Sprint(o.ID), Details: map[string]any{"name": name},
		})
	})
	return o, err
}

// List is the organizations userID is a member of, the personal one
// first, then by name.
func (s *Service) List(ctx context.Context, userID int64) ([]Membership, error) {
	rows, err := queries.New(s.Pool).OrgListForUser(ctx, userID)
	if err != nil {
		return nil, fmt.Errorf("list the organizations of user %d: %w", userID, err)
	}
	out := make([]Membership, 0, len(rows))
	for _, r := range rows {
		out = append(out, Membership{Org: r.Organization, Role: Role(r.Role)})
	}
	return out, nil
}

// Get is organization id as its member userID sees it: ErrNotFound for
// anyone else.
func (s *Service) Get(ctx context.Context, userID, id int64) (Membership, error) {
	r, err := queries.New(s.Pool).OrgGetForMember(ctx, queries.OrgGetForMemberParams{ID: id, UserID: userID})
	if errors.Is(err, pgx.ErrNoRows) {
		return Membership{}, ErrNotFound
	}
	if err != nil {
		return Membership{}, fmt.Errorf("read organization %d: %w", id, err)
	}
	return Membership{Org: r.Organization, Role: Role(r.Role)}, nil
}

// Personal is userID's personal organization.
func (s *Service) Personal(ctx context.Context, userID int64) (Membership, error) {
	o, err := queries.New(s.Pool).OrgPersonal(ctx, pgInt8(userID))
	if err != nil {
		return Membership{}, fmt.Errorf("read the personal organization of user %d: %w", userID, err)
	}
	return Membership{Org: o, Role: Owner}, nil
}

// Person is one member of an organization.
type Person struct {
	UserID int64
	Email  string
	Name   string
	Role   Role
}

// Members is organization id's members, owners first, for a member
// (userID) of it: ErrNotFound for anyone else.
func (s *Service) Members(ctx context.Context, userID, id int64) ([]Person, error) {
	rows, err := queries.New(s.Pool).OrgMembers(ctx, queries.OrgMembersParams{OrgID: id, MemberID: userID})
	if err != nil {
		return nil, fmt.Errorf("list the members of organization %d: %w", id, err)
	}
	if len(rows) == 0 {
		// Every organization has an owner: none is a non-member asking.
		return nil, ErrNotFound
	}
	out := make([]Person, 0, len(rows))
	for _, r := range rows {
		out = append(out, Person{UserID: r.UserID, Email: r.Email, Name: r.Name, Role: Role(r.Role)})
	}
	return out, nil
}

// SetRole gives member userID of organization id the role role, for the
// acting member: owners may change any role, admins those of members and
// viewers into member, viewer or admin; nobody else any (ErrForbidden).
// The last owner stays one (ErrLastOwner), as does the owner of a
// personal organization (ErrPersonalOwner).
func (s *Service) SetRole(ctx context.Context, id, userID int64, role Role, actor audit.Actor) error {
	if !role.Valid() {
		return input.Errors{"role": "ErrOrgRoleInvalid"}
	}
	return s.changeMember(ctx, id, userID, actor, func(q *queries.Queries, m memberChange) error {
		if !Allows(m.actorRole, ManageMembers) {
			// Not even one's own: changeMember lets members leave.
			return ErrForbidden
		}
		if m.current == role {
			return nil
		}
		if (m.current == Owner || role == Owner) && !Allows(m.actorRole, ManageOwners) {
			return ErrForbidden
		}
		if err := m.keepOwner(ctx, q); err != nil {
			return err
		}
		if err := q.OrgMemberSetRole(ctx, queries.OrgMemberSetRoleParams{OrgID: id, UserID: userID, Role: string(role)}); err != nil {
			return fmt.Errorf("set the role of user %d in organization %d: %w", userID, id, err)
		}
		// Their kubeconfigs carry the old role's rights: they end, and
		// the next download has the new role's.
		if err := s.revokeAccess(ctx, m.tx, q, id, userID); err != nil {
			return err
		}
		return audit.Record(ctx, q, actor, audit.Event{
			Action: "org.member_role", TargetType: "organization", TargetID: fmt.Sprint(id),
			Details: map[string]any{"user_id": userID, "from": m.current, "to": role},
		})
	})
}

// Remove takes member userID out of organization id, for the acting
// member: anyone may leave (userID is the actor's own), owners may remove
// anyone, admins members and viewers (ErrForbidden otherwise). The
// member's API keys in the organization are revoked with it. The last
// owner cannot leave (ErrLastOwner), nor the owner of a personal
// organization (ErrPersonalOwner).
func (s *Service) Remove(ctx context.Context, id, userID int64, actor audit.Actor) error {
	return s.changeMember(ctx, id, userID, actor, func(q *queries.Queries, m memberChange) error {
		if m.current == Owner && !Allows(m.actorRole, ManageOwners) {
			return ErrForbidden
		}
		if err := m.keepOwner(ctx, q); err != nil {
			return err
		}
		if err := q.OrgMemberRemove(ctx, queries.OrgMemberRemoveParams{OrgID: id, UserID: userID}); err != nil {
			return fmt.Errorf("remove user %d from organization %d: %w", userID, id, err)
		}
		keys, err := q.ApiKeyRevokeForMember(ctx, queries.ApiKeyRevokeForMemberParams{OrgID: id, UserID: userID})
		if err != nil {
			return fmt.Errorf("revoke the keys of user %d in organization %d: %w", userID, id, err)
		}
		if err := s.revokeAccess(ctx, m.tx, q, id, userID); err != nil {
			return err
		}
		return audit.Record(ctx, q, actor, audit.Event{
			Action: "org.member_remove", TargetType: "organization", TargetID: fmt.Sprint(id),
			Details: map[string]any{"user_id": userID, "role": m.current, "api_keys_revoked": keys},
		})
	})
}

// memberChange is a change of one member's place in an organization, as
// changeMember found it under the organization's lock.
type memberChange struct {
	tx        pgx.Tx
	org       queries.Organization
	userID    int64
	actorRole Role
	current   Role
}

// keepOwner refuses a change that takes an owner out of ownership when
// they are the last owner, or the owner of their personal organization.
func (m memberChange) keepOwner(ctx context.Context, q *queries.Queries) error {
	if m.current != Owner {
		return nil
	}
	if m.org.PersonalOf.Valid && m.org.PersonalOf.Int64 == m.userID {
		return ErrPersonalOwner
	}
	n, err := q.OrgOwnerCount(ctx, m.org.ID)
	if err != nil {
		return fmt.Errorf("count the owners of organization %d: %w", m.org.ID, err)
	}
	if n <= 1 {
		return ErrLastOwner
	}
	return nil
}

// changeMember runs change in a transaction holding organization id's
// lock, after checking that the actor is a member (else ErrNotFound), who
// may manage members or is changing themselves, and that userID is a
// member (ErrNotFound).
func (s *Service) changeMember(ctx context.Context, id, userID int64, actor audit.Actor, change func(*queries.Queries, memberChange) error) error {
	return pgx.BeginFunc(ctx, s.Pool, func(tx pgx.Tx) error {
		q := queries.New(tx)
		actorRole, err := q.OrgLockForMember(ctx, queries.OrgLockForMemberParams{ID: id, UserID: actor.UserID})
		if errors.Is(err, pgx.ErrNoRows) {
			return ErrNotFound
		}
		if err != nil {
			return fmt.Errorf("lock organization %d: %w", id, err)
		}
		r, err := q.OrgGetForMember(ctx, queries.OrgGetForMemberParams{ID: id, UserID: userID})
		if errors.Is(err, pgx.ErrNoRows) {
			return ErrNotFound
		}
		if err != nil {
			return fmt.Errorf("read the member %d of organization %d: %w", userID, id, err)
		}
		if userID != actor.UserID && !Allows(Role(actorRole), ManageMembers) {
			return ErrForbidden
		}
		return change(q, memberChange{tx: tx, org: r.Organization, userID: userID, actorRole: Role(actorRole), current: Role(r.Role)})
	})
}

// revokeAccess queues the end of member userID's own access to each of
// organization id's clusters (clusteraccess.RevokeArgs), in tx: one small
// job per cluster, which tries again while a cluster cannot be reached.
func (s *Service) revokeAccess(ctx context.Context, tx pgx.Tx, q *queries.Queries, id, userID int64) error {
	ids, err := q.ClusterIDsOfOrg(ctx, id)
	if err != nil {
		return fmt.Errorf("list the clusters of organization %d: %w", id, err)
	}
	if len(ids) == 0 {
		return nil
	}
	if s.River == nil {
		return fmt.Errorf("revoke the cluster access of user %d: no job queue", userID)
	}
	jobs := make([]river.InsertManyParams, len(ids))
	for i, c := range ids {
		jobs[i] = river.InsertManyParams{Args: clusteraccess.RevokeArgs{ClusterID: c, UserID: userID}}
	}
	if _, err := s.River.InsertManyTx(ctx, tx, jobs); err != nil {
		return fmt.Errorf("queue the cluster access revocations of user %d: %w", userID, err)
	}
	return nil
}

func pgInt8(v int64) pgtype.Int8 { return pgtype.Int8{Int64: v, Valid: v != 0} }
