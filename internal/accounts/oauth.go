package accounts

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/jackc/pgx/v5"

	"github.com/kubebyon/kubebyon/internal/audit"
	"github.com/kubebyon/kubebyon/internal/input"
	"github.com/kubebyon/kubebyon/internal/signup"
	"github.com/kubebyon/kubebyon/queries"
)

// Identity is a person as a sign-in provider (GitHub, Google) vouches for
// them. It is kept, sealed, in the browser's session while the person
// proves an existing account is theirs, hence the JSON tags.
type Identity struct {
	Provider string `json:"provider"` // "github", "google"
	Subject  string `json:"subject"`  // the provider's stable id for the person
	// Email is the address the provider has verified as the person's; ""
	// when it vouches for none.
	Email string `json:"email"`
	Name  string `json:"name"`
}

// Errors of signing in with a provider (catalog message IDs).
var (
	ErrIdentityUnverified = errors.New("ErrOAuthEmailUnverified")
	// ErrIdentityConflict: a concurrent request made the same account or
	// linked the same identity; trying again finds it.
	ErrIdentityConflict = errors.New("ErrOAuthTryAgain")
)

// LinkRequired says an identity's email belongs to an account the identity
// is not linked to. It is not linked silently: that would let anyone whose
// provider account shows the address (verified by the provider's rules, not
// ours) into the account. The person proves the account is theirs first:
// with its password, or by signing in to it with a provider already linked.
type LinkRequired struct {
	Email       string
	HasPassword bool
	Providers   []string // the providers linked to the account
}

func (e *LinkRequired) Error() string {
	return "the identity's email belongs to an account it is not linked to"
}

// IdentitySignIn is who signing in with a provider signs in.
type IdentitySignIn struct {
	User    queries.User
	Created bool // a new account was made for the identity
	Linked  bool // the identity was linked to the signed-in account
}

// SignInWithIdentity finds the account an identity signs in to: the one it
// is linked to; else the signed-in account (current, nil when nobody is
// signed in) when the provider vouches for its email, linking it; else a new
// account when nobody has the email and the sign-up policy admits it.
// Otherwise it returns *LinkRequired, ErrIdentityUnverified when the
// provider vouches for no email, or signup's ErrClosed, ErrInviteOnly or
// ErrDomain.
func (s *Service) SignInWithIdentity(ctx context.Context, id Identity, current *queries.User, actor audit.Actor) (IdentitySignIn, error) {
	var out IdentitySignIn
	err := s.inTx(ctx, func(tx pgx.Tx, q *queries.Queries) error {
		u, err := q.OAuthIdentityGetUser(ctx, queries.OAuthIdentityGetUserParams{Provider: id.Provider, Subject: id.Subject})
		if err == nil {
			if u.DisabledAt.Valid {
				return ErrDisabled
			}
			out.User = u
			return nil
		}
		if !errors.Is(err, pgx.ErrNoRows) {
			return fmt.Errorf("look up identity: %w", err)
		}
		email, ok := input.Email(id.Email)
		if !ok {
			return ErrIdentityUnverified
		}
		id.Email = email
		if current != nil && strings.EqualFold(current.Email, email) {
			out.User, out.Linked = *current, true
			return linkIdentity(ctx, q, *current, id, actor)
		}
		existing, err := q.UserGetByEmail(ctx, email)
		switch {
		case errors.Is(err, pgx.ErrNoRows):
			return s.admitIdentity(ctx, q, email, &out, func() (queries.User, error) {
				return createForIdentity(ctx, q, id, actor)
			})
		case err != nil:
			return fmt.Errorf("look up user: %w", err)
		case existing.DisabledAt.Valid:
			return ErrDisabled
		case !existing.EmailVerifiedAt.Valid:
			return s.admitIdentity(ctx, q, email, &out, func() (queries.User, error) {
				return claimForIdentity(ctx, q, existing, id, actor)
			})
		}
		providers, err := q.OAuthIdentityListProvidersByUser(ctx, existing.ID)
		if err != nil {
			return fmt.Errorf("list identities: %w", err)
		}
		return &LinkRequired{Email: existing.Email, HasPassword: existing.PasswordHash.Valid, Providers: providers}
	})
	return out, err
}

