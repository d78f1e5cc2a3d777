package accounts

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/kubebyon/kubebyon/internal/audit"
	"github.com/kubebyon/kubebyon/internal/avatars"
	"github.com/kubebyon/kubebyon/internal/etag"
	"github.com/kubebyon/kubebyon/internal/input"
	"github.com/kubebyon/kubebyon/internal/locale"
	"github.com/kubebyon/kubebyon/internal/notify"
	"github.com/kubebyon/kubebyon/internal/passwords"
	"github.com/kubebyon/kubebyon/queries"
)

// EmailChangeCodeTTL is how long a code for a new address is valid.
const EmailChangeCodeTTL = 10 * time.Minute

// emailChangedTemplate tells the old address that the account moved away
// from it (messages MailEmailChangedSubject/Body, in settings.*.json).
const emailChangedTemplate = "EmailChanged"

// Errors of the settings pages whose messages users see.
var (
	ErrEmailTaken    = errors.New("ErrEmailTaken")
	ErrNoEmailChange = errors.New("ErrNoEmailChange")
)

// Languages are the values a user can choose; "" follows the browser.
var Languages = []string{"", locale.English.String(), locale.SimplifiedChinese.String()}

// ProfileInput is the profile form.
type ProfileInput struct {
	Name     string
	Language string
}

// Validate trims the name and checks both fields, returning FieldErrors.
func (in *ProfileInput) Validate() error {
	errs := FieldErrors{}
	var msg string
	if in.Name, msg = checkName(in.Name); msg != "" {
		errs["name"] = msg
	}
	if !slices.Contains(Languages, in.Language) {
		errs["language"] = "ErrLanguageInvalid"
	}
	if len(errs) > 0 {
		return errs
	}
	return nil
}

// ProfileTag is the entity tag of what UpdateProfile changes: the
// user's name and language.
func ProfileTag(u queries.User) (string, error) {
	return etag.Of([]string{u.Name, u.Language})
}

// UpdateProfile saves the user's name and language. With an If-Match in
// ctx (etag.WithMatch), only while the profile has that tag (ProfileTag),
// checked under the user's row lock: else etag.ErrPreconditionFailed.
func (s *Service) UpdateProfile(ctx context.Context, u queries.User, in ProfileInput, actor audit.Actor) (queries.User, error) {
	if err := in.Validate(); err != nil {
		return u, err
	}
	var out queries.User
	err := s.inTx(ctx, func(tx pgx.Tx, q *queries.Queries) error {
		cur, err := q.UserLockByID(ctx, u.ID)
		if err != nil {
			return fmt.Errorf("lock user %d: %w", u.ID, err)
		}
		tag, err := ProfileTag(cur)
		if err != nil {
			return err
		}
		if err := etag.Check(ctx, tag); err != nil {
			return err
		}
		changed := []string{}
		if in.Name != cur.Name {
			changed = append(changed, "name")
		}
		if in.Language != cur.Language {
			changed = append(changed, "language")
		}
		out, err = q.UserUpdateProfile(ctx, queries.UserUpdateProfileParams{ID: u.ID, Name: in.Name, Language: in.Language})
		if err != nil {
			return fmt.Errorf("update profile: %w", err)
		}
		return audit.Record(ctx, q, actor, audit.Event{
			Action: "user.update_profile", TargetType: "user", TargetID: fmt.Sprint(u.ID),
			Details: map[string]any{"changed": changed, "language": in.Language},
		})
	})
	return out, err
}

