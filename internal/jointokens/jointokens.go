// Package jointokens is what cluster owners do with join tokens: create a
// kubeadm bootstrap token in the cluster's virtual control plane, list,
// show the join command again, revoke; and what the join endpoint does
// with one: check it and record the script's progress. Each change runs in
// one transaction with its audit event.
package jointokens

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgtype"
	"github.com/jackc/pgx/v5/pgxpool"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	corev1client "k8s.io/client-go/kubernetes/typed/core/v1"
	bootstrapapi "k8s.io/cluster-bootstrap/token/api"
	bootstraputil "k8s.io/cluster-bootstrap/token/util"

	"github.com/kubebyon/kubebyon/internal/audit"
	"github.com/kubebyon/kubebyon/internal/checks"
	"github.com/kubebyon/kubebyon/internal/clusters"
	"github.com/kubebyon/kubebyon/internal/input"
	"github.com/kubebyon/kubebyon/internal/orgs"
	"github.com/kubebyon/kubebyon/internal/secrets"
	"github.com/kubebyon/kubebyon/queries"
)

// MaxDescriptionLength bounds a token's description, in characters.
const MaxDescriptionLength = 200

// NodeGroup is the group kubeadm gives worker join tokens; kubeadm's RBAC
// lets it file node CSRs.
const NodeGroup = "system:bootstrappers:kubeadm:default-node-token"

// The lifetime choices of the create form.
const (
	Lifetime1Hour   = "1h"
	Lifetime24Hours = "24h"
	Lifetime7Days   = "7d"
	LifetimeNone    = "none"
)

// Lifetimes are the choices in form order; the first is the default.
var Lifetimes = []string{Lifetime1Hour, Lifetime24Hours, Lifetime7Days, LifetimeNone}

// The use limit choices of the create form.
const (
	UsesOne       = "1"
	UsesN         = "n"
	UsesUnlimited = "unlimited"
)

// MaxUseLimit bounds a numeric use limit.
const MaxUseLimit = 1000

// Token statuses.
const (
	StatusActive  = "active"
	StatusExpired = "expired"
	StatusRevoked = "revoked"
	StatusUsedUp  = "used_up"
)

// Errors users see (catalog message IDs).
var (
	ErrNotFound        = errors.New("ErrJoinTokenNotFound")
	ErrClusterNotReady = errors.New("ErrJoinTokenClusterNotReady")
	// ErrRevokeNotReady: a token's bootstrap Secret is in the cluster,
	// which must be ready for it to be deleted.
	ErrRevokeNotReady = errors.New("ErrJoinTokenRevokeNotReady")
)

// FieldErrors maps form fields to catalog message IDs.
type FieldErrors = input.Errors

// Service carries what the token actions need.
type Service struct {
	Pool *pgxpool.Pool
	Box  *secrets.Box
	// Virtual is the platform's client configuration for a ready cluster's
	// virtual control plane (clusters.Service.VirtualConfig).
	Virtual clusters.VirtualConfigFunc
	Now     func() time.Time

	scripts scripts
}

func (s *Service) now() time.Time {
	if s.Now != nil {
		return s.Now()
	}
	return time.Now()
}

// Input is the create form.
type Input struct {
	Description string
	Lifetime    string
	// Uses is UsesOne, UsesN or UsesUnlimited; MaxUses the N of UsesN.
	Uses    string
	MaxUses string
}

// validate returns the expiry (zero: none) and the use limit (0: unlimited).
func (in *Input) validate(now time.Time) (time.Time, int32, error) {
	errs := FieldErrors{}
	in.Description = strings.TrimSpace(in.Description)
	if !utf8.ValidString(in.Description) || utf8.RuneCountInString(in.Description) > MaxDescriptionLength || strings.ContainsRune(in.Description, 0) {
		errs["description"] = "ErrJoinTokenDescriptionInvalid"
	}
	var expires time.Time
	switch in.Lifetime {
	case "", Lifetime1Hour:
		in.Lifetime = Lifetime1Hour
		expires = now.Add(time.Hour)
	case Lifetime24Hours:
		expires = now.Add(24 * time.Hour)
	case Lifetime7Days:
		expires = now.Add(7 * 24 * time.Hour)
	case LifetimeNone:
	default:
		errs["lifetime"] = "ErrJoinTokenLifetimeInvalid"
	}
	var limit int32
	switch in.Uses {
	case "", UsesOne:
		in.Uses = UsesOne
		limit = 1
	case UsesUnlimited:
	case UsesN:
		n, err := strconv.Atoi(strings.TrimSpace(in.MaxUses))
		if err != nil || n < 1 || n > MaxUseLimit {
			errs["max_uses"] = "ErrJoinTokenMaxUsesInvalid"
		}
		limit = int32(n)
	default:
		errs["uses"] = "ErrJoinTokenUsesInvalid"
	}
	if len(errs) > 0 {
		return time.Time{}, 0, errs
	}
	return expires, limit, nil
}

