package accounts

import (
	"cmp"
	"context"
	"crypto/rand"
	"crypto/subtle"
	"encoding/base32"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/pquerna/otp"
	"github.com/pquerna/otp/totp"

	"github.com/kubebyon/kubebyon/internal/adminauth"
	"github.com/kubebyon/kubebyon/internal/audit"
	"github.com/kubebyon/kubebyon/internal/passwords"
	"github.com/kubebyon/kubebyon/queries"
)

// Two-factor authentication with TOTP (RFC 6238: six digits, 30 s steps,
// SHA-1, what every authenticator app reads from the QR code) and
// recovery codes.
const (
	// RecoveryCodes is how many recovery codes a user gets at a time.
	RecoveryCodes = 10
	// totpPeriod is the length of a time step; codes of the steps just
	// before and after now are accepted too, for clocks a little off.
	totpPeriod = 30
	// recoveryPurpose keys the recovery codes' hashes (secrets.Box.MAC).
	recoveryPurpose = "recovery-code"
)

// Errors whose messages users see (catalog message IDs).
var (
	ErrTwoFactorCode       = errors.New("ErrTwoFactorCode")
	ErrTwoFactorNotPending = errors.New("ErrTwoFactorNotPending")
	ErrTwoFactorOff        = errors.New("ErrTwoFactorOff")
	ErrTwoFactorConfirm    = errors.New("ErrTwoFactorConfirm")
)

// TwoFactor is a user's two-factor state.
type TwoFactor struct {
	Enabled bool
	Since   time.Time
	// CodesLeft is how many recovery codes are unused.
	CodesLeft int64
}

// TwoFactorStatus reads the user's two-factor state.
func (s *Service) TwoFactorStatus(ctx context.Context, userID int64) (TwoFactor, error) {
	q := queries.New(s.Pool)
	row, err := q.UserTOTPGet(ctx, userID)
	if errors.Is(err, pgx.ErrNoRows) || (err == nil && !row.EnabledAt.Valid) {
		return TwoFactor{}, nil
	}
	if err != nil {
		return TwoFactor{}, fmt.Errorf("read two-factor state: %w", err)
	}
	left, err := q.UserRecoveryCodesLeft(ctx, userID)
	if err != nil {
		return TwoFactor{}, fmt.Errorf("count recovery codes: %w", err)
	}
	return TwoFactor{Enabled: true, Since: row.EnabledAt.Time, CodesLeft: left}, nil
}

// TwoFactorEnrolment is a secret waiting for its first code.
type TwoFactorEnrolment struct {
	// Secret is the base32 secret, for typing into an app by hand.
	Secret string
	// Key is the otpauth:// key the QR code holds.
	Key *otp.Key
}

// StartTwoFactor returns the user's enrolment: the secret they started
// with if they did (reloading the page shows the same QR code), else a
// new one. ErrTwoFactorNotPending if two-factor is already on.
func (s *Service) StartTwoFactor(ctx context.Context, u queries.User, issuer string) (TwoFactorEnrolment, error) {
	key, err := totp.Generate(totp.GenerateOpts{Issuer: issuer, AccountName: u.Email})
	if err != nil {
		return TwoFactorEnrolment{}, fmt.Errorf("generate TOTP secret: %w", err)
	}
	row, err := queries.New(s.Pool).UserTOTPStart(ctx, queries.UserTOTPStartParams{UserID: u.ID, SecretSealed: s.Box.Seal([]byte(key.Secret()))})
	if err != nil {
		return TwoFactorEnrolment{}, fmt.Errorf("start two-factor enrolment: %w", err)
	}
	if row.EnabledAt.Valid {
		return TwoFactorEnrolment{}, ErrTwoFactorNotPending
	}
	secret, err := s.Box.Open(row.SecretSealed)
	if err != nil {
		return TwoFactorEnrolment{}, fmt.Errorf("open TOTP secret: %w", err)
	}
	if string(secret) != key.Secret() {
		// An enrolment begun before: the same secret, in a key of its own.
		key, err = totp.Generate(totp.GenerateOpts{Issuer: issuer, AccountName: u.Email, Secret: decodeSecret(string(secret))})
		if err != nil {
			return TwoFactorEnrolment{}, fmt.Errorf("rebuild TOTP key: %w", err)
		}
	}
	return TwoFactorEnrolment{Secret: key.Secret(), Key: key}, nil
}