// RequestEmailChange mails a code to the new address; the address changes
// only once that code comes back (ConfirmEmailChange). A new request
// replaces an open one, and at most one code is sent a minute.
//
// An account with a password confirms it: whoever holds a stolen session
// must not be able to move the account to an address of theirs, and from
// there reset the password.
func (s *Service) RequestEmailChange(ctx context.Context, u queries.User, rawEmail, password string, actor audit.Actor) error {
	email, ok := input.Email(rawEmail)
	errs := FieldErrors{}
	switch {
	case !ok:
		errs["new_email"] = "ErrEmailInvalid"
	case strings.EqualFold(email, u.Email):
		errs["new_email"] = "ErrEmailSame"
	}
	if u.PasswordHash.Valid {
		ok, err := passwords.Verify(password, u.PasswordHash.String)
		if err != nil {
			return fmt.Errorf("verify password: %w", err)
		}
		if !ok {
			errs["email_password"] = "ErrCurrentPasswordWrong"
		}
	}
	if len(errs) > 0 {
		return errs
	}
	return s.inTx(ctx, func(tx pgx.Tx, q *queries.Queries) error {
		if err := emailFree(ctx, q, email, u.ID); err != nil {
			return err
		}
		if err := s.checkResend(ctx, q, u.ID, "email_change"); err != nil {
			return err
		}
		if err := audit.Record(ctx, q, actor, audit.Event{
			Action: "user.change_email_request", TargetType: "user", TargetID: fmt.Sprint(u.ID),
			Details: map[string]any{"new_email": email},
		}); err != nil {
			return err
		}
		return s.sendCode(ctx, tx, q, u, "email_change", email, EmailChangeCodeTTL, notify.EmailChangeCode)
	})
}

// emailFree returns a field error when another account has the address.
// It says no more than that: not whose, nor whether that account is active.
func emailFree(ctx context.Context, q *queries.Queries, email string, userID int64) error {
	other, err := q.UserGetByEmail(ctx, email)
	switch {
	case errors.Is(err, pgx.ErrNoRows):
		return nil
	case err != nil:
		return fmt.Errorf("look up email: %w", err)
	case other.ID != userID:
		return FieldErrors{"new_email": ErrEmailTaken.Error()}
	}
	return nil
}

// PendingEmailChange is the address waiting for its code, or "": that of
// the newest email-change code not yet used, expired or not (the page then
// offers to send a new one).
func (s *Service) PendingEmailChange(ctx context.Context, userID int64) (string, error) {
	c, err := queries.New(s.Pool).EmailCodeLatest(ctx, queries.EmailCodeLatestParams{UserID: userID, Purpose: "email_change"})
	if errors.Is(err, pgx.ErrNoRows) {
		return "", nil
	}
	if err != nil {
		return "", fmt.Errorf("look up email change: %w", err)
	}
	if c.ConsumedAt.Valid {
		return "", nil
	}
	return c.NewEmail, nil
}

// ResendEmailChangeCode mails a new code to the pending address.
func (s *Service) ResendEmailChangeCode(ctx context.Context, u queries.User) error {
	email, err := s.PendingEmailChange(ctx, u.ID)
	if err != nil {
		return err
	}
	if email == "" {
		return ErrNoEmailChange
	}
	return s.inTx(ctx, func(tx pgx.Tx, q *queries.Queries) error {
		if err := s.checkResend(ctx, q, u.ID, "email_change"); err != nil {
			return err
		}
		return s.sendCode(ctx, tx, q, u, "email_change", email, EmailChangeCodeTTL, notify.EmailChangeCode)
	})
}

// CancelEmailChange retires the open code, leaving the address as it is.
func (s *Service) CancelEmailChange(ctx context.Context, u queries.User, actor audit.Actor) error {
	return s.inTx(ctx, func(tx pgx.Tx, q *queries.Queries) error {
		if err := q.EmailCodeConsumeAllForUser(ctx, queries.EmailCodeConsumeAllForUserParams{UserID: u.ID, Purpose: "email_change"}); err != nil {
			return fmt.Errorf("cancel email change: %w", err)
		}
		return audit.Record(ctx, q, actor, audit.Event{Action: "user.change_email_cancel", TargetType: "user", TargetID: fmt.Sprint(u.ID)})
	})
}