// Created is a new token: its row and its value.
type Created struct {
	Token queries.JoinToken
	Value string
}

// Create makes a join token for an organization's ready cluster, for a
// member who may operate it: the bootstrap
// Secret first, then the row with its audit event; if the row cannot be
// written the Secret is deleted again.
func (s *Service) Create(ctx context.Context, who orgs.Acting, clusterID int64, in Input, actor audit.Actor) (Created, error) {
	c, err := s.cluster(ctx, who, orgs.Operate, clusterID)
	if err != nil {
		return Created{}, err
	}
	now := s.now()
	expires, limit, err := in.validate(now)
	if err != nil {
		return Created{}, err
	}
	if clusters.Suspended(c) {
		return Created{}, clusters.ErrSuspended
	}
	if c.Status != clusters.StatusReady {
		return Created{}, ErrClusterNotReady
	}
	value, err := bootstraputil.GenerateBootstrapToken()
	if err != nil {
		return Created{}, fmt.Errorf("generate bootstrap token: %w", err)
	}
	id, secret, _ := strings.Cut(value, ".")
	client, err := s.client(ctx, c)
	if err != nil {
		return Created{}, err
	}
	if _, err := client.CoreV1().Secrets(metav1.NamespaceSystem).Create(ctx, bootstrapSecret(id, secret, in.Description, expires), metav1.CreateOptions{}); err != nil {
		return Created{}, fmt.Errorf("create bootstrap token secret in cluster %d: %w", c.ID, err)
	}
	var t queries.JoinToken
	err = pgx.BeginFunc(ctx, s.Pool, func(tx pgx.Tx) error {
		q := queries.New(tx)
		t, err = q.JoinTokenCreate(ctx, queries.JoinTokenCreateParams{
			ClusterID: c.ID, TokenID: id, TokenHash: s.hash(value), SealedToken: s.Box.Seal([]byte(value)),
			Description: in.Description, ExpiresAt: pgtype.Timestamptz{Time: expires, Valid: !expires.IsZero()},
			MaxUses: pgtype.Int4{Int32: limit, Valid: limit > 0},
		})
		if err != nil {
			return fmt.Errorf("create join token: %w", err)
		}
		// The cluster's tokens are synced from now on (checks.JoinTokenSync).
		if err := checks.Schedule(ctx, q, c.ID, checks.JoinTokenSync, time.Now()); err != nil {
			return err
		}
		return audit.Record(ctx, q, actor, audit.Event{Action: "join_token.create", TargetType: "join_token", TargetID: fmt.Sprint(t.ID),
			Details: map[string]any{"cluster_id": c.ID, "token_id": id, "lifetime": in.Lifetime, "max_uses": limit}})
	})
	if err != nil {
		if derr := deleteSecret(context.WithoutCancel(ctx), client.CoreV1(), id); derr != nil {
			return Created{}, fmt.Errorf("%w (and the bootstrap Secret stays: %v)", err, derr)
		}
		return Created{}, err
	}
	return Created{Token: t, Value: value}, nil
}

// bootstrapSecret is the kubeadm bootstrap token Secret, as vcluster's own
// token command makes it.
func bootstrapSecret(id, secret, description string, expires time.Time) *corev1.Secret {
	data := map[string][]byte{
		bootstrapapi.BootstrapTokenIDKey:               []byte(id),
		bootstrapapi.BootstrapTokenSecretKey:           []byte(secret),
		bootstrapapi.BootstrapTokenUsageAuthentication: []byte("true"),
		bootstrapapi.BootstrapTokenUsageSigningKey:     []byte("true"),
		bootstrapapi.BootstrapTokenExtraGroupsKey:      []byte(NodeGroup),
		bootstrapapi.BootstrapTokenDescriptionKey:      []byte(description),
	}
	if !expires.IsZero() {
		data[bootstrapapi.BootstrapTokenExpirationKey] = []byte(expires.UTC().Format(time.RFC3339))
	}
	return &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{
			Name: bootstraputil.BootstrapTokenSecretName(id), Namespace: metav1.NamespaceSystem,
			Labels: map[string]string{"vcluster.loft.sh/token": "true", "vcluster.loft.sh/token-node-type": "worker"},
		},
		Type: bootstrapapi.SecretTypeBootstrapToken,
		Data: data,
	}
}

// deleteSecret removes a token's bootstrap Secret; a missing one is fine.
func deleteSecret(ctx context.Context, client corev1client.SecretsGetter, id string) error {
	err := client.Secrets(metav1.NamespaceSystem).Delete(ctx, bootstraputil.BootstrapTokenSecretName(id), metav1.DeleteOptions{})
	if err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("delete bootstrap token secret %s: %w", id, err)
	}
	return nil
}