// decodeSecret turns the base32 text of a secret back into its bytes
// (totp.GenerateOpts takes the raw secret).
func decodeSecret(secret string) []byte {
	b, _ := base32.StdEncoding.WithPadding(base32.NoPadding).DecodeString(strings.ToUpper(secret))
	return b
}

// EnableTwoFactor confirms the user's enrolment with a code from their
// app and returns their recovery codes, which are shown once: only their
// hashes are kept.
func (s *Service) EnableTwoFactor(ctx context.Context, u queries.User, code string, actor audit.Actor) ([]string, error) {
	var codes []string
	err := s.inTx(ctx, func(_ pgx.Tx, q *queries.Queries) error {
		row, err := q.UserTOTPGet(ctx, u.ID)
		if errors.Is(err, pgx.ErrNoRows) || (err == nil && row.EnabledAt.Valid) {
			return ErrTwoFactorNotPending
		}
		if err != nil {
			return fmt.Errorf("read two-factor enrolment: %w", err)
		}
		step, ok, err := s.matchStep(row, code)
		if err != nil {
			return err
		}
		if !ok {
			return ErrTwoFactorCode
		}
		n, err := q.UserTOTPEnable(ctx, queries.UserTOTPEnableParams{UserID: u.ID, Step: step})
		if err != nil {
			return fmt.Errorf("enable two-factor: %w", err)
		}
		if n == 0 {
			return ErrTwoFactorNotPending
		}
		if codes, err = s.newRecoveryCodes(ctx, q, u.ID); err != nil {
			return err
		}
		return recordTwoFactor(ctx, q, actor, u, "user.two_factor_enable")
	})
	return codes, err
}

// RegenerateRecoveryCodes replaces the user's recovery codes, confirmed
// by a current code from their app.
func (s *Service) RegenerateRecoveryCodes(ctx context.Context, u queries.User, code string, actor audit.Actor) ([]string, error) {
	var codes []string
	err := s.inTx(ctx, func(_ pgx.Tx, q *queries.Queries) error {
		if err := s.useTOTP(ctx, q, u.ID, code); err != nil {
			return err
		}
		var err error
		if codes, err = s.newRecoveryCodes(ctx, q, u.ID); err != nil {
			return err
		}
		return recordTwoFactor(ctx, q, actor, u, "user.two_factor_recovery_codes")
	})
	return codes, err
}

// DisableTwoFactor turns two-factor off for the user, confirmed by their
// password or a current code from their app.
func (s *Service) DisableTwoFactor(ctx context.Context, u queries.User, password, code string, actor audit.Actor) error {
	return s.inTx(ctx, func(_ pgx.Tx, q *queries.Queries) error {
		switch {
		case password != "" && u.PasswordHash.Valid:
			ok, err := passwords.Verify(password, u.PasswordHash.String)
			if err != nil {
				return err
			}
			if !ok {
				return ErrTwoFactorConfirm
			}
		case strings.TrimSpace(code) != "":
			if err := s.useTOTP(ctx, q, u.ID, code); err != nil {
				return err
			}
		default:
			return ErrTwoFactorConfirm
		}
		return s.removeTwoFactor(ctx, q, u.ID, actor, u, "user.two_factor_disable")
	})
}