// admitIdentity makes the account for an identity with create, in q, if
// the sign-up policy admits email (signup.Admit), and uses up the
// invitation that admitted it, if any.
func (s *Service) admitIdentity(ctx context.Context, q *queries.Queries, email string, out *IdentitySignIn, create func() (queries.User, error)) error {
	inv, err := signup.Admit(ctx, q, email, s.now())
	if err != nil {
		return err
	}
	if out.User, err = create(); err != nil {
		return err
	}
	out.Created = true
	if inv.ID != 0 {
		return signup.Accept(ctx, q, inv.ID, out.User.ID, s.now())
	}
	return nil
}

// LinkIdentityWithPassword links an identity to the account that has its
// email, once the account's password proves the person owns it.
func (s *Service) LinkIdentityWithPassword(ctx context.Context, id Identity, password string, actor audit.Actor) (queries.User, error) {
	var ok bool
	if id.Email, ok = input.Email(id.Email); !ok {
		return queries.User{}, ErrIdentityUnverified
	}
	u, err := s.Authenticate(ctx, id.Email, password)
	if err != nil {
		return u, err
	}
	err = s.inTx(ctx, func(tx pgx.Tx, q *queries.Queries) error {
		return linkIdentity(ctx, q, u, id, actor)
	})
	return u, err
}

func linkIdentity(ctx context.Context, q *queries.Queries, u queries.User, id Identity, actor audit.Actor) error {
	if err := createIdentity(ctx, q, u.ID, id); err != nil {
		return err
	}
	actor.UserID, actor.Email = u.ID, u.Email
	return audit.Record(ctx, q, actor, audit.Event{
		Action: "user.link_identity", TargetType: "user", TargetID: fmt.Sprint(u.ID),
		Details: map[string]any{"provider": id.Provider, "subject": id.Subject},
	})
}

func createForIdentity(ctx context.Context, q *queries.Queries, id Identity, actor audit.Actor) (queries.User, error) {
	u, err := q.UserCreateFromIdentity(ctx, queries.UserCreateFromIdentityParams{
		Email: id.Email, Name: identityName(id),
	})
	if isUniqueViolation(err) {
		return u, ErrIdentityConflict
	}
	if err != nil {
		return u, fmt.Errorf("create user: %w", err)
	}
	if err := createIdentity(ctx, q, u.ID, id); err != nil {
		return u, err
	}
	actor.UserID, actor.Email = u.ID, u.Email
	return u, audit.Record(ctx, q, actor, audit.Event{
		Action: "user.signup", TargetType: "user", TargetID: fmt.Sprint(u.ID),
		Details: map[string]any{"provider": id.Provider, "subject": id.Subject},
	})
}

// claimForIdentity gives an unverified account to the person the provider
// vouches for. Keeping the sign-up's password would let whoever typed the
// address (perhaps not its owner) into the account once it is verified.
func claimForIdentity(ctx context.Context, q *queries.Queries, existing queries.User, id Identity, actor audit.Actor) (queries.User, error) {
	u, err := q.UserClaimUnverified(ctx, queries.UserClaimUnverifiedParams{
		ID: existing.ID, Name: identityName(id),
	})
	if errors.Is(err, pgx.ErrNoRows) {
		return u, ErrIdentityConflict // verified a moment ago
	}
	if err != nil {
		return u, fmt.Errorf("claim unverified user: %w", err)
	}
	if err := createIdentity(ctx, q, u.ID, id); err != nil {
		return u, err
	}
	actor.UserID, actor.Email = u.ID, u.Email
	return u, audit.Record(ctx, q, actor, audit.Event{
		Action: "user.signup", TargetType: "user", TargetID: fmt.Sprint(u.ID),
		Details: map[string]any{"provider": id.Provider, "subject": id.Subject, "replaced_unverified": true},
	})
}

func createIdentity(ctx context.Context, q *queries.Queries, userID int64, id Identity) error {
	err := q.OAuthIdentityCreate(ctx, queries.OAuthIdentityCreateParams{
		UserID: userID, Provider: id.Provider, Subject: id.Subject, Email: id.Email,
	})
	if isUniqueViolation(err) {
		return ErrIdentityConflict
	}
	if err != nil {
		return fmt.Errorf("link %s identity: %w", id.Provider, err)
	}
	return nil
}

// identityName is the account name for an identity: the provider's, within
// the sign-up form's limit, or the email's local part.
func identityName(id Identity) string {
	name := strings.TrimSpace(id.Name)
	if name == "" {
		name, _, _ = strings.Cut(id.Email, "@")
	}
	if utf8.RuneCountInString(name) > 100 {
		name = string([]rune(name)[:100])
	}
	return name
}
