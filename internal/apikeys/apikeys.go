// Package apikeys is what users do with API keys: create one (its value is
// shown once), list and revoke their own; and what the JSON API does with a
// key: find the user it acts for. Each change runs in one transaction with
// its audit event.
package apikeys

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

	"github.com/kubebyon/kubebyon/internal/adminauth"
	"github.com/kubebyon/kubebyon/internal/audit"
	"github.com/kubebyon/kubebyon/internal/bearer"
	"github.com/kubebyon/kubebyon/internal/input"
	"github.com/kubebyon/kubebyon/internal/orgs"
	"github.com/kubebyon/kubebyon/internal/secrets"
	"github.com/kubebyon/kubebyon/queries"
)

// MaxNameLength bounds a key's name, in characters.
const MaxNameLength = 100

// touchEvery limits how often a key's last-used time is written.
const touchEvery = time.Minute

var (
	// ErrUnauthorized is every way a key can fail: unknown, wrong secret,
	// revoked, expired, or its account disabled or unverified. One error,
	// so that a caller learns nothing about which. Its message is the
	// catalog ID of what API clients are told.
	ErrUnauthorized = errors.New("ErrAPIUnauthorized")
	// ErrNotFound is a key that does not exist or belongs to someone else.
	ErrNotFound = errors.New("api key not found")
)

// FieldErrors maps form fields to catalog message IDs.
type FieldErrors = input.Errors

// The expiry choices of the create form.
const (
	ExpiryNever  = "never"
	Expiry30Days = "30d"
	Expiry90Days = "90d"
	Expiry1Year  = "1y"
	ExpiryOnDate = "date"
)

// Expiry is when a new key stops working: a choice, and the date (as
// YYYY-MM-DD) for ExpiryOnDate. A key expiring on a date stops working at
// the start of that day, UTC.
type Expiry struct {
	Choice string
	Date   string
}

// at resolves the expiry at now; the zero time means never.
func (e Expiry) at(now time.Time) (time.Time, FieldErrors) {
	switch e.Choice {
	case ExpiryNever:
		return time.Time{}, nil
	case Expiry30Days:
		return now.AddDate(0, 0, 30), nil
	case Expiry90Days:
		return now.AddDate(0, 0, 90), nil
	case Expiry1Year:
		return now.AddDate(1, 0, 0), nil
	case ExpiryOnDate:
		date := strings.TrimSpace(e.Date)
		if date == "" {
			return time.Time{}, FieldErrors{"expires_on": "ErrAPIKeyDateRequired"}
		}
		d, err := time.Parse(time.DateOnly, date)
		if err != nil {
			return time.Time{}, FieldErrors{"expires_on": "ErrAPIKeyDateInvalid"}
		}
		if !d.After(now) {
			return time.Time{}, FieldErrors{"expires_on": "ErrAPIKeyDatePast"}
		}
		return d, nil
	}
	return time.Time{}, FieldErrors{"expiry": "ErrAPIKeyExpiryInvalid"}
}

// Scopes: what a key may do. A read key may only read (GET); a write
// key may do all its owner may do in /api/v1; an admin key also acts in
// /api/v1/admin, and only an admin may make one.
const (
	ScopeRead  = "read"
	ScopeWrite = "write"
	ScopeAdmin = "admin"
)

// ErrInsufficientScope: the key may not do this.
var ErrInsufficientScope = errors.New("ErrAPIKeyInsufficientScope")

// validScope says whether scope is one of the scopes.
func validScope(scope string) bool {
	return scope == ScopeRead || scope == ScopeWrite || scope == ScopeAdmin
}

// scopeRank orders the scopes: each may do all the ones below it may.
var scopeRank = map[string]int{ScopeRead: 1, ScopeWrite: 2, ScopeAdmin: 3}

// Within says whether a key of scope may do no more than one of max: a key
// made with a key may not do more than that key (an unknown scope is not
// within anything).
func Within(scope, max string) bool {
	r, ok := scopeRank[scope]
	return ok && r <= scopeRank[max]
}

// Caller is who a key acts for and what it may do.
type Caller struct {
	User queries.User
	// Scope is the key's scope as it holds now: an admin key of a user
	// who is no longer an admin is a write key.
	Scope string
	// OrgID is the organization the key acts in, and OrgRole the key
	// owner's role in it; a read key acts as a viewer whatever the role.
	OrgID   int64
	OrgRole orgs.Role
}

