// Package edge is the platform's side of its public entry, the edges
// (HAProxy in front of every cluster's control plane) and the route
// agents on the host nodes: what every edge should route, worked out from
// the clusters, the host nodes and the settings and watched through
// NOTIFY (Desired, Watcher), the tenant routes every host node should keep
// (DesiredRoutes, RoutesWatcher), the edge tokens both authenticate with,
// their reports, the host nodes' record and the watch for edges out of
// step. The edges themselves run package edgeagent, the route agents
// package routeagent; what they exchange with the platform is package
// edgewire's.
package edge

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgtype"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/kubebyon/kubebyon/internal/audit"
	"github.com/kubebyon/kubebyon/internal/bearer"
	"github.com/kubebyon/kubebyon/internal/edgewire"
	"github.com/kubebyon/kubebyon/internal/input"
	"github.com/kubebyon/kubebyon/internal/secrets"
	"github.com/kubebyon/kubebyon/queries"
)

// tokens are edge tokens: "kbe_" + an 8-character id + "_" + a
// 32-character secret (package bearer).
var tokens = bearer.Kind{Prefix: "kbe_"}

// ParseBearer reads an edge token from an Authorization header value.
func ParseBearer(header string) (string, bool) { return tokens.Parse(header) }

// MaxNameLength bounds a token's and an instance's name, in characters.
const MaxNameLength = 100

// ErrUnauthorized is every way an edge token can fail (unknown, wrong
// secret, revoked): one error, so that a caller learns nothing about
// which. Its message is the catalog ID of what edges are told.
var ErrUnauthorized = errors.New("ErrEdgeUnauthorized")

// ErrNotFound is a token that does not exist.
var ErrNotFound = errors.New("edge token not found")

// touchEvery limits how often a token's last-used time is written.
const touchEvery = time.Minute

// Service carries what the edge's platform side needs: the tokens, the
// edges' reports, and the desired state (Watcher).
type Service struct {
	Pool *pgxpool.Pool
	Box  *secrets.Box
}

// CreatedToken is a new token: its row, and its value, which exists only
// here.
type CreatedToken struct {
	Token queries.EdgeToken
	Value string
}

// CreateToken makes an edge token. A bad name is returned as input.Errors.
func (s *Service) CreateToken(ctx context.Context, name string, actor audit.Actor) (CreatedToken, error) {
	name = strings.TrimSpace(name)
	switch {
	case name == "":
		return CreatedToken{}, input.Errors{"name": "ErrEdgeTokenNameRequired"}
	case utf8.RuneCountInString(name) > MaxNameLength:
		return CreatedToken{}, input.Errors{"name": "ErrEdgeTokenNameTooLong"}
	}
	var c CreatedToken
	err := pgx.BeginFunc(ctx, s.Pool, func(tx pgx.Tx) error {
		q := queries.New(tx)
		for range 3 {
			value, prefix := tokens.New()
			t, err := q.EdgeTokenCreate(ctx, queries.EdgeTokenCreateParams{
				Name: name, Prefix: prefix, SecretHash: bearer.Hash(value),
				CreatedBy: pgtype.Int8{Int64: actor.UserID, Valid: actor.UserID != 0},
			})
			if errors.Is(err, pgx.ErrNoRows) {
				continue // the id was taken: draw another
			}
			if err != nil {
				return fmt.Errorf("create edge token: %w", err)
			}
			c = CreatedToken{Token: t, Value: value}
			return audit.Record(ctx, q, actor, audit.Event{
				Action: "edge_token.create", TargetType: "edge_token", TargetID: fmt.Sprint(t.ID),
				Details: map[string]any{"name": t.Name, "prefix": t.Prefix},
			})
		}
		return errors.New("create edge token: no free id after 3 tries")
	})
	return c, err
}

// Tokens lists every token, newest first.
func (s *Service) Tokens(ctx context.Context) ([]queries.EdgeToken, error) {
	ts, err := queries.New(s.Pool).EdgeTokenList(ctx)
	if err != nil {
		return nil, fmt.Errorf("list edge tokens: %w", err)
	}
	return ts, nil
}

// TokensBefore lists at most rowLimit tokens below the id before (0: the
// newest), newest first: a page of the admin API's list, read with one row
// more than it shows.
func (s *Service) TokensBefore(ctx context.Context, before int64, rowLimit int32) ([]queries.EdgeToken, error) {
	ts, err := queries.New(s.Pool).EdgeTokenListPage(ctx, queries.EdgeTokenListPageParams{BeforeID: before, RowLimit: rowLimit})
	if err != nil {
		return nil, fmt.Errorf("list edge tokens: %w", err)
	}
	return ts, nil
}

// Token is one token; an unknown one is ErrNotFound.
func (s *Service) Token(ctx context.Context, id int64) (queries.EdgeToken, error) {
	t, err := queries.New(s.Pool).EdgeTokenGet(ctx, id)
	if errors.Is(err, pgx.ErrNoRows) {
		return t, ErrNotFound
	}
	if err != nil {
		return t, fmt.Errorf("get edge token %d: %w", id, err)
	}
	return t, nil
}

// Instances are the edges of the tokens that still work, as they last
// reported, most recently seen first.
func (s *Service) Instances(ctx context.Context) ([]queries.EdgeInstanceListRow, error) {
	is, err := queries.New(s.Pool).EdgeInstanceList(ctx)
	if err != nil {
		return nil, fmt.Errorf("list edge instances: %w", err)
	}
	return is, nil
}

// StaleAfter is how long an edge may go without reporting before it is
// taken for gone: it reports after every poll, at least every half minute.
const StaleAfter = 2 * time.Minute

