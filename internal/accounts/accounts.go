// Package accounts is what people do with their accounts: sign up with an
// emailed code, sign in and out, reset a password. Each action runs in one
// transaction with its audit event and the jobs it enqueues (mail).
package accounts

import (
	"cmp"
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"math/big"
	"strings"
	"sync"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgtype"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/riverqueue/river"
	"golang.org/x/sync/semaphore"

	"github.com/kubebyon/kubebyon/internal/audit"
	"github.com/kubebyon/kubebyon/internal/input"
	"github.com/kubebyon/kubebyon/internal/notify"
	"github.com/kubebyon/kubebyon/internal/passwords"
	"github.com/kubebyon/kubebyon/internal/secrets"
	"github.com/kubebyon/kubebyon/internal/signup"
	"github.com/kubebyon/kubebyon/queries"
)

// Code lifetimes and limits.
const (
	SignupCodeTTL  = 10 * time.Minute
	ResetCodeTTL   = 30 * time.Minute
	MaxCodeTries   = 5
	ResendInterval = time.Minute
)

// Errors whose messages users see (as catalog message IDs, see Message).
var (
	ErrBadCredentials  = errors.New("ErrBadCredentials")
	ErrDisabled        = errors.New("ErrAccountDisabled")
	ErrUnverified      = errors.New("ErrAccountUnverified")
	ErrCodeInvalid     = errors.New("ErrCodeInvalid")
	ErrCodeExpired     = errors.New("ErrCodeExpired")
	ErrTooManyAttempts = errors.New("ErrCodeTooManyAttempts")
	ErrResendTooSoon   = errors.New("ErrResendTooSoon")
	ErrAvatarBusy      = errors.New("ErrAvatarBusy")
)

// Service carries what the account actions need.
type Service struct {
	Pool  *pgxpool.Pool
	River *river.Client[pgx.Tx]
	Box   *secrets.Box
	Now   func() time.Time
	// Passwords hashes new passwords (the zero value at the production
	// cost).
	Passwords passwords.Hasher

	dummyOnce sync.Once
	dummy     string

	// avatarSlots bound how many uploads decode at once: each takes up to
	// avatars.MaxProcessBytes while it is decoded.
	avatarOnce  sync.Once
	avatarSlots *semaphore.Weighted
	// avatarUsers are the users whose upload is being processed: one at a
	// time each, so that one user's parallel uploads cannot take every slot.
	avatarMu    sync.Mutex
	avatarUsers map[int64]bool
}

// AvatarsAtOnce is how many avatar uploads are decoded at the same time;
// the others wait their turn.
const AvatarsAtOnce = 2

func (s *Service) avatarSlot(ctx context.Context) (release func(), err error) {
	s.avatarOnce.Do(func() { s.avatarSlots = semaphore.NewWeighted(AvatarsAtOnce) })
	if err := s.avatarSlots.Acquire(ctx, 1); err != nil {
		return nil, fmt.Errorf("wait to decode an avatar: %w", err)
	}
	return func() { s.avatarSlots.Release(1) }, nil
}

// avatarUserSlot claims the user's one avatar upload in this process; ok
// is false while another of theirs is being processed.
func (s *Service) avatarUserSlot(userID int64) (release func(), ok bool) {
	s.avatarMu.Lock()
	defer s.avatarMu.Unlock()
	if s.avatarUsers[userID] {
		return nil, false
	}
	if s.avatarUsers == nil {
		s.avatarUsers = map[int64]bool{}
	}
	s.avatarUsers[userID] = true
	return func() {
		s.avatarMu.Lock()
		defer s.avatarMu.Unlock()
		delete(s.avatarUsers, userID)
	}, true
}

func (s *Service) now() time.Time {
	if s.Now != nil {
		return s.Now()
	}
	return time.Now()
}

