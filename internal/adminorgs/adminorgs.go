// Package adminorgs is what admins see of organizations: every one of
// them, found by name or by a member's email, one with its members,
// invitations and clusters, and the organizations of one account. It reads and checks
// nothing: its callers are the admin routes alone (requireAdmin,
// requireAdminKey). What members do in their organizations is
// internal/orgs.
package adminorgs

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgtype"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/kubebyon/kubebyon/internal/input"
	"github.com/kubebyon/kubebyon/internal/orgs"
	"github.com/kubebyon/kubebyon/queries"
)

// PageSize is how many organizations a page of the admins' list shows.
const PageSize = 25

// Invitations is how many of an organization's invitations, the newest,
// its admin page shows.
const Invitations = 100

// Clusters is how many of an organization's live clusters, the newest,
// its admin page shows (Detail.ClusterCount counts them all).
const Clusters = 25

// ErrNotFound is an organization that does not exist (the handlers answer
// it with 404).
var ErrNotFound = errors.New("adminorgs: no such organization")

// Kind tells a user's personal organization from a team's.
type Kind string

// The kinds of organizations.
const (
	// Personal: the one every account has, and owns.
	Personal Kind = "personal"
	// Team: one that a user made.
	Team Kind = "team"
)

// kindOf is the kind of an organization by its personal_of.
func kindOf(personalOf pgtype.Int8) Kind {
	if personalOf.Valid {
		return Personal
	}
	return Team
}

// Service reads the organizations for the admins.
type Service struct {
	Pool *pgxpool.Pool
	// Now is the clock that tells expired invitations; time.Now when nil.
	Now func() time.Time
}

func (s *Service) now() time.Time {
	if s.Now != nil {
		return s.Now()
	}
	return time.Now()
}

// Org is an organization as the admins' list shows it.
type Org struct {
	ID   int64
	Name string
	Kind Kind
	// PersonalUserID and PersonalEmail are the account whose personal
	// organization it is: 0 and empty for a team's.
	PersonalUserID int64
	PersonalEmail  string
	MemberCount    int64
	CreatedAt      time.Time
	// ClosedAt is when a team deleted with orders was closed (its row
	// kept for them, orgs.Service.Delete); zero for one in use.
	ClosedAt time.Time
}

// Page is one page of the admins' organization list, newest first.
type Page struct {
	Orgs []Org
	// NextBefore is the cursor of the next page (List's before): 0 on the
	// last page.
	NextBefore int64
}

// List is a page of the organizations with an id below before (0: from
// the newest), newest first, size at most (the console's PageSize, the
// API's limit): every organization, or, with a search, those whose name
// or a member's email contains it (any case).
func (s *Service) List(ctx context.Context, search string, before int64, size int) (Page, error) {
	q := queries.New(s.Pool)
	var rows []queries.AdminOrgListRow
	// One more row than shown tells whether there is a next page.
	if search = strings.TrimSpace(search); search == "" {
		var err error
		if rows, err = q.AdminOrgList(ctx, queries.AdminOrgListParams{BeforeID: before, RowLimit: int32(size) + 1}); err != nil {
			return Page{}, fmt.Errorf("list organizations: %w", err)
		}
	} else {
		found, err := q.AdminOrgSearch(ctx, queries.AdminOrgSearchParams{
			Pattern: input.Contains(search), BeforeID: before, RowLimit: int32(size) + 1,
		})
		if err != nil {
			return Page{}, fmt.Errorf("search organizations: %w", err)
		}
		rows = make([]queries.AdminOrgListRow, len(found))
		for i, r := range found {
			rows[i] = queries.AdminOrgListRow(r)
		}
	}
	var p Page
	if len(rows) > size {
		rows = rows[:size]
		p.NextBefore = rows[size-1].ID
	}
	p.Orgs = make([]Org, len(rows))
	for i, r := range rows {
		p.Orgs[i] = Org{
			ID: r.ID, Name: r.Name, Kind: kindOf(r.PersonalOf), PersonalUserID: r.PersonalOf.Int64,
			PersonalEmail: r.PersonalEmail, MemberCount: r.MemberCount, CreatedAt: r.CreatedAt.Time, ClosedAt: r.ClosedAt.Time,
		}
	}
	return p, nil
}

// Detail is one organization with its members, invitations and clusters.
type Detail struct {
	Org
	// CreatedByID and CreatedByEmail are who made it: 0 and empty for an
	// account deleted since.
	CreatedByID      int64
	CreatedByEmail   string
	ViewerKubeconfig bool
	Members          []Member
	// Invitations are the newest (up to Invitations), newest first.
	Invitations []Invitation
	// Clusters are the newest live ones (up to Clusters), newest first;
	// ClusterCount is how many live ones it has.
	Clusters     []Cluster
	ClusterCount int64
}

