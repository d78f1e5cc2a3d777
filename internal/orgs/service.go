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
	"github.com/kubebyon/kubebyon/internal/etag"
	"github.com/kubebyon/kubebyon/internal/input"
	"github.com/kubebyon/kubebyon/internal/secrets"
	"github.com/kubebyon/kubebyon/queries"
)

// Errors of the organization services (catalog message IDs).
var (
	// ErrNotFound is an organization the user is not a member of: as if
	// it did not exist.
	ErrNotFound = errors.New("ErrOrgNotFound")
	// ErrMemberNotFound is a user who is not a member of an organization
	// its member asks about.
	ErrMemberNotFound = errors.New("ErrOrgMemberNotFound")
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
	name, err := validName(name)
	if err != nil {
		return queries.Organization{}, err
	}
	var o queries.Organization
	err = pgx.BeginFunc(ctx, s.Pool, func(tx pgx.Tx) error {
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

// validName is name as an organization's, trimmed, or the field's error.
func validName(name string) (string, error) {
	name = strings.TrimSpace(name)
	switch {
	case name == "":
		return "", input.Errors{FieldName: "ErrOrgNameRequired"}
	case utf8.RuneCountInString(name) > maxName || !input.Storable(name):
		return "", input.Errors{FieldName: "ErrOrgNameInvalid"}
	}
	return name, nil
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

// Detail is an organization as one of its members sees it, with its
// number of members.
type Detail struct {
	Membership
	MemberCount int64
}

// Detail is organization id as its member userID sees it, with its
// number of members: ErrNotFound for anyone else.
func (s *Service) Detail(ctx context.Context, userID, id int64) (Detail, error) {
	r, err := queries.New(s.Pool).OrgDetailForMember(ctx, queries.OrgDetailForMemberParams{ID: id, UserID: userID})
	if errors.Is(err, pgx.ErrNoRows) {
		return Detail{}, ErrNotFound
	}
	if err != nil {
		return Detail{}, fmt.Errorf("read organization %d: %w", id, err)
	}
	return Detail{Membership: Membership{Org: r.Organization, Role: Role(r.Role)}, MemberCount: r.MemberCount}, nil
}

// Change is what Update changes of an organization: the fields that are
// not nil.
type Change struct {
	Name             *string
	ViewerKubeconfig *bool
}

// Tag is the entity tag of what Update changes of organization o.
func Tag(o queries.Organization) (string, error) {
	return etag.Of([]any{o.Name, o.ViewerKubeconfig})
}

// Update makes change ch to organization id, all of it or nothing, for
// the acting member: its name for those who may Rename, whether viewers
// may download a kubeconfig for those who may ViewerKubeconfig (the
// roles are matched in SQL; ErrForbidden for others, ErrNotFound for a
// non-member). With an If-Match in ctx (etag.WithMatch), only while the
// organization has that tag (Tag), checked under its lock: else
// etag.ErrPreconditionFailed.
func (s *Service) Update(ctx context.Context, id int64, ch Change, actor audit.Actor) error {
	if ch.Name != nil {
		name, err := validName(*ch.Name)
		if err != nil {
			return err
		}
		ch.Name = &name
	}
	return pgx.BeginFunc(ctx, s.Pool, func(tx pgx.Tx) error {
		q := queries.New(tx)
		if _, err := q.OrgLockForMember(ctx, queries.OrgLockForMemberParams{ID: id, UserID: actor.UserID}); errors.Is(err, pgx.ErrNoRows) {
			return ErrNotFound
		} else if err != nil {
			return fmt.Errorf("lock organization %d: %w", id, err)
		}
		r, err := q.OrgGetForMember(ctx, queries.OrgGetForMemberParams{ID: id, UserID: actor.UserID})
		if err != nil {
			return fmt.Errorf("read organization %d: %w", id, err)
		}
		before := r.Organization
		tag, err := Tag(before)
		if err != nil {
			return err
		}
		if err := etag.Check(ctx, tag); err != nil {
			return err
		}
		after := before
		if ch.Name != nil {
			after, err = q.OrgRename(ctx, queries.OrgRenameParams{ID: id, Name: *ch.Name, UserID: actor.UserID, Roles: allowing(Rename)})
			if err != nil {
				return refused(err, fmt.Sprintf("rename organization %d", id))
			}
		}
		if ch.ViewerKubeconfig != nil {
			after, err = q.OrgSetViewerKubeconfig(ctx, queries.OrgSetViewerKubeconfigParams{
				ID: id, ViewerKubeconfig: *ch.ViewerKubeconfig, UserID: actor.UserID, Roles: allowing(ViewerKubeconfig),
			})
			if err != nil {
				return refused(err, fmt.Sprintf("set the viewer kubeconfig of organization %d", id))
			}
		}
		changed := []string{}
		if after.Name != before.Name {
			changed = append(changed, "name")
		}
		if after.ViewerKubeconfig != before.ViewerKubeconfig {
			changed = append(changed, "viewer_kubeconfig")
		}
		if len(changed) == 0 {
			return nil
		}
		return audit.Record(ctx, q, actor, audit.Event{
			Action: "org.update", TargetType: "organization", TargetID: fmt.Sprint(id),
			Details: map[string]any{"changed": changed, "name": after.Name, "viewer_kubeconfig": after.ViewerKubeconfig},
		})
	})
}

// refused is a change's error: no row is a member whose role the
// query's did not match (ErrForbidden).
func refused(err error, what string) error {
	if errors.Is(err, pgx.ErrNoRows) {
		return ErrForbidden
	}
	return fmt.Errorf("%s: %w", what, err)
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
	// Joined is when they became a member.
	Joined time.Time
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
		out = append(out, Person{UserID: r.UserID, Email: r.Email, Name: r.Name, Role: Role(r.Role), Joined: r.CreatedAt.Time})
	}
	return out, nil
}

// Member is member memberID of organization id, for a member (userID) of
// it: ErrNotFound for anyone else, ErrMemberNotFound for a memberID who
// is not a member.
func (s *Service) Member(ctx context.Context, userID, id, memberID int64) (Person, error) {
	if _, err := s.Get(ctx, userID, id); err != nil {
		return Person{}, err
	}
	r, err := queries.New(s.Pool).OrgMemberGet(ctx, queries.OrgMemberGetParams{OrgID: id, UserID: memberID, MemberID: userID})
	if errors.Is(err, pgx.ErrNoRows) {
		return Person{}, ErrMemberNotFound
	}
	if err != nil {
		return Person{}, fmt.Errorf("read member %d of organization %d: %w", memberID, id, err)
	}
	return Person{UserID: r.UserID, Email: r.Email, Name: r.Name, Role: Role(r.Role), Joined: r.CreatedAt.Time}, nil
}

// MemberTag is the entity tag of what SetRole changes of member userID
// in role: the role.
func MemberTag(userID int64, role Role) (string, error) {
	return etag.Of([]any{userID, role})
}

// SetRole gives member userID of organization id the role role, for the
// acting member: owners may change any role, admins those of members and
// viewers into member, viewer or admin; nobody else any (ErrForbidden).
// The last owner stays one (ErrLastOwner), as does the owner of a
// personal organization (ErrPersonalOwner). With an If-Match in ctx
// (etag.WithMatch), only while the member has that tag (MemberTag),
// checked under the organization's lock: else etag.ErrPreconditionFailed.
func (s *Service) SetRole(ctx context.Context, id, userID int64, role Role, actor audit.Actor) error {
	if !role.Valid() {
		return input.Errors{"role": "ErrOrgRoleInvalid"}
	}
	return s.changeMember(ctx, id, userID, actor, func(q *queries.Queries, m memberChange) error {
		if !Allows(m.actorRole, ManageMembers) {
			// Not even one's own: changeMember lets members leave.
			return ErrForbidden
		}
		tag, err := MemberTag(userID, m.current)
		if err != nil {
			return err
		}
		if err := etag.Check(ctx, tag); err != nil {
			return err
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
// member (ErrMemberNotFound).
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
			return ErrMemberNotFound
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