// inTx runs fn in a transaction. A wrong code fn met (checkCode) is
// counted once the transaction has rolled back.
func (s *Service) inTx(ctx context.Context, fn func(pgx.Tx, *queries.Queries) error) error {
	err := pgx.BeginFunc(ctx, s.Pool, func(tx pgx.Tx) error {
		return fn(tx, queries.New(tx))
	})
	var wrong wrongCodeError
	if errors.As(err, &wrong) {
		return s.countWrongCode(ctx, wrong.codeID)
	}
	return err
}

// wrongCodeError is a wrong code for the email code codeID, which inTx
// counts as an attempt after the caller's transaction: counted within it,
// the attempt would roll back with it; counted on a connection of its own
// while the transaction holds one, every connection of the pool could be
// held by requests each waiting for another.
type wrongCodeError struct{ codeID int64 }

func (wrongCodeError) Error() string { return ErrCodeInvalid.Error() }

func (wrongCodeError) Is(target error) bool { return target == ErrCodeInvalid }

// countWrongCode counts an attempt with a wrong code: ErrTooManyAttempts
// once that is the last allowed, else ErrCodeInvalid.
func (s *Service) countWrongCode(ctx context.Context, codeID int64) error {
	attempts, err := queries.New(s.Pool).EmailCodeAddAttempt(ctx, codeID)
	if err != nil {
		return fmt.Errorf("count attempt: %w", err)
	}
	if attempts >= MaxCodeTries {
		return ErrTooManyAttempts
	}
	return ErrCodeInvalid
}

// FieldErrors maps form fields to catalog message IDs.
type FieldErrors = input.Errors

// SignUpInput is the sign-up form.
type SignUpInput struct {
	Email    string
	Name     string
	Password string
	// MailLanguage is the language of the email with the code: the
	// browser's. The account's own language stays "Same as my browser".
	MailLanguage string
}

// Validate checks the form, returning FieldErrors.
func (in *SignUpInput) Validate() error {
	errs := FieldErrors{}
	var ok bool
	if in.Email, ok = input.Email(in.Email); !ok {
		errs["email"] = "ErrEmailInvalid"
	}
	var msg string
	if in.Name, msg = checkName(in.Name); msg != "" {
		errs["name"] = msg
	}
	if msg := CheckPassword(in.Password); msg != "" {
		errs["password"] = msg
	}
	if len(errs) > 0 {
		return errs
	}
	return nil
}

// checkName trims a display name and returns the message ID of what is
// wrong with it, if anything.
func checkName(raw string) (string, string) {
	name := strings.TrimSpace(raw)
	switch {
	case name == "":
		return name, "ErrNameRequired"
	case !utf8.ValidString(name) || strings.IndexFunc(name, unicode.IsControl) >= 0:
		// PostgreSQL refuses invalid UTF-8 and NUL; line breaks and other
		// control characters have no place in a name either.
		return name, "ErrNameInvalid"
	case utf8.RuneCountInString(name) > 100:
		return name, "ErrNameTooLong"
	}
	return name, ""
}

// CheckPassword returns a message ID when pw is not acceptable.
func CheckPassword(pw string) string {
	n := utf8.RuneCountInString(pw)
	switch {
	case n < passwords.MinLength:
		return "ErrPasswordTooShort"
	case len(pw) > 256:
		return "ErrPasswordTooLong"
	}
	return ""
}