// CanWrite says whether the caller may change things.
func (c Caller) CanWrite() bool { return c.Scope == ScopeWrite || c.Scope == ScopeAdmin }

// Service carries what the key actions need.
type Service struct {
	Pool *pgxpool.Pool
	Now  func() time.Time
}

func (s *Service) now() time.Time {
	if s.Now != nil {
		return s.Now()
	}
	return time.Now()
}

// Created is a new key: its row, and its value, which exists only here.
type Created struct {
	Key   queries.ApiKey
	Value string
}

// Create makes a key for a member (who) that acts in their organization,
// with at most their role there (Authenticate). Bad input is returned as
// FieldErrors; a user who is not a member is ErrNotFound.
func (s *Service) Create(ctx context.Context, who orgs.Acting, name, scope string, expiry Expiry, actor audit.Actor) (Created, error) {
	userID := who.UserID
	name = strings.TrimSpace(name)
	errs := FieldErrors{}
	switch {
	case name == "":
		errs["name"] = "ErrAPIKeyNameRequired"
	case utf8.RuneCountInString(name) > MaxNameLength:
		errs["name"] = "ErrAPIKeyNameTooLong"
	}
	if !validScope(scope) {
		errs["scope"] = "ErrAPIKeyScopeInvalid"
	}
	expiresAt, expiryErrs := expiry.at(s.now())
	for k, v := range expiryErrs {
		errs[k] = v
	}
	if len(errs) > 0 {
		return Created{}, errs
	}

	var c Created
	err := pgx.BeginFunc(ctx, s.Pool, func(tx pgx.Tx) error {
		q := queries.New(tx)
		member, err := q.OrgMemberIn(ctx, queries.OrgMemberInParams{OrgID: who.OrgID, UserID: userID, Roles: who.Roles(orgs.Read)})
		if err != nil {
			return fmt.Errorf("check membership: %w", err)
		}
		if !member {
			return ErrNotFound
		}
		if scope == ScopeAdmin {
			u, err := q.UserGetByID(ctx, userID)
			if err != nil {
				return fmt.Errorf("the key's owner: %w", err)
			}
			if u.Role != adminauth.RoleAdmin {
				return FieldErrors{"scope": "ErrAPIKeyScopeAdminOnly"}
			}
		}
		c, err = insertKey(ctx, q, who.OrgID, userID, name, scope, expiresAt)
		if err != nil {
			return err
		}
		details := map[string]any{"name": name, "prefix": c.Key.Prefix, "scope": scope}
		if c.Key.ExpiresAt.Valid {
			details["expires_at"] = c.Key.ExpiresAt.Time.UTC().Format(time.RFC3339)
		}
		return audit.Record(ctx, q, actor, audit.Event{
			Action: "api_key.create", TargetType: "api_key", TargetID: fmt.Sprint(c.Key.ID), Details: details,
		})
	})
	return c, err
}

// insertKey stores a new key, drawing another id in the unlikely case
// that one is taken.
func insertKey(ctx context.Context, q *queries.Queries, orgID, userID int64, name, scope string, expiresAt time.Time) (Created, error) {
	for range 3 {
		value, prefix := keys.New()
		k, err := q.ApiKeyCreate(ctx, queries.ApiKeyCreateParams{
			UserID:     userID,
			OrgID:      orgID,
			Name:       name,
			Prefix:     prefix,
			SecretHash: bearer.Hash(value),
			Scope:      scope,
			ExpiresAt:  pgtype.Timestamptz{Time: expiresAt, Valid: !expiresAt.IsZero()},
		})
		if errors.Is(err, pgx.ErrNoRows) {
			continue
		}
		if err != nil {
			return Created{}, fmt.Errorf("create api key: %w", err)
		}
		return Created{Key: k, Value: value}, nil
	}
	return Created{}, errors.New("create api key: no free key id after 3 tries")
}

// List returns a user's keys, newest first, revoked and expired included.
func (s *Service) List(ctx context.Context, userID int64) ([]queries.ApiKey, error) {
	keys, err := queries.New(s.Pool).ApiKeyListByUser(ctx, userID)
	if err != nil {
		return nil, fmt.Errorf("list api keys: %w", err)
	}
	return keys, nil
}

