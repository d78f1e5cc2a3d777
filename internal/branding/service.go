package branding

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/kubebyon/kubebyon/internal/adminauth"
	"github.com/kubebyon/kubebyon/internal/audit"
	"github.com/kubebyon/kubebyon/internal/input"
	"github.com/kubebyon/kubebyon/queries"
)

// ActionUpdate is the audit action of a change.
const ActionUpdate = "admin.branding_update"

// DefaultTTL is how long a process serves the settings it read before
// reading them again: how soon an admin's save on one API replica shows
// on the others. The replica that saves shows it at once.
const DefaultTTL = 30 * time.Second

// retryAfter is how soon a failed read is tried again.
const retryAfter = 5 * time.Second

// Service keeps the settings in memory for the pages and the session
// store (which would otherwise read them on every request) and makes the
// admin's changes. Build one per process and share it.
type Service struct {
	Pool   *pgxpool.Pool
	Logger *slog.Logger
	// TTL: DefaultTTL when zero.
	TTL time.Duration

	current atomic.Pointer[cached]
	// loading lets one request at a time read the settings again; the
	// others meanwhile use the copy in hand.
	loading sync.Mutex
}

type cached struct {
	settings Settings
	// stale is when the copy is to be read again.
	stale time.Time
}

// Current is the settings in effect: the copy in memory, read again from
// the database when it is older than the TTL. A request finds the copy
// stale at most once per TTL and per process, and reads it with one
// query; until the first read, or when a read fails, the previous copy
// (else Defaults) serves.
func (s *Service) Current(ctx context.Context) Settings {
	c := s.current.Load()
	if c != nil && time.Now().Before(c.stale) {
		return c.settings
	}
	if c != nil {
		// Stale: one request reads, the others go on with what they have.
		if !s.loading.TryLock() {
			return c.settings
		}
	} else {
		// The first read: every request waits for it.
		s.loading.Lock()
		if c = s.current.Load(); c != nil {
			s.loading.Unlock()
			return c.settings
		}
	}
	defer s.loading.Unlock()
	st, err := Load(ctx, queries.New(s.Pool))
	if err != nil {
		prev := Defaults()
		if c != nil {
			prev = c.settings
		}
		if s.Logger != nil {
			s.Logger.WarnContext(ctx, "read branding settings", "error", err)
		}
		s.current.Store(&cached{settings: prev, stale: time.Now().Add(retryAfter)})
		return prev
	}
	s.keep(st)
	return st
}

// Cached is the copy in memory (Defaults before the first read), without
// reading anything: for code that may hold a connection already, such as
// the session store, once Current has run for the request.
func (s *Service) Cached() Settings {
	if c := s.current.Load(); c != nil {
		return c.settings
	}
	return Defaults()
}

func (s *Service) keep(st Settings) {
	ttl := s.TTL
	if ttl == 0 {
		ttl = DefaultTTL
	}
	s.current.Store(&cached{settings: st, stale: time.Now().Add(ttl)})
}

// Load reads the stored settings now (the admin page shows these, not
// the copy in memory).
func (s *Service) Load(ctx context.Context) (Settings, error) {
	return Load(ctx, queries.New(s.Pool))
}

// LogoFile is the stored logo; ok is false when there is none.
func (s *Service) LogoFile(ctx context.Context) (Logo, bool, error) {
	row, err := queries.New(s.Pool).BrandingLogoGet(ctx)
	if errors.Is(err, pgx.ErrNoRows) {
		return Logo{}, false, nil
	}
	if err != nil {
		return Logo{}, false, fmt.Errorf("get logo: %w", err)
	}
	return Logo{Image: row.Image, ContentType: row.ContentType, ETag: row.Etag}, true, nil
}

// Change is a submitted settings form.
type Change struct {
	// Settings holds every field but the logo, which changes only as
	// NewLogo and RemoveLogo ask.
	Settings Settings
	// NewLogo is an uploaded logo (unchecked), nil for none.
	NewLogo    []byte
	RemoveLogo bool
}

// Apply stores the change on behalf of the admin actor.UserID and returns
// the names of the fields it changed, sorted; none means nothing was
// written. The change takes effect in this process at once, in the
// others within their TTL. Errors: input.Errors and adminauth's
// ErrNotAdmin.
func (s *Service) Apply(ctx context.Context, c Change, actor audit.Actor) ([]string, error) {
	errs := input.Errors{}
	var logo *Logo
	switch {
	case c.NewLogo != nil && c.RemoveLogo:
		errs[FieldLogo] = "ErrBrandingLogoReplaceAndRemove"
	case c.NewLogo != nil:
		l, err := CheckLogo(c.NewLogo)
		if err != nil {
			errs[FieldLogo] = logoMessage(err)
		} else {
			logo = &l
		}
	}
	var invalid input.Errors
	if err := c.Settings.Validate(); errors.As(err, &invalid) {
		for k, v := range invalid {
			errs[k] = v
		}
	} else if err != nil {
		return nil, err
	}
	if len(errs) > 0 {
		return nil, errs
	}
	var (
		changed []string
		next    Settings
	)
	err := adminauth.SaveSettings(ctx, s.Pool, actor.UserID, settingsKey, adminauth.Confirm{}, func(q *queries.Queries) error {
		cur, err := Load(ctx, q)
		if err != nil {
			return err
		}
		next = c.Settings
		next.Logo = cur.Logo
		switch {
		case logo != nil:
			next.Logo = logo.ETag
		case c.RemoveLogo:
			next.Logo = ""
		}
		if changed, err = audit.Changed(cur, next); err != nil || len(changed) == 0 {
			return err
		}
		slices.Sort(changed)
		if err := save(ctx, q, next); err != nil {
			return err
		}
		if slices.Contains(changed, FieldLogo) {
			if next.Logo == "" {
				err = q.BrandingLogoDelete(ctx)
			} else {
				err = q.BrandingLogoSet(ctx, queries.BrandingLogoSetParams{Image: logo.Image, ContentType: logo.ContentType, Etag: logo.ETag})
			}
			if err != nil {
				return fmt.Errorf("store logo: %w", err)
			}
		}
		return audit.Record(ctx, q, actor, audit.Event{
			Action: ActionUpdate, TargetType: "settings", TargetID: settingsKey, Details: map[string]any{"changed": changed},
		})
	})
	if err != nil {
		return nil, err
	}
	if len(changed) > 0 {
		s.keep(next)
	}
	return changed, nil
}

// logoMessage is the message ID of why a logo was refused.
func logoMessage(err error) string {
	for _, e := range []error{ErrLogoTooLarge, ErrLogoType, ErrLogoCorrupt, ErrLogoDimensions, ErrLogoSVGContents} {
		if errors.Is(err, e) {
			return e.Error()
		}
	}
	return ErrLogoCorrupt.Error()
}

// Tag is the entity tag of the stored branding (adminauth.SettingsTag).
func (s *Service) Tag(ctx context.Context) (string, error) {
	return adminauth.SettingsTag(ctx, queries.New(s.Pool), settingsKey)
}