// SignUp registers an unverified account and mails it a code. It says the
// same thing whether or not the address is registered: an existing,
// verified account gets a notice instead of a code.
func (s *Service) SignUp(ctx context.Context, in SignUpInput, actor audit.Actor) error {
	if err := in.Validate(); err != nil {
		return err
	}
	hash, err := s.Passwords.Hash(in.Password)
	if err != nil {
		return err
	}
	return s.inTx(ctx, func(tx pgx.Tx, q *queries.Queries) error {
		// An open invitation of the address admits it too; it is used up
		// once the code proves the address (VerifySignup).
		if _, err := signup.Admit(ctx, q, in.Email, s.now()); err != nil {
			return refusal(err)
		}
		existing, err := q.UserGetByEmail(ctx, in.Email)
		switch {
		case errors.Is(err, pgx.ErrNoRows):
			u, err := q.UserCreateUnverified(ctx, queries.UserCreateUnverifiedParams{
				Email: in.Email, Name: in.Name, PasswordHash: text(hash),
			})
			if isUniqueViolation(err) {
				// Registered a moment ago by a concurrent request: say the same.
				return nil
			}
			if err != nil {
				return fmt.Errorf("create user: %w", err)
			}
			actor.UserID, actor.Email = u.ID, u.Email
			if err := audit.Record(ctx, q, actor, audit.Event{Action: "user.signup", TargetType: "user", TargetID: fmt.Sprint(u.ID)}); err != nil {
				return err
			}
			return s.sendCodeIn(ctx, tx, q, u, in.MailLanguage, "signup", "", SignupCodeTTL, notify.EmailSignupCode)
		case err != nil:
			return fmt.Errorf("look up user: %w", err)
		case existing.EmailVerifiedAt.Valid:
			args, err := notify.NewEmail(s.Box, existing.Email, existing.Language, notify.EmailSignupExists, map[string]any{})
			if err != nil {
				return err
			}
			_, err = s.River.InsertTx(ctx, tx, args, nil)
			return err
		default:
			u, err := q.UserUpdateUnverified(ctx, queries.UserUpdateUnverifiedParams{
				ID: existing.ID, Name: in.Name, PasswordHash: text(hash),
			})
			if err != nil {
				return fmt.Errorf("update unverified user: %w", err)
			}
			return s.sendCodeIn(ctx, tx, q, u, in.MailLanguage, "signup", "", SignupCodeTTL, notify.EmailSignupCode)
		}
	})
}

// SignUpSettings are the sign-up policy and the allowed domains, as the
// sign-up pages show them.
func (s *Service) SignUpSettings(ctx context.Context) (signup.Settings, error) {
	return signup.Load(ctx, queries.New(s.Pool))
}

// ResendSignupCode mails a new code to an unverified account, at most once a
// minute, in the browser's language (lang) unless the account has its own.
// Unknown or verified addresses get the same answer and no mail.
func (s *Service) ResendSignupCode(ctx context.Context, email, lang string) error {
	return s.inTx(ctx, func(tx pgx.Tx, q *queries.Queries) error {
		u, err := q.UserGetByEmail(ctx, email)
		if errors.Is(err, pgx.ErrNoRows) || (err == nil && u.EmailVerifiedAt.Valid) {
			return nil
		}
		if err != nil {
			return fmt.Errorf("look up user: %w", err)
		}
		if err := s.checkResend(ctx, q, u.ID, "signup"); err != nil {
			return err
		}
		return s.sendCodeIn(ctx, tx, q, u, cmp.Or(u.Language, lang), "signup", "", SignupCodeTTL, notify.EmailSignupCode)
	})
}

func (s *Service) checkResend(ctx context.Context, q *queries.Queries, userID int64, purpose string) error {
	last, err := q.EmailCodeLatest(ctx, queries.EmailCodeLatestParams{UserID: userID, Purpose: purpose})
	if errors.Is(err, pgx.ErrNoRows) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("latest code: %w", err)
	}
	if s.now().Sub(last.CreatedAt.Time) < ResendInterval {
		return ErrResendTooSoon
	}
	return nil
}

// sendCode replaces the user's open codes of a purpose with a new one and
// enqueues the email that carries it, to `to` (the account's address unless
// given), in the account's language.
func (s *Service) sendCode(ctx context.Context, tx pgx.Tx, q *queries.Queries, u queries.User, purpose, newEmail string, ttl time.Duration, template string) error {
	return s.sendCodeIn(ctx, tx, q, u, u.Language, purpose, newEmail, ttl, template)
}