// Page returns a user's keys with an id below before (0: from the
// newest), newest first, up to n, revoked and expired included.
func (s *Service) Page(ctx context.Context, userID, before int64, n int32) ([]queries.ApiKey, error) {
	keys, err := queries.New(s.Pool).ApiKeyPageByUser(ctx, queries.ApiKeyPageByUserParams{UserID: userID, BeforeID: before, MaxRows: n})
	if err != nil {
		return nil, fmt.Errorf("list api keys: %w", err)
	}
	return keys, nil
}

// Get returns one of a user's keys; ErrNotFound for anyone else's.
func (s *Service) Get(ctx context.Context, userID, keyID int64) (queries.ApiKey, error) {
	return getKey(ctx, queries.New(s.Pool), userID, keyID)
}

func getKey(ctx context.Context, q *queries.Queries, userID, keyID int64) (queries.ApiKey, error) {
	k, err := q.ApiKeyGetByUser(ctx, queries.ApiKeyGetByUserParams{ID: keyID, UserID: userID})
	if errors.Is(err, pgx.ErrNoRows) {
		return k, ErrNotFound
	}
	if err != nil {
		return k, fmt.Errorf("get api key: %w", err)
	}
	return k, nil
}

// Revoke ends one of a user's keys for good. Revoking a revoked key changes
// nothing; anyone else's key is ErrNotFound.
func (s *Service) Revoke(ctx context.Context, userID, keyID int64, actor audit.Actor) error {
	return pgx.BeginFunc(ctx, s.Pool, func(tx pgx.Tx) error {
		q := queries.New(tx)
		k, err := q.ApiKeyRevoke(ctx, queries.ApiKeyRevokeParams{
			ID: keyID, UserID: userID, Now: pgtype.Timestamptz{Time: s.now(), Valid: true},
		})
		if errors.Is(err, pgx.ErrNoRows) {
			_, err := getKey(ctx, q, userID, keyID)
			return err
		}
		if err != nil {
			return fmt.Errorf("revoke api key: %w", err)
		}
		return audit.Record(ctx, q, actor, audit.Event{
			Action: "api_key.revoke", TargetType: "api_key", TargetID: fmt.Sprint(k.ID),
			Details: map[string]any{"name": k.Name, "prefix": k.Prefix},
		})
	})
}

// Authenticate returns who a key acts for and what it may do, and
// records its use from ip (at most once a minute from the same address).
// Any key that does not work, for whatever reason, is ErrUnauthorized.
func (s *Service) Authenticate(ctx context.Context, key, ip string) (Caller, error) {
	if !keys.WellFormed(key) {
		return Caller{}, ErrUnauthorized
	}
	q := queries.New(s.Pool)
	row, err := q.ApiKeyAuthenticate(ctx, keys.PrefixOf(key))
	if errors.Is(err, pgx.ErrNoRows) {
		return Caller{}, ErrUnauthorized
	}
	if err != nil {
		return Caller{}, fmt.Errorf("look up api key: %w", err)
	}
	k, u, now := row.ApiKey, row.User, s.now()
	switch {
	case !secrets.Equal(k.SecretHash, bearer.Hash(key)),
		k.RevokedAt.Valid,
		// No longer a member of the key's organization.
		row.OrgRole == "",
		k.ExpiresAt.Valid && !now.Before(k.ExpiresAt.Time),
		u.DisabledAt.Valid,
		!u.EmailVerifiedAt.Valid:
		return Caller{}, ErrUnauthorized
	}
	ip = input.Printable(ip)
	if !k.LastUsedAt.Valid || now.Sub(k.LastUsedAt.Time) >= touchEvery || k.LastUsedIp != ip {
		if err := q.ApiKeyTouch(ctx, queries.ApiKeyTouchParams{ID: k.ID, Now: pgtype.Timestamptz{Time: now, Valid: true}, Ip: ip}); err != nil {
			return Caller{}, fmt.Errorf("record api key use: %w", err)
		}
	}
	scope := k.Scope
	if scope == ScopeAdmin && u.Role != adminauth.RoleAdmin {
		scope = ScopeWrite
	}
	role := orgs.Role(row.OrgRole)
	if scope == ScopeRead {
		role = orgs.Viewer
	}
	return Caller{User: u, Scope: scope, OrgID: k.OrgID, OrgRole: role}, nil
}

// Status is a key's state at now: "active", "expired" or "revoked".
func Status(k queries.ApiKey, now time.Time) string {
	switch {
	case k.RevokedAt.Valid:
		return "revoked"
	case k.ExpiresAt.Valid && !now.Before(k.ExpiresAt.Time):
		return "expired"
	}
	return "active"
}