// ConfirmEmailChange checks the code sent to the new address and moves the
// account to it. The old address is told, in case it was not its owner.
func (s *Service) ConfirmEmailChange(ctx context.Context, u queries.User, code string, actor audit.Actor) (queries.User, error) {
	out := u
	err := s.inTx(ctx, func(tx pgx.Tx, q *queries.Queries) error {
		c, err := s.checkCode(ctx, q, u.ID, "email_change", code)
		if err != nil {
			return err
		}
		if err := emailFree(ctx, q, c.NewEmail, u.ID); err != nil {
			var fe FieldErrors
			if errors.As(err, &fe) {
				return ErrEmailTaken
			}
			return err
		}
		out, err = q.UserSetEmail(ctx, queries.UserSetEmailParams{ID: u.ID, Email: c.NewEmail})
		if isUniqueViolation(err) {
			return ErrEmailTaken // taken a moment ago by a concurrent request
		}
		if err != nil {
			return fmt.Errorf("set email: %w", err)
		}
		if err := audit.Record(ctx, q, actor, audit.Event{
			Action: "user.change_email", TargetType: "user", TargetID: fmt.Sprint(u.ID),
			Details: map[string]any{"old_email": u.Email, "new_email": out.Email},
		}); err != nil {
			return err
		}
		args, err := notify.NewEmail(s.Box, u.Email, u.Language, emailChangedTemplate, map[string]any{"Name": u.Name, "NewEmail": out.Email})
		if err != nil {
			return err
		}
		if _, err := s.River.InsertTx(ctx, tx, args, nil); err != nil {
			return fmt.Errorf("enqueue email: %w", err)
		}
		return nil
	})
	if err != nil {
		return u, err
	}
	return out, nil
}

// ChangePassword sets a new password after checking the current one, ends
// every other session of the user (keepSessionID is the caller's), and
// tells the user by email. An account without a password (signed up
// through OAuth) sets its first one without a current password.
//
// With revokeKeys, the user's API keys stop working too (a password
// changed because it leaked may have been used to make keys).
func (s *Service) ChangePassword(ctx context.Context, u queries.User, current, newPassword, keepSessionID string, revokeKeys bool, actor audit.Actor) error {
	errs := FieldErrors{}
	if u.PasswordHash.Valid {
		ok, err := passwords.Verify(current, u.PasswordHash.String)
		if err != nil {
			return fmt.Errorf("verify password: %w", err)
		}
		if !ok {
			errs["current_password"] = "ErrCurrentPasswordWrong"
		}
	}
	if msg := CheckPassword(newPassword); msg != "" {
		errs["new_password"] = msg
	}
	if len(errs) > 0 {
		return errs
	}
	hash, err := s.Passwords.Hash(newPassword)
	if err != nil {
		return err
	}
	return s.inTx(ctx, func(tx pgx.Tx, q *queries.Queries) error {
		if err := q.UserSetPassword(ctx, queries.UserSetPasswordParams{ID: u.ID, PasswordHash: text(hash)}); err != nil {
			return fmt.Errorf("set password: %w", err)
		}
		n, err := q.UserSessionEndAllForUser(ctx, queries.UserSessionEndAllForUserParams{UserID: u.ID, KeepID: keepSessionID})
		if err != nil {
			return fmt.Errorf("end other sessions: %w", err)
		}
		var keys int64
		if revokeKeys {
			if keys, err = q.ApiKeyRevokeAllForUser(ctx, u.ID); err != nil {
				return fmt.Errorf("revoke api keys: %w", err)
			}
		}
		if err := audit.Record(ctx, q, actor, audit.Event{
			Action: "user.change_password", TargetType: "user", TargetID: fmt.Sprint(u.ID),
			Details: map[string]any{"sessions_ended": n, "first_password": !u.PasswordHash.Valid, "api_keys_revoked": keys},
		}); err != nil {
			return err
		}
		args, err := notify.NewEmail(s.Box, u.Email, u.Language, notify.EmailPasswordChanged, map[string]any{"Name": u.Name})
		if err != nil {
			return err
		}
		if _, err := s.River.InsertTx(ctx, tx, args, nil); err != nil {
			return fmt.Errorf("enqueue email: %w", err)
		}
		return nil
	})
}