// ResetTwoFactor is an admin (actor) turning two-factor off for the user
// userID, who lost their app and their recovery codes, confirmed with the
// admin's password (adminauth.ConfirmPassword).
func (s *Service) ResetTwoFactor(ctx context.Context, userID int64, password string, actor audit.Actor) error {
	if !adminauth.ConfirmationGiven(ctx, password) {
		return adminauth.ErrWrongPassword
	}
	if err := adminauth.ConfirmPassword(ctx, s.Pool, actor.UserID, password, s.now()); err != nil {
		return err
	}
	return s.inTx(ctx, func(_ pgx.Tx, q *queries.Queries) error {
		if err := adminauth.LockActiveAdmin(ctx, q, actor.UserID); err != nil {
			return err
		}
		u, err := q.UserGetByID(ctx, userID)
		if errors.Is(err, pgx.ErrNoRows) {
			return ErrUserNotFound
		}
		if err != nil {
			return fmt.Errorf("look up user %d: %w", userID, err)
		}
		return s.removeTwoFactor(ctx, q, u.ID, actor, u, "admin.user_two_factor_reset")
	})
}

func (s *Service) removeTwoFactor(ctx context.Context, q *queries.Queries, userID int64, actor audit.Actor, u queries.User, action string) error {
	n, err := q.UserTOTPDelete(ctx, userID)
	if err != nil {
		return fmt.Errorf("remove two-factor: %w", err)
	}
	if n == 0 {
		return ErrTwoFactorOff
	}
	if err := q.UserRecoveryCodesDelete(ctx, userID); err != nil {
		return fmt.Errorf("remove recovery codes: %w", err)
	}
	return recordTwoFactor(ctx, q, actor, u, action)
}

// VerifyTwoFactor checks the second factor of the user userID's sign-in:
// a code from their app (each accepted once) or one of their recovery
// codes (each used once). It returns the user, to sign in.
func (s *Service) VerifyTwoFactor(ctx context.Context, userID int64, code string, actor audit.Actor) (queries.User, error) {
	var u queries.User
	err := s.inTx(ctx, func(_ pgx.Tx, q *queries.Queries) error {
		var err error
		u, err = q.UserGetByID(ctx, userID)
		if errors.Is(err, pgx.ErrNoRows) {
			return ErrUserNotFound
		}
		if err != nil {
			return fmt.Errorf("look up user %d: %w", userID, err)
		}
		if u.DisabledAt.Valid {
			return ErrDisabled
		}
		if isTOTPCode(code) {
			return s.useTOTP(ctx, q, u.ID, code)
		}
		n, err := q.UserRecoveryCodeUse(ctx, queries.UserRecoveryCodeUseParams{UserID: u.ID, CodeHash: s.recoveryHash(code)})
		if err != nil {
			return fmt.Errorf("use recovery code: %w", err)
		}
		if n == 0 {
			return ErrTwoFactorCode
		}
		actor.UserID, actor.Email = u.ID, u.Email
		return recordTwoFactor(ctx, q, actor, u, "user.two_factor_recovery_used")
	})
	return u, err
}

// TwoFactorRequired reports whether the platform requires the user u to
// set up two-factor authentication before anything else: the policy
// covers them and they have none.
func (s *Service) TwoFactorRequired(ctx context.Context, u queries.User) (bool, error) {
	row, err := queries.New(s.Pool).UserTOTPEnabled(ctx, u.ID)
	if err != nil {
		return false, fmt.Errorf("read two-factor requirement: %w", err)
	}
	return !row.Enabled && TwoFactorPolicy(row.Required).Covers(u), nil
}

// HasTwoFactor reports whether the user's sign-ins ask for a second
// factor.
func (s *Service) HasTwoFactor(ctx context.Context, userID int64) (bool, error) {
	row, err := queries.New(s.Pool).UserTOTPEnabled(ctx, userID)
	if err != nil {
		return false, fmt.Errorf("read two-factor state: %w", err)
	}
	return row.Enabled, nil
}