// sendCodeIn is sendCode with the email in lang.
func (s *Service) sendCodeIn(ctx context.Context, tx pgx.Tx, q *queries.Queries, u queries.User, lang, purpose, newEmail string, ttl time.Duration, template string) error {
	code, err := newCode()
	if err != nil {
		return err
	}
	if err := q.EmailCodeConsumeAllForUser(ctx, queries.EmailCodeConsumeAllForUserParams{UserID: u.ID, Purpose: purpose}); err != nil {
		return fmt.Errorf("retire old codes: %w", err)
	}
	if _, err := q.EmailCodeCreate(ctx, queries.EmailCodeCreateParams{
		UserID:    u.ID,
		Purpose:   purpose,
		CodeHash:  s.Box.MAC("email-code:"+purpose, []byte(code)),
		NewEmail:  newEmail,
		ExpiresAt: pgtype.Timestamptz{Time: s.now().Add(ttl), Valid: true},
	}); err != nil {
		return fmt.Errorf("store code: %w", err)
	}
	to := u.Email
	if newEmail != "" {
		to = newEmail
	}
	args, err := notify.NewEmail(s.Box, to, lang, template, map[string]any{
		"Code": code, "Name": u.Name, "Minutes": int(ttl / time.Minute),
	})
	if err != nil {
		return err
	}
	if _, err := s.River.InsertTx(ctx, tx, args, nil); err != nil {
		return fmt.Errorf("enqueue email: %w", err)
	}
	return nil
}

func newCode() (string, error) {
	n, err := rand.Int(rand.Reader, big.NewInt(1_000_000))
	if err != nil {
		return "", fmt.Errorf("generate code: %w", err)
	}
	return fmt.Sprintf("%06d", n.Int64()), nil
}

// NormalizeCode strips spaces and dashes users paste with a code and checks
// it is six digits.
func NormalizeCode(raw string) (string, bool) {
	var b strings.Builder
	for _, r := range raw {
		switch {
		case r >= '0' && r <= '9':
			b.WriteRune(r)
		case r == ' ' || r == '-' || r == '\t':
		default:
			return "", false
		}
	}
	c := b.String()
	return c, len(c) == 6
}

// checkCode verifies a code of a purpose for a user, in the caller's
// transaction q (inTx's). The right code is consumed with q; a wrong one is
// a wrongCodeError, which inTx counts as an attempt once the transaction
// has ended, so that rolling it back does not undo the count.
func (s *Service) checkCode(ctx context.Context, q *queries.Queries, userID int64, purpose, raw string) (queries.EmailCode, error) {
	c, err := q.EmailCodeLatest(ctx, queries.EmailCodeLatestParams{UserID: userID, Purpose: purpose})
	if errors.Is(err, pgx.ErrNoRows) {
		return c, ErrCodeInvalid
	}
	if err != nil {
		return c, fmt.Errorf("look up code: %w", err)
	}
	switch {
	case c.ConsumedAt.Valid:
		return c, ErrCodeInvalid
	case c.Attempts >= MaxCodeTries:
		return c, ErrTooManyAttempts
	case s.now().After(c.ExpiresAt.Time):
		return c, ErrCodeExpired
	}
	code, ok := NormalizeCode(raw)
	if !ok || !secrets.Equal(c.CodeHash, s.Box.MAC("email-code:"+purpose, []byte(code))) {
		return c, wrongCodeError{codeID: c.ID}
	}
	n, err := q.EmailCodeConsume(ctx, c.ID)
	if err != nil {
		return c, fmt.Errorf("consume code: %w", err)
	}
	if n == 0 {
		return c, ErrCodeInvalid // used by a concurrent request
	}
	return c, nil
}

