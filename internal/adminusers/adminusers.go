// Package adminusers is what admins do with other people's accounts: find
// them, look at one, disable and enable it, promote and demote it, sign it
// out everywhere, delete it (delete.go). Changes are dangerous, so each is
// confirmed with the acting admin's password (adminauth.ConfirmPassword)
// and runs in one transaction with its audit event.
package adminusers

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgtype"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/kubebyon/kubebyon/internal/adminauth"
	"github.com/kubebyon/kubebyon/internal/audit"
	"github.com/kubebyon/kubebyon/internal/input"
	"github.com/kubebyon/kubebyon/queries"
)

// Page sizes.
const (
	PageSize     = 25
	RecentEvents = 20
	// UserClusters is how many of an account's clusters its page lists.
	UserClusters = 100
)

// Errors whose messages admins see (catalog message IDs).
var (
	ErrSelfDisable = errors.New("ErrAdminSelfDisable")
	ErrSelfDemote  = errors.New("ErrAdminSelfDemote")
	ErrNoChange    = errors.New("ErrAdminNoChange")
)

// ErrNotFound is an account that does not exist (the handlers answer it
// with 404, as adminauth.ErrNotAdmin).
var ErrNotFound = errors.New("adminusers: no such user")

// Service carries what the admin actions need.
type Service struct {
	Pool *pgxpool.Pool
	// Now is the clock of the password confirmations (their rate limit,
	// fresh sign-ins) and of CreateAdmin; time.Now when nil.
	Now func() time.Time
}

func (s *Service) now() time.Time {
	if s.Now != nil {
		return s.Now()
	}
	return time.Now()
}

// Status is an account's state as the admin pages show it.
type Status string

// Account states.
const (
	StatusActive     Status = "active"
	StatusUnverified Status = "unverified"
	StatusDisabled   Status = "disabled"
)

// StatusOf tells whether u can sign in, and if not, why.
func StatusOf(u queries.User) Status {
	return StatusFrom(u.EmailVerifiedAt.Valid, u.DisabledAt.Valid)
}

// StatusFrom is the status of an account verified or not, disabled or not.
func StatusFrom(verified, disabled bool) Status {
	switch {
	case disabled:
		return StatusDisabled
	case !verified:
		return StatusUnverified
	}
	return StatusActive
}

// Page is one page of the user list: what the list shows of each user.
type Page struct {
	Users []queries.AdminUserListRow
	// NextAfter is the cursor of the next page: 0 on the last page.
	NextAfter int64
}

// List is a page of the user list: the users with an ID above after
// whose email or name contains search (any case), size at most (the
// console's PageSize, the API's limit), in ID order. It checks nothing:
// its caller shows the page to admins alone.
func (s *Service) List(ctx context.Context, search string, after int64, size int) (Page, error) {
	q := queries.New(s.Pool)
	var rows []queries.AdminUserListRow
	// One more row than shown tells whether there is a next page.
	if search = strings.TrimSpace(search); search == "" {
		var err error
		if rows, err = q.AdminUserList(ctx, queries.AdminUserListParams{AfterID: after, RowLimit: int32(size) + 1}); err != nil {
			return Page{}, fmt.Errorf("list users: %w", err)
		}
	} else {
		found, err := q.AdminUserSearch(ctx, queries.AdminUserSearchParams{
			Pattern: input.Contains(search), AfterID: after, RowLimit: int32(size) + 1,
		})
		if err != nil {
			return Page{}, fmt.Errorf("search users: %w", err)
		}
		rows = make([]queries.AdminUserListRow, len(found))
		for i, r := range found {
			rows[i] = queries.AdminUserListRow(r)
		}
	}
	p := Page{Users: rows}
	if len(rows) > size {
		p.Users = rows[:size]
		p.NextAfter = p.Users[size-1].ID
	}
	return p, nil
}

// Detail is one account with its signed-in browsers and what it did lately.
type Detail struct {
	User       queries.User
	Sessions   []queries.UserSession
	Events     []queries.AuditEvent
	Clusters   []queries.AdminUserClusterListRow
	APIKeys    []queries.ApiKey
	Identities []queries.OauthIdentity
}