// Reach is what one edge says of a cluster's API backend.
type Reach struct {
	Edge string
	// InStep: the edge serves the desired routes; when not, what it says
	// of the cluster may be of routes it is about to replace.
	InStep bool
	// Up and Down count the backend's servers by their health check;
	// both zero when the edge lists the backend as wholly up.
	Up, Down int
}

// Reached says the edge sends connections to the cluster: some server of
// its backend is up.
func (r Reach) Reached() bool { return r.Down == 0 || r.Up > 0 }

// Reach is what the edges that reported lately say of the cluster's API
// backend, given the desired routes' version.
func (s *Service) Reach(ctx context.Context, clusterID int64, version string) ([]Reach, error) {
	rows, err := queries.New(s.Pool).EdgeInstancesForCluster(ctx, queries.EdgeInstancesForClusterParams{
		ClusterID: clusterID, StaleSeconds: StaleAfter.Seconds(),
	})
	if err != nil {
		return nil, fmt.Errorf("edges of cluster %d: %w", clusterID, err)
	}
	out := make([]Reach, len(rows))
	for i, r := range rows {
		out[i] = Reach{Edge: r.Name, InStep: r.AppliedVersion == version}
		var b edgewire.Backend
		if len(r.Api) > 0 && string(r.Api) != "null" {
			if err := json.Unmarshal(r.Api, &b); err != nil {
				return nil, fmt.Errorf("decode edge %s's report: %w", r.Name, err)
			}
			out[i].Up, out[i].Down = b.Up, b.Down
		}
	}
	return out, nil
}

// RevokeToken ends a token for good: its edges get 401 from then on.
// Revoking a revoked token changes nothing; an unknown one is ErrNotFound.
func (s *Service) RevokeToken(ctx context.Context, id int64, actor audit.Actor) error {
	return pgx.BeginFunc(ctx, s.Pool, func(tx pgx.Tx) error {
		q := queries.New(tx)
		t, err := q.EdgeTokenRevoke(ctx, id)
		if errors.Is(err, pgx.ErrNoRows) {
			// Revoked already, or no such token.
			_, err := q.EdgeTokenGet(ctx, id)
			if errors.Is(err, pgx.ErrNoRows) {
				return ErrNotFound
			}
			return err
		}
		if err != nil {
			return fmt.Errorf("revoke edge token %d: %w", id, err)
		}
		return audit.Record(ctx, q, actor, audit.Event{
			Action: "edge_token.revoke", TargetType: "edge_token", TargetID: fmt.Sprint(t.ID),
			Details: map[string]any{"name": t.Name, "prefix": t.Prefix},
		})
	})
}

// Authenticate returns the token an edge presents, if it works. Any token
// that does not is ErrUnauthorized.
func (s *Service) Authenticate(ctx context.Context, token string) (queries.EdgeToken, error) {
	if !tokens.WellFormed(token) {
		return queries.EdgeToken{}, ErrUnauthorized
	}
	q := queries.New(s.Pool)
	t, err := q.EdgeTokenByPrefix(ctx, tokens.PrefixOf(token))
	if errors.Is(err, pgx.ErrNoRows) {
		return queries.EdgeToken{}, ErrUnauthorized
	}
	if err != nil {
		return queries.EdgeToken{}, fmt.Errorf("look up edge token: %w", err)
	}
	if !secrets.Equal(t.SecretHash, bearer.Hash(token)) || t.RevokedAt.Valid {
		return queries.EdgeToken{}, ErrUnauthorized
	}
	if !t.LastUsedAt.Valid || time.Since(t.LastUsedAt.Time) >= touchEvery {
		if err := q.EdgeTokenTouch(ctx, t.ID); err != nil {
			return queries.EdgeToken{}, fmt.Errorf("record edge token use: %w", err)
		}
	}
	return t, nil
}

// Record stores a report of an edge that authenticated with token, from
// address; the edge inside serve has no token (its ID is 0).
func (s *Service) Record(ctx context.Context, token queries.EdgeToken, address string, r edgewire.Report) (queries.EdgeInstance, error) {
	r.Name = strings.TrimSpace(r.Name)
	errs := input.Errors{}
	if r.Name == "" {
		errs["name"] = "ErrEdgeInstanceNameRequired"
	} else if utf8.RuneCountInString(r.Name) > MaxNameLength {
		errs["name"] = "ErrEdgeInstanceNameTooLong"
	}
	if len(r.HAProxyVersion) > edgewire.MaxReportText || len(r.AppliedVersion) > edgewire.MaxReportText || len(r.LastError) > edgewire.MaxReportText {
		errs["last_error"] = "ErrEdgeReportTooLong"
	}
	if r.BackendsUp < 0 || r.BackendsDown < 0 || len(r.Down) > edgewire.MaxDown {
		errs["down"] = "ErrEdgeReportBackends"
	}
	if len(errs) > 0 {
		return queries.EdgeInstance{}, errs
	}
	if r.Down == nil {
		r.Down = []edgewire.Backend{}
	}
	down, err := json.Marshal(r.Down)
	if err != nil {
		return queries.EdgeInstance{}, fmt.Errorf("encode backends: %w", err)
	}
	inst, err := queries.New(s.Pool).EdgeInstanceReport(ctx, queries.EdgeInstanceReportParams{
		TokenID: pgtype.Int8{Int64: token.ID, Valid: token.ID != 0}, Name: r.Name, Address: address, HaproxyVersion: r.HAProxyVersion,
		AppliedVersion: r.AppliedVersion, BackendsUp: int32(r.BackendsUp), BackendsDown: int32(r.BackendsDown),
		Down: down, LastError: r.LastError,
	})
	if err != nil {
		return queries.EdgeInstance{}, fmt.Errorf("record the report of edge %q: %w", r.Name, err)
	}
	return inst, nil
}