// useTOTP accepts a code from the user's app once: a code whose time step
// was already used (by this code or a later one) is refused.
func (s *Service) useTOTP(ctx context.Context, q *queries.Queries, userID int64, code string) error {
	row, err := q.UserTOTPGet(ctx, userID)
	if errors.Is(err, pgx.ErrNoRows) || (err == nil && !row.EnabledAt.Valid) {
		return ErrTwoFactorOff
	}
	if err != nil {
		return fmt.Errorf("read two-factor secret: %w", err)
	}
	step, ok, err := s.matchStep(row, code)
	if err != nil {
		return err
	}
	if !ok {
		return ErrTwoFactorCode
	}
	n, err := q.UserTOTPUseStep(ctx, queries.UserTOTPUseStepParams{UserID: userID, Step: step})
	if err != nil {
		return fmt.Errorf("use TOTP code: %w", err)
	}
	if n == 0 {
		return ErrTwoFactorCode
	}
	return nil
}

// matchStep finds the time step, now or one either side, whose code is
// code; a step at or before the last one used does not count.
func (s *Service) matchStep(row queries.UserTotp, code string) (int64, bool, error) {
	code = strings.Join(strings.Fields(code), "")
	if !isTOTPCode(code) {
		return 0, false, nil
	}
	secret, err := s.Box.Open(row.SecretSealed)
	if err != nil {
		return 0, false, fmt.Errorf("open TOTP secret: %w", err)
	}
	now := s.now()
	current := now.Unix() / totpPeriod
	for step := current - 1; step <= current+1; step++ {
		want, err := totp.GenerateCodeCustom(string(secret), time.Unix(step*totpPeriod, 0), totp.ValidateOpts{
			Period: totpPeriod, Digits: otp.DigitsSix, Algorithm: otp.AlgorithmSHA1,
		})
		if err != nil {
			return 0, false, fmt.Errorf("compute TOTP code: %w", err)
		}
		if subtle.ConstantTimeCompare([]byte(want), []byte(code)) == 1 && step > row.LastStep {
			return step, true, nil
		}
	}
	return 0, false, nil
}

// isTOTPCode reports whether code looks like an app's code (six digits)
// rather than a recovery code.
func isTOTPCode(code string) bool {
	code = strings.Join(strings.Fields(code), "")
	if len(code) != 6 {
		return false
	}
	for _, r := range code {
		if r < '0' || r > '9' {
			return false
		}
	}
	return true
}

// recoveryAlphabet is base32 in lower case: no 0/1/8/9 to mistake for
// letters.
var recoveryAlphabet = base32.NewEncoding("abcdefghijklmnopqrstuvwxyz234567").WithPadding(base32.NoPadding)

// newRecoveryCodes replaces the user's recovery codes with RecoveryCodes
// new ones (50 random bits each, as xxxxx-xxxxx) and returns them.
func (s *Service) newRecoveryCodes(ctx context.Context, q *queries.Queries, userID int64) ([]string, error) {
	if err := q.UserRecoveryCodesDelete(ctx, userID); err != nil {
		return nil, fmt.Errorf("remove recovery codes: %w", err)
	}
	codes := make([]string, RecoveryCodes)
	for i := range codes {
		b := make([]byte, 7)
		if _, err := rand.Read(b); err != nil {
			return nil, fmt.Errorf("random recovery code: %w", err)
		}
		raw := recoveryAlphabet.EncodeToString(b)[:10]
		codes[i] = raw[:5] + "-" + raw[5:]
		if err := q.UserRecoveryCodeCreate(ctx, queries.UserRecoveryCodeCreateParams{UserID: userID, CodeHash: s.recoveryHash(codes[i])}); err != nil {
			return nil, fmt.Errorf("store recovery code: %w", err)
		}
	}
	return codes, nil
}

// recoveryHash is the stored form of a recovery code, however it was
// typed (case, dashes, spaces).
func (s *Service) recoveryHash(code string) string {
	normal := strings.Map(func(r rune) rune {
		if r == '-' || r == ' ' || r == '\t' {
			return -1
		}
		return r
	}, strings.ToLower(code))
	return s.Box.MAC(recoveryPurpose, []byte(normal))
}

func recordTwoFactor(ctx context.Context, q *queries.Queries, actor audit.Actor, u queries.User, action string) error {
	return audit.Record(ctx, q, actor, audit.Event{
		Action: action, TargetType: "user", TargetID: fmt.Sprint(u.ID), Details: map[string]any{"email": u.Email},
	})
}