// SetAvatar processes an uploaded picture (see package avatars) and makes
// it the user's avatar. Problems with the picture are FieldErrors on
// "avatar", as is a second upload of the user's while one is processed.
func (s *Service) SetAvatar(ctx context.Context, userID int64, upload []byte, actor audit.Actor) error {
	releaseUser, ok := s.avatarUserSlot(userID)
	if !ok {
		return FieldErrors{"avatar": ErrAvatarBusy.Error()}
	}
	defer releaseUser()
	release, err := s.avatarSlot(ctx)
	if err != nil {
		return err
	}
	img, err := avatars.Process(upload)
	release()
	if err != nil {
		for _, known := range []error{avatars.ErrTooLarge, avatars.ErrUnsupported, avatars.ErrCorrupt, avatars.ErrDimensions, avatars.ErrDecodedSize} {
			if errors.Is(err, known) {
				return FieldErrors{"avatar": known.Error()}
			}
		}
		return err
	}
	etag := avatars.ETag(img)
	return s.inTx(ctx, func(tx pgx.Tx, q *queries.Queries) error {
		if err := q.UserAvatarSet(ctx, queries.UserAvatarSetParams{UserID: userID, Image: img, Etag: etag}); err != nil {
			return fmt.Errorf("store avatar: %w", err)
		}
		return audit.Record(ctx, q, actor, audit.Event{
			Action: "user.update_avatar", TargetType: "user", TargetID: fmt.Sprint(userID),
			Details: map[string]any{"upload_bytes": len(upload), "etag": etag},
		})
	})
}

// RemoveAvatar deletes the user's avatar; the generated one shows again.
func (s *Service) RemoveAvatar(ctx context.Context, userID int64, actor audit.Actor) error {
	return s.inTx(ctx, func(tx pgx.Tx, q *queries.Queries) error {
		n, err := q.UserAvatarDelete(ctx, userID)
		if err != nil {
			return fmt.Errorf("delete avatar: %w", err)
		}
		if n == 0 {
			return nil
		}
		return audit.Record(ctx, q, actor, audit.Event{Action: "user.remove_avatar", TargetType: "user", TargetID: fmt.Sprint(userID)})
	})
}

// Preferences are a user's choices: for each kind, the channels it goes to.
type Preferences map[notify.Kind]map[notify.Channel]bool

// PreferencesTag is the entity tag of a user's choices, every kind's
// (NotificationPreferences): of what SetNotificationPreferences changes.
func PreferencesTag(p Preferences) (string, error) {
	// encoding/json writes a map's keys sorted: the same choices give the
	// same tag.
	return etag.Of(p)
}

// SetNotificationPreferences saves the choices in prefs: kinds missing
// from prefs (those the user's page does not show), and channels missing
// from a kind (those an API call leaves out), are left as they are.
// With an If-Match in ctx (etag.WithMatch), only while the choices have
// that tag (PreferencesTag), checked under the user's row lock, which
// runs the user's changes one after the other: else
// etag.ErrPreconditionFailed.
func (s *Service) SetNotificationPreferences(ctx context.Context, userID int64, prefs Preferences, actor audit.Actor) error {
	return s.inTx(ctx, func(tx pgx.Tx, q *queries.Queries) error {
		if _, err := q.UserLockByID(ctx, userID); err != nil {
			return fmt.Errorf("lock user %d: %w", userID, err)
		}
		before, err := notify.Matrix(ctx, q, userID)
		if err != nil {
			return err
		}
		tag, err := PreferencesTag(before)
		if err != nil {
			return err
		}
		if err := etag.Check(ctx, tag); err != nil {
			return err
		}
		changed := []string{}
		for _, k := range notify.Kinds {
			if _, ok := prefs[k]; !ok {
				continue
			}
			for _, c := range notify.Channels {
				on, ok := prefs[k][c]
				if !ok {
					continue
				}
				if err := q.NotificationPreferenceSet(ctx, queries.NotificationPreferenceSetParams{
					UserID: userID, Kind: string(k), Channel: string(c), Enabled: on,
				}); err != nil {
					return fmt.Errorf("set preference %s/%s: %w", k, c, err)
				}
				if before[k][c] != on {
					changed = append(changed, fmt.Sprintf("%s/%s=%t", k, c, on))
				}
			}
		}
		return audit.Record(ctx, q, actor, audit.Event{
			Action: "user.update_notifications", TargetType: "user", TargetID: fmt.Sprint(userID),
			Details: map[string]any{"changed": changed},
		})
	})
}