// VerifySignup checks the emailed code and activates the account.
func (s *Service) VerifySignup(ctx context.Context, email, code string, actor audit.Actor) (queries.User, error) {
	var u queries.User
	err := s.inTx(ctx, func(tx pgx.Tx, q *queries.Queries) error {
		var err error
		u, err = q.UserGetByEmail(ctx, email)
		if errors.Is(err, pgx.ErrNoRows) || (err == nil && u.EmailVerifiedAt.Valid) {
			return ErrCodeInvalid
		}
		if err != nil {
			return fmt.Errorf("look up user: %w", err)
		}
		if _, err := s.checkCode(ctx, q, u.ID, "signup", code); err != nil {
			return err
		}
		// The policy may have changed since the code was sent.
		inv, err := signup.Admit(ctx, q, u.Email, s.now())
		if err != nil {
			return err
		}
		if err := q.UserMarkVerified(ctx, u.ID); err != nil {
			return fmt.Errorf("mark verified: %w", err)
		}
		if inv.ID != 0 {
			if err := signup.Accept(ctx, q, inv.ID, u.ID, s.now()); err != nil {
				return err
			}
		}
		actor.UserID, actor.Email = u.ID, u.Email
		return audit.Record(ctx, q, actor, audit.Event{Action: "user.verify_email", TargetType: "user", TargetID: fmt.Sprint(u.ID)})
	})
	if err != nil {
		return u, err
	}
	u.EmailVerifiedAt = pgtype.Timestamptz{Time: s.now(), Valid: true}
	return u, nil
}

// dummyHash is checked on a sign-in with an unknown email so that it costs
// as much as one with a known email: timing does not tell which addresses
// are registered.
func (s *Service) dummyHash() string {
	s.dummyOnce.Do(func() { s.dummy, _ = s.Passwords.Hash("kubebyon-timing-equaliser") })
	return s.dummy
}

// Authenticate checks an email and password.
func (s *Service) Authenticate(ctx context.Context, email, password string) (queries.User, error) {
	q := queries.New(s.Pool)
	u, err := q.UserGetByEmail(ctx, strings.TrimSpace(email))
	if errors.Is(err, pgx.ErrNoRows) || (err == nil && !u.PasswordHash.Valid) {
		_, _ = passwords.Verify(password, s.dummyHash())
		return u, ErrBadCredentials
	}
	if err != nil {
		return u, fmt.Errorf("look up user: %w", err)
	}
	ok, err := passwords.Verify(password, u.PasswordHash.String)
	if err != nil {
		return u, err
	}
	switch {
	case !ok:
		return u, ErrBadCredentials
	case u.DisabledAt.Valid:
		return u, ErrDisabled
	case !u.EmailVerifiedAt.Valid:
		return u, ErrUnverified
	}
	return u, nil
}

// StartSession records a signed-in browser for u and returns the session
// id to keep in the cookie session. It writes the audit event and, when the
// user wants it, the new sign-in security email.
func (s *Service) StartSession(ctx context.Context, u queries.User, method string, actor audit.Actor) (string, error) {
	id := rand.Text()
	err := s.inTx(ctx, func(tx pgx.Tx, q *queries.Queries) error {
		if err := q.UserSessionCreate(ctx, queries.UserSessionCreateParams{
			ID: id, UserID: u.ID, Ip: actor.IP, UserAgent: actor.UserAgent,
		}); err != nil {
			return fmt.Errorf("create session: %w", err)
		}
		if err := q.UserRecordSignIn(ctx, u.ID); err != nil {
			return fmt.Errorf("record sign-in: %w", err)
		}
		actor.UserID, actor.Email = u.ID, u.Email
		if err := audit.Record(ctx, q, actor, audit.Event{Action: "user.sign_in", TargetType: "user", TargetID: fmt.Sprint(u.ID), Details: map[string]any{"method": method}}); err != nil {
			return err
		}
		on, err := notify.Enabled(ctx, q, u.ID, notify.SecuritySignIn, notify.Email)
		if err != nil || !on {
			return err
		}
		args, err := notify.NewEmail(s.Box, u.Email, u.Language, notify.EmailNewSignIn, map[string]any{
			"Name": u.Name, "IP": actor.IP, "UserAgent": input.Truncate(actor.UserAgent, 200),
			"Time": s.now().UTC().Format("2006-01-02 15:04 MST"),
		})
		if err != nil {
			return err
		}
		_, err = s.River.InsertTx(ctx, tx, args, nil)
		return err
	})
	return id, err
}

