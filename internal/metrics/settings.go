package metrics

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/kubebyon/kubebyon/internal/adminauth"
	"github.com/kubebyon/kubebyon/internal/audit"
	"github.com/kubebyon/kubebyon/internal/input"
	"github.com/kubebyon/kubebyon/queries"
)

// Settings are the metrics settings admins edit: how often each control
// plane is scraped, and how long each resolution is kept.
type Settings struct {
	IntervalSeconds int `json:"intervalSeconds"`
	// RawRetentionHours keeps the samples at the scrape interval; the
	// raw table's partitions are days, so a day more may stay.
	RawRetentionHours int `json:"rawRetentionHours"`
	// FiveMinuteRetentionDays and HourlyRetentionDays keep the rollups.
	FiveMinuteRetentionDays int `json:"fiveMinuteRetentionDays"`
	HourlyRetentionDays     int `json:"hourlyRetentionDays"`
	// A control plane whose 5xx answers per second stay above
	// AlertErrorRate, or whose p99 latency stays above AlertLatencyP99Ms,
	// for AlertFor is an alert its owner is told of (0: no such alert).
	AlertErrorRate    float64 `json:"alertErrorRate"`
	AlertLatencyP99Ms int     `json:"alertLatencyP99Ms"`
}

// Field names of the settings form, for errors.
const (
	FieldInterval         = "interval_seconds"
	FieldRawRetention     = "raw_retention_hours"
	FieldFiveMinRetention = "five_minute_retention_days"
	FieldHourlyRetention  = "hourly_retention_days"
	FieldAlertErrorRate   = "alert_error_rate"
	FieldAlertLatency     = "alert_latency_p99_ms"
)

// Bounds of the settings: a scrape at least every 15 s costs more than it
// shows; the raw samples are kept at least a day, as their partitions are
// days, and each rollup at least as long as the resolution before it.
const (
	minInterval       = 15
	maxInterval       = 3600
	minRawHours       = 24
	maxRawHours       = 24 * 31
	maxFiveMinuteDays = 366
	maxHourlyDays     = 5 * 366
	maxAlertErrorRate = 1e6
	maxAlertLatencyMs = 600_000
)

const settingsKey = "metrics"

// DefaultSettings: a scrape a minute, raw samples for 48 hours, 5-minute
// rollups for 30 days, hourly ones for a year; an alert for a control
// plane answering 5xx more than once a second, or with a p99 latency over
// a second, for ten minutes.
func DefaultSettings() Settings {
	return Settings{
		IntervalSeconds: 60, RawRetentionHours: 48, FiveMinuteRetentionDays: 30, HourlyRetentionDays: 365,
		AlertErrorRate: 1, AlertLatencyP99Ms: 1000,
	}
}

// Interval is how often each ready cluster is scraped.
func (st Settings) Interval() time.Duration { return time.Duration(st.IntervalSeconds) * time.Second }

// Retention is how long rows of a resolution are kept.
func (st Settings) Retention(res Resolution) time.Duration {
	switch res {
	case FiveMinutes:
		return time.Duration(st.FiveMinuteRetentionDays) * 24 * time.Hour
	case Hourly:
		return time.Duration(st.HourlyRetentionDays) * 24 * time.Hour
	}
	return time.Duration(st.RawRetentionHours) * time.Hour
}

// Validate names the bad fields.
func (st Settings) Validate() error {
	errs := input.Errors{}
	if st.IntervalSeconds < minInterval || st.IntervalSeconds > maxInterval {
		errs[FieldInterval] = "ErrMetricsInterval"
	}
	if st.RawRetentionHours < minRawHours || st.RawRetentionHours > maxRawHours {
		errs[FieldRawRetention] = "ErrMetricsRawRetention"
	}
	if st.FiveMinuteRetentionDays*24 < st.RawRetentionHours || st.FiveMinuteRetentionDays > maxFiveMinuteDays {
		errs[FieldFiveMinRetention] = "ErrMetricsFiveMinuteRetention"
	}
	if st.HourlyRetentionDays < st.FiveMinuteRetentionDays || st.HourlyRetentionDays > maxHourlyDays {
		errs[FieldHourlyRetention] = "ErrMetricsHourlyRetention"
	}
	if st.AlertErrorRate < 0 || st.AlertErrorRate > maxAlertErrorRate {
		errs[FieldAlertErrorRate] = "ErrMetricsAlertErrorRate"
	}
	if st.AlertLatencyP99Ms < 0 || st.AlertLatencyP99Ms > maxAlertLatencyMs {
		errs[FieldAlertLatency] = "ErrMetricsAlertLatency"
	}
	if len(errs) > 0 {
		return errs
	}
	return nil
}

// LoadSettings reads the metrics settings, defaults for what was never
// set.
func LoadSettings(ctx context.Context, q *queries.Queries) (Settings, error) {
	st := DefaultSettings()
	row, err := q.SettingGet(ctx, settingsKey)
	if errors.Is(err, pgx.ErrNoRows) {
		return st, nil
	}
	if err != nil {
		return Settings{}, fmt.Errorf("load metrics settings: %w", err)
	}
	if err := json.Unmarshal(row.Value, &st); err != nil {
		return Settings{}, fmt.Errorf("decode metrics settings: %w", err)
	}
	return st, nil
}

// Settings are the metrics settings as stored, defaults for what was
// never set (LoadSettings).
func (s *Service) Settings(ctx context.Context) (Settings, error) {
	return LoadSettings(ctx, queries.New(s.Pool))
}

// SaveSettings checks and stores the settings, audited, in one
// transaction by an active admin, after other admins' saves
// (adminauth.SaveSettings).
func (s *Service) SaveSettings(ctx context.Context, next Settings, actor audit.Actor) error {
	if err := next.Validate(); err != nil {
		return err
	}
	return adminauth.SaveSettings(ctx, s.Pool, actor.UserID, settingsKey, adminauth.Confirm{}, func(q *queries.Queries) error {
		b, err := json.Marshal(next)
		if err != nil {
			return fmt.Errorf("encode metrics settings: %w", err)
		}
		if err := q.SettingUpsert(ctx, queries.SettingUpsertParams{Key: settingsKey, Value: b}); err != nil {
			return fmt.Errorf("store metrics settings: %w", err)
		}
		return audit.Record(ctx, q, actor, audit.Event{
			Action: "metrics.settings", TargetType: "settings", TargetID: settingsKey,
			Details: map[string]any{
				"intervalSeconds": next.IntervalSeconds, "rawRetentionHours": next.RawRetentionHours,
				"fiveMinuteRetentionDays": next.FiveMinuteRetentionDays, "hourlyRetentionDays": next.HourlyRetentionDays,
				"alertErrorRate": next.AlertErrorRate, "alertLatencyP99Ms": next.AlertLatencyP99Ms,
			},
		})
	})
}

// SettingsTag is the entity tag of the stored settings
// (adminauth.SettingsTag).
func (s *Service) SettingsTag(ctx context.Context) (string, error) {
	return adminauth.SettingsTag(ctx, queries.New(s.Pool), settingsKey)
}