// Revoke deletes a token's bootstrap Secret, then marks the row. Nodes
// that joined with it stay.
func (s *Service) Revoke(ctx context.Context, who orgs.Acting, clusterID, id int64, actor audit.Actor) (queries.JoinToken, error) {
	row, err := s.get(ctx, who, orgs.Operate, clusterID, id)
	if err != nil {
		return queries.JoinToken{}, err
	}
	if row.JoinToken.RevokedAt.Valid {
		return row.JoinToken, nil
	}
	if clusters.Suspended(row.Cluster) {
		return queries.JoinToken{}, clusters.ErrSuspended
	}
	if row.Cluster.Status != clusters.StatusReady {
		return queries.JoinToken{}, ErrRevokeNotReady
	}
	client, err := s.client(ctx, row.Cluster)
	if err != nil {
		return queries.JoinToken{}, err
	}
	if err := deleteSecret(ctx, client.CoreV1(), row.JoinToken.TokenID); err != nil {
		return queries.JoinToken{}, err
	}
	t := row.JoinToken
	err = pgx.BeginFunc(ctx, s.Pool, func(tx pgx.Tx) error {
		q := queries.New(tx)
		t, err = q.JoinTokenRevoke(ctx, id)
		if errors.Is(err, pgx.ErrNoRows) {
			// Revoked meanwhile by another request.
			return nil
		}
		if err != nil {
			return fmt.Errorf("revoke join token: %w", err)
		}
		return audit.Record(ctx, q, actor, audit.Event{Action: "join_token.revoke", TargetType: "join_token", TargetID: fmt.Sprint(t.ID),
			Details: map[string]any{"cluster_id": row.Cluster.ID, "token_id": t.TokenID}})
	})
	return t, err
}

// Get returns a token of one of the organization's clusters, for any
// member.
func (s *Service) Get(ctx context.Context, who orgs.Acting, clusterID, id int64) (queries.JoinTokenGetForMemberRow, error) {
	return s.get(ctx, who, orgs.Read, clusterID, id)
}

// get is Get for a member whose role allows p.
func (s *Service) get(ctx context.Context, who orgs.Acting, p orgs.Permission, clusterID, id int64) (queries.JoinTokenGetForMemberRow, error) {
	row, err := queries.New(s.Pool).JoinTokenGetForMember(ctx, queries.JoinTokenGetForMemberParams{
		ID: id, ClusterID: clusterID, OrgID: who.OrgID, UserID: who.UserID, Roles: who.Roles(p),
	})
	if errors.Is(err, pgx.ErrNoRows) {
		if err := clusters.Refusal(ctx, queries.New(s.Pool), who, p, clusterID); !errors.Is(err, clusters.ErrNotFound) {
			return row, err
		}
		return row, ErrNotFound
	}
	if err != nil {
		return row, fmt.Errorf("load join token: %w", err)
	}
	return row, nil
}

// Status is what a token can do now.
func Status(t queries.JoinToken, now time.Time) string {
	switch {
	case t.RevokedAt.Valid:
		return StatusRevoked
	case t.UsedUpAt.Valid || (t.MaxUses.Valid && t.Uses >= t.MaxUses.Int32):
		return StatusUsedUp
	case t.ExpiresAt.Valid && !now.Before(t.ExpiresAt.Time):
		return StatusExpired
	}
	return StatusActive
}

// Value opens a token's sealed value, for the join command.
func (s *Service) Value(t queries.JoinToken) (string, error) {
	v, err := s.Box.Open(t.SealedToken)
	if err != nil {
		return "", fmt.Errorf("open join token %d: %w", t.ID, err)
	}
	return string(v), nil
}

// hash is how a token is found from its value.
func (s *Service) hash(value string) string { return s.Box.MAC("join-token", []byte(value)) }

// cluster is an organization's cluster that is not deleted, for a member
// whose role allows p.
func (s *Service) cluster(ctx context.Context, who orgs.Acting, p orgs.Permission, id int64) (queries.Cluster, error) {
	c, err := queries.New(s.Pool).ClusterGetForMember(ctx, queries.ClusterGetForMemberParams{
		ID: id, OrgID: who.OrgID, UserID: who.UserID, Roles: who.Roles(p),
	})
	if errors.Is(err, pgx.ErrNoRows) {
		if err := clusters.Refusal(ctx, queries.New(s.Pool), who, p, id); !errors.Is(err, clusters.ErrNotFound) {
			return c, err
		}
		return c, ErrNotFound
	}
	if err != nil {
		return c, fmt.Errorf("load cluster: %w", err)
	}
	return c, nil
}

func (s *Service) client(ctx context.Context, c queries.Cluster) (kubernetes.Interface, error) {
	cfg, err := s.Virtual(ctx, c)
	if err != nil {
		return nil, fmt.Errorf("virtual cluster %d: %w", c.ID, err)
	}
	// A control plane that hangs holds a request (or a sync) for seconds,
	// not minutes.
	cfg = checks.Bounded(cfg)
	client, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return nil, fmt.Errorf("virtual cluster %d client: %w", c.ID, err)
	}
	return client, nil
}