// TwoFactorPolicy is whom the platform requires to use two-factor
// authentication: nobody, the admins, or everyone.
type TwoFactorPolicy string

// The policies.
const (
	TwoFactorOptional TwoFactorPolicy = "off"
	TwoFactorAdmins   TwoFactorPolicy = "admins"
	TwoFactorEveryone TwoFactorPolicy = "all"
)

// TwoFactorPolicies are the policies, in the order the form lists them.
var TwoFactorPolicies = []TwoFactorPolicy{TwoFactorOptional, TwoFactorAdmins, TwoFactorEveryone}

// Covers reports whether the policy requires two-factor of u.
func (p TwoFactorPolicy) Covers(u queries.User) bool {
	switch p {
	case TwoFactorEveryone:
		return true
	case TwoFactorAdmins:
		return u.Role == adminauth.RoleAdmin
	}
	return false
}

// TwoFactorKey is the settings row of the policy.
const TwoFactorKey = "two_factor"

type twoFactorSettings struct {
	Require TwoFactorPolicy `json:"require"`
}

// LoadTwoFactorPolicy reads the policy.
func (s *Service) LoadTwoFactorPolicy(ctx context.Context) (TwoFactorPolicy, error) {
	return loadTwoFactorPolicy(ctx, queries.New(s.Pool))
}

// TwoFactorPolicyTag is the entity tag of the stored policy (the admin
// API's ETag).
func (s *Service) TwoFactorPolicyTag(ctx context.Context) (string, error) {
	return adminauth.SettingsTag(ctx, queries.New(s.Pool), TwoFactorKey)
}

// loadTwoFactorPolicy reads the policy through q: optional while no admin
// chose one.
func loadTwoFactorPolicy(ctx context.Context, q *queries.Queries) (TwoFactorPolicy, error) {
	row, err := q.SettingGet(ctx, TwoFactorKey)
	if errors.Is(err, pgx.ErrNoRows) {
		return TwoFactorOptional, nil
	}
	if err != nil {
		return "", fmt.Errorf("read two-factor policy: %w", err)
	}
	var st twoFactorSettings
	if err := json.Unmarshal(row.Value, &st); err != nil {
		return "", fmt.Errorf("decode two-factor policy: %w", err)
	}
	return cmp.Or(st.Require, TwoFactorOptional), nil
}

// ErrTwoFactorPolicy is a policy that is none of TwoFactorPolicies.
var ErrTwoFactorPolicy = errors.New("ErrTwoFactorPolicy")

// SaveTwoFactorPolicy is an admin's change of the policy, confirmed by
// their password (it changes every sign-in): changed is false when it
// was already so.
func (s *Service) SaveTwoFactorPolicy(ctx context.Context, p TwoFactorPolicy, password string, actor audit.Actor) (changed bool, err error) {
	if !slices.Contains(TwoFactorPolicies, p) {
		return false, ErrTwoFactorPolicy
	}
	err = adminauth.SaveSettings(ctx, s.Pool, actor.UserID, TwoFactorKey, adminauth.Confirm{Needed: true, Password: password}, func(q *queries.Queries) error {
		was, err := loadTwoFactorPolicy(ctx, q)
		if err != nil {
			return err
		}
		if was == p {
			return nil
		}
		b, err := json.Marshal(twoFactorSettings{Require: p})
		if err != nil {
			return fmt.Errorf("encode two-factor policy: %w", err)
		}
		if err := q.SettingUpsert(ctx, queries.SettingUpsertParams{Key: TwoFactorKey, Value: b}); err != nil {
			return fmt.Errorf("save two-factor policy: %w", err)
		}
		changed = true
		return audit.Record(ctx, q, actor, audit.Event{
			Action: "admin.settings_two_factor", TargetType: "settings", TargetID: TwoFactorKey,
			Details: map[string]any{"from": string(was), "to": string(p)},
		})
	})
	return changed, err
}