// EndSession signs a browser out.
func (s *Service) EndSession(ctx context.Context, sessionID string, actor audit.Actor) error {
	return s.inTx(ctx, func(tx pgx.Tx, q *queries.Queries) error {
		if err := q.UserSessionEnd(ctx, sessionID); err != nil {
			return fmt.Errorf("end session: %w", err)
		}
		return audit.Record(ctx, q, actor, audit.Event{Action: "user.sign_out", TargetType: "user", TargetID: fmt.Sprint(actor.UserID)})
	})
}

// RequestPasswordReset mails a reset code when the address belongs to an
// active account; otherwise it does nothing, and says the same.
func (s *Service) RequestPasswordReset(ctx context.Context, email string, actor audit.Actor) error {
	return s.inTx(ctx, func(tx pgx.Tx, q *queries.Queries) error {
		u, err := q.UserGetByEmail(ctx, strings.TrimSpace(email))
		if errors.Is(err, pgx.ErrNoRows) || (err == nil && (u.DisabledAt.Valid || !u.EmailVerifiedAt.Valid)) {
			return nil
		}
		if err != nil {
			return fmt.Errorf("look up user: %w", err)
		}
		if err := s.checkResend(ctx, q, u.ID, "password_reset"); err != nil {
			return err
		}
		actor.UserID, actor.Email = u.ID, u.Email
		if err := audit.Record(ctx, q, actor, audit.Event{Action: "user.password_reset_request", TargetType: "user", TargetID: fmt.Sprint(u.ID)}); err != nil {
			return err
		}
		return s.sendCode(ctx, tx, q, u, "password_reset", "", ResetCodeTTL, notify.EmailPasswordReset)
	})
}

// ResetPassword sets a new password with an emailed code, ends every
// session of the account and revokes its API keys: whoever knew the old
// password may have made some.
func (s *Service) ResetPassword(ctx context.Context, email, code, newPassword string, actor audit.Actor) error {
	if msg := CheckPassword(newPassword); msg != "" {
		return FieldErrors{"password": msg}
	}
	hash, err := s.Passwords.Hash(newPassword)
	if err != nil {
		return err
	}
	return s.inTx(ctx, func(tx pgx.Tx, q *queries.Queries) error {
		u, err := q.UserGetByEmail(ctx, strings.TrimSpace(email))
		if errors.Is(err, pgx.ErrNoRows) {
			return ErrCodeInvalid
		}
		if err != nil {
			return fmt.Errorf("look up user: %w", err)
		}
		if _, err := s.checkCode(ctx, q, u.ID, "password_reset", code); err != nil {
			return err
		}
		if err := q.UserSetPassword(ctx, queries.UserSetPasswordParams{ID: u.ID, PasswordHash: text(hash)}); err != nil {
			return fmt.Errorf("set password: %w", err)
		}
		n, err := q.UserSessionEndAllForUser(ctx, queries.UserSessionEndAllForUserParams{UserID: u.ID, KeepID: ""})
		if err != nil {
			return fmt.Errorf("end sessions: %w", err)
		}
		keys, err := q.ApiKeyRevokeAllForUser(ctx, u.ID)
		if err != nil {
			return fmt.Errorf("revoke api keys: %w", err)
		}
		actor.UserID, actor.Email = u.ID, u.Email
		return audit.Record(ctx, q, actor, audit.Event{Action: "user.password_reset", TargetType: "user", TargetID: fmt.Sprint(u.ID),
			Details: map[string]any{"sessions_ended": n, "api_keys_revoked": keys}})
	})
}

func text(s string) pgtype.Text { return pgtype.Text{String: s, Valid: true} }

func isUniqueViolation(err error) bool {
	var pgErr *pgconn.PgError
	return errors.As(err, &pgErr) && pgErr.Code == "23505"
}