// User returns the account with id alone, or ErrNotFound.
func (s *Service) User(ctx context.Context, id int64) (queries.User, error) {
	return user(ctx, queries.New(s.Pool), id)
}

func user(ctx context.Context, q *queries.Queries, id int64) (queries.User, error) {
	u, err := q.UserGetByID(ctx, id)
	if errors.Is(err, pgx.ErrNoRows) {
		return queries.User{}, ErrNotFound
	}
	if err != nil {
		return queries.User{}, fmt.Errorf("get user %d: %w", id, err)
	}
	return u, nil
}

// Get returns the account with id, or ErrNotFound.
func (s *Service) Get(ctx context.Context, id int64) (Detail, error) {
	q := queries.New(s.Pool)
	var d Detail
	var err error
	if d.User, err = user(ctx, q, id); err != nil {
		return d, err
	}
	if d.Sessions, err = q.UserSessionListActiveByUser(ctx, id); err != nil {
		return d, fmt.Errorf("list sessions of user %d: %w", id, err)
	}
	d.Clusters, err = q.AdminUserClusterList(ctx, queries.AdminUserClusterListParams{OwnerID: id, RowLimit: UserClusters})
	if err != nil {
		return d, fmt.Errorf("list clusters of user %d: %w", id, err)
	}
	if d.APIKeys, err = q.ApiKeyListByUser(ctx, id); err != nil {
		return d, fmt.Errorf("list api keys of user %d: %w", id, err)
	}
	if d.Identities, err = q.OAuthIdentityListByUser(ctx, id); err != nil {
		return d, fmt.Errorf("list identities of user %d: %w", id, err)
	}
	d.Events, err = q.AuditEventListByActor(ctx, queries.AuditEventListByActorParams{
		ActorID: pgtype.Int8{Int64: id, Valid: true}, RowLimit: RecentEvents,
	})
	if err != nil {
		return d, fmt.Errorf("list events of user %d: %w", id, err)
	}
	return d, nil
}

// Action is a change an admin makes to an account.
type Action string

// The admin actions; each is audited as "admin.user_<action>".
const (
	Disable Action = "disable"
	Enable  Action = "enable"
	Promote Action = "promote"
	Demote  Action = "demote"
	// RevokeSessions signs the account out of every browser.
	RevokeSessions Action = "sessions_revoke"
)

// Actions lists every action.
var Actions = []Action{Disable, Enable, Promote, Demote, RevokeSessions}

// lockAdminAndUser locks the rows of the acting admin and of the user
// they act on, in the caller's transaction, and returns the user's.
// The admin is checked again under the lock: another admin may have
// demoted or disabled them since the request began (adminauth.ErrNotAdmin).
func lockAdminAndUser(ctx context.Context, q *queries.Queries, adminID, userID int64) (queries.User, error) {
	rows, err := q.AdminUserLockForUpdate(ctx, []int64{adminID, userID})
	if err != nil {
		return queries.User{}, fmt.Errorf("lock users: %w", err)
	}
	var admin, target *queries.User
	for i := range rows {
		if rows[i].ID == adminID {
			admin = &rows[i]
		}
		if rows[i].ID == userID {
			target = &rows[i]
		}
	}
	if admin == nil || admin.Role != adminauth.RoleAdmin || admin.DisabledAt.Valid {
		return queries.User{}, adminauth.ErrNotAdmin
	}
	if target == nil {
		return queries.User{}, ErrNotFound
	}
	return *target, nil
}

// Apply makes the change a to the account userID on behalf of the admin
// actor.UserID, who confirms it with their password. Disabling also ends
// every session of the account at once.
func (s *Service) Apply(ctx context.Context, a Action, userID int64, password string, actor audit.Actor) error {
	adminID := actor.UserID
	if userID == adminID {
		switch a {
		case Disable:
			return ErrSelfDisable
		case Demote:
			return ErrSelfDemote
		}
	}
	if err := adminauth.ConfirmPassword(ctx, s.Pool, adminID, password, s.now()); err != nil {
		return err
	}
	return pgx.BeginFunc(ctx, s.Pool, func(tx pgx.Tx) error {
		q := queries.New(tx)
		target, err := lockAdminAndUser(ctx, q, adminID, userID)
		if err != nil {
			return err
		}
		details, err := change(ctx, q, a, target)
		if err != nil {
			return err
		}
		details["email"] = target.Email
		return audit.Record(ctx, q, actor, audit.Event{
			Action: "admin.user_" + string(a), TargetType: "user", TargetID: strconv.FormatInt(userID, 10), Details: details,
		})
	})
}