// Cluster is a live cluster of an organization.
type Cluster struct {
	ID     int64
	Name   string
	Status string
	Nodes  int64
	// OwnerID and OwnerEmail are who made it: OwnerEmail is empty for an
	// account deleted since.
	OwnerID    int64
	OwnerEmail string
	CreatedAt  time.Time
}

// Member is a member of an organization, in a role.
type Member struct {
	UserID int64
	Email  string
	Name   string
	Role   orgs.Role
	Since  time.Time
}

// Invitation is an invitation to an organization, in its state now.
type Invitation struct {
	ID    int64
	Email string
	Role  orgs.Role
	// State is orgs.InvitationPending, Accepted, Expired or Revoked.
	State string
	// InvitedByEmail is empty for an account deleted since.
	InvitedByEmail string
	CreatedAt      time.Time
	ExpiresAt      time.Time
	// AcceptedAt and RevokedAt are zero until then.
	AcceptedAt time.Time
	RevokedAt  time.Time
}

// Get is the organization with id, with its members, invitations and
// clusters, or ErrNotFound.
func (s *Service) Get(ctx context.Context, id int64) (Detail, error) {
	q := queries.New(s.Pool)
	r, err := q.AdminOrgGet(ctx, id)
	if errors.Is(err, pgx.ErrNoRows) {
		return Detail{}, ErrNotFound
	}
	if err != nil {
		return Detail{}, fmt.Errorf("read organization %d: %w", id, err)
	}
	o := r.Organization
	d := Detail{
		Org: Org{
			ID: o.ID, Name: o.Name, Kind: kindOf(o.PersonalOf), PersonalUserID: o.PersonalOf.Int64,
			PersonalEmail: r.PersonalEmail, MemberCount: r.MemberCount, CreatedAt: o.CreatedAt.Time, ClosedAt: o.ClosedAt.Time,
		},
		CreatedByID: o.CreatedBy.Int64, CreatedByEmail: r.CreatedByEmail, ViewerKubeconfig: o.ViewerKubeconfig,
	}
	members, err := q.AdminOrgMembers(ctx, id)
	if err != nil {
		return Detail{}, fmt.Errorf("list the members of organization %d: %w", id, err)
	}
	d.Members = make([]Member, len(members))
	for i, m := range members {
		d.Members[i] = Member{UserID: m.UserID, Email: m.Email, Name: m.Name, Role: orgs.Role(m.Role), Since: m.CreatedAt.Time}
	}
	invs, err := q.AdminOrgInvitations(ctx, queries.AdminOrgInvitationsParams{OrgID: id, RowLimit: Invitations})
	if err != nil {
		return Detail{}, fmt.Errorf("list the invitations of organization %d: %w", id, err)
	}
	now := s.now()
	d.Invitations = make([]Invitation, len(invs))
	for i, r := range invs {
		inv := r.OrgInvitation
		d.Invitations[i] = Invitation{
			ID: inv.ID, Email: inv.Email, Role: orgs.Role(inv.Role), State: orgs.InvitationState(inv, now),
			InvitedByEmail: r.InvitedByEmail, CreatedAt: inv.CreatedAt.Time, ExpiresAt: inv.ExpiresAt.Time,
			AcceptedAt: inv.AcceptedAt.Time, RevokedAt: inv.RevokedAt.Time,
		}
	}
	cls, err := q.AdminOrgClusters(ctx, queries.AdminOrgClustersParams{OrgID: id, RowLimit: Clusters})
	if err != nil {
		return Detail{}, fmt.Errorf("list the clusters of organization %d: %w", id, err)
	}
	d.Clusters = make([]Cluster, len(cls))
	for i, c := range cls {
		d.Clusters[i] = Cluster{
			ID: c.ID, Name: c.Name, Status: c.Status, Nodes: c.Nodes, OwnerID: c.OwnerID, OwnerEmail: c.OwnerEmail, CreatedAt: c.CreatedAt.Time,
		}
		d.ClusterCount = c.Total
	}
	return d, nil
}

// Membership is one of an account's organizations, with its role there.
type Membership struct {
	ID          int64
	Name        string
	Kind        Kind
	Role        orgs.Role
	MemberCount int64
	Since       time.Time
}

// ForUser is the organizations the account userID is a member of, with
// its role: the personal one first, then by name. An account that does
// not exist has none.
func (s *Service) ForUser(ctx context.Context, userID int64) ([]Membership, error) {
	rows, err := queries.New(s.Pool).AdminOrgListForUser(ctx, userID)
	if err != nil {
		return nil, fmt.Errorf("list the organizations of user %d: %w", userID, err)
	}
	out := make([]Membership, len(rows))
	for i, r := range rows {
		out[i] = Membership{
			ID: r.ID, Name: r.Name, Kind: kindOf(r.PersonalOf), Role: orgs.Role(r.Role), MemberCount: r.MemberCount, Since: r.JoinedAt.Time,
		}
	}
	return out, nil
}