// change applies a to u and returns the audit details.
func change(ctx context.Context, q *queries.Queries, a Action, u queries.User) (map[string]any, error) {
	switch a {
	case Disable:
		if u.DisabledAt.Valid {
			return nil, ErrNoChange
		}
		if err := q.AdminUserDisable(ctx, u.ID); err != nil {
			return nil, fmt.Errorf("disable user %d: %w", u.ID, err)
		}
		// The session middleware refuses a disabled account's sessions
		// already; ending them means enabling it again does not bring the
		// old browsers back.
		n, err := q.UserSessionEndAllForUser(ctx, queries.UserSessionEndAllForUserParams{UserID: u.ID, KeepID: ""})
		if err != nil {
			return nil, fmt.Errorf("end sessions of user %d: %w", u.ID, err)
		}
		// Its API keys too: the API refuses them while the account is
		// disabled, and they must not work again once it is enabled.
		keys, err := q.ApiKeyRevokeAllForUser(ctx, u.ID)
		if err != nil {
			return nil, fmt.Errorf("revoke api keys of user %d: %w", u.ID, err)
		}
		return map[string]any{"sessions_ended": n, "api_keys_revoked": keys}, nil
	case Enable:
		if !u.DisabledAt.Valid {
			return nil, ErrNoChange
		}
		if err := q.AdminUserEnable(ctx, u.ID); err != nil {
			return nil, fmt.Errorf("enable user %d: %w", u.ID, err)
		}
		return map[string]any{}, nil
	case Promote, Demote:
		role := adminauth.RoleAdmin
		if a == Demote {
			role = adminauth.RoleUser
		}
		if u.Role == role {
			return nil, ErrNoChange
		}
		if err := q.AdminUserSetRole(ctx, queries.AdminUserSetRoleParams{ID: u.ID, Role: role}); err != nil {
			return nil, fmt.Errorf("set role of user %d: %w", u.ID, err)
		}
		return map[string]any{"from": u.Role, "to": role}, nil
	case RevokeSessions:
		n, err := q.UserSessionEndAllForUser(ctx, queries.UserSessionEndAllForUserParams{UserID: u.ID, KeepID: ""})
		if err != nil {
			return nil, fmt.Errorf("end sessions of user %d: %w", u.ID, err)
		}
		if n == 0 {
			return nil, ErrNoChange
		}
		return map[string]any{"sessions_ended": n}, nil
	}
	return nil, fmt.Errorf("unknown admin action %q", a)
}

// SortKeys are the columns the user list sorts by (ListSorted).
var SortKeys = []string{"email", "name", "role", "created", "last_sign_in"}

// ListSorted is List in the order of a column of SortKeys (descending
// when desc), its page-th page (from 1) of size; more says whether a page
// follows. It checks nothing, as List.
func (s *Service) ListSorted(ctx context.Context, search, key string, desc bool, page, size int) (rows []queries.AdminUserListRow, more bool, err error) {
	var pattern string
	if search = strings.TrimSpace(search); search != "" {
		pattern = input.Contains(search)
	}
	sorted, err := queries.New(s.Pool).AdminUserListSorted(ctx, queries.AdminUserListSortedParams{
		Pattern: pattern, SortKey: key, Descending: desc, RowOffset: int32((page - 1) * size), RowLimit: int32(size) + 1,
	})
	if err != nil {
		return nil, false, fmt.Errorf("list users by %s: %w", key, err)
	}
	if more = len(sorted) > size; more {
		sorted = sorted[:size]
	}
	for _, r := range sorted {
		rows = append(rows, queries.AdminUserListRow(r))
	}
	return rows, more, nil
}
