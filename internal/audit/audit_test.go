package audit_test

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgtype"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/kubebyon/kubebyon/internal/audit"
	"github.com/kubebyon/kubebyon/internal/testenv"
	"github.com/kubebyon/kubebyon/queries"
)

func TestMain(m *testing.M) { testenv.Main(m) }

type testBundle struct {
	pool *pgxpool.Pool
	user queries.User
}

// setup gives a database of the test's own with one user to act.
func setup(t *testing.T) *testBundle {
	t.Helper()
	pool := testenv.DB(t)
	u, err := queries.New(pool).UserCreate(context.Background(), queries.UserCreateParams{
		Email: "ada@example.com", Name: "Ada", Role: "admin",
		EmailVerifiedAt: pgtype.Timestamptz{Time: time.Now(), Valid: true},
	})
	require.NoError(t, err)
	return &testBundle{pool: pool, user: u}
}

// events is every audit event of action, oldest first.
func (b *testBundle) events(t *testing.T, action string) []queries.AuditEvent {
	t.Helper()
	all, err := queries.New(b.pool).AuditEventList(context.Background(), queries.AuditEventListParams{Action: action, RowLimit: 100})
	require.NoError(t, err)
	for i, j := 0, len(all)-1; i < j; i, j = i+1, j-1 {
		all[i], all[j] = all[j], all[i]
	}
	return all
}

// TestRecordWithTransaction: the event exists if and only if the caller's
// transaction commits.
func TestRecordWithTransaction(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()
	tests := []struct {
		name   string
		commit bool
		want   int
	}{
		{name: "committed", commit: true, want: 1},
		{name: "rolled back", commit: false, want: 0},
	}
	for _, tt := range tests {
		action := "test." + tt.name
		tx, err := b.pool.Begin(ctx)
		require.NoError(t, err, tt.name)
		err = audit.Record(ctx, queries.New(tx), audit.Actor{UserID: b.user.ID, Email: b.user.Email},
			audit.Event{Action: action, TargetType: "user", TargetID: "1"})
		require.NoError(t, err, tt.name)
		// Not visible outside the transaction before it ends.
		require.Empty(t, b.events(t, action), tt.name)
		if tt.commit {
			require.NoError(t, tx.Commit(ctx), tt.name)
		} else {
			require.NoError(t, tx.Rollback(ctx), tt.name)
		}
		require.Len(t, b.events(t, action), tt.want, tt.name)
	}
}

// TestRecordFields: every field of the actor and the event is stored as
// given; the system actor (zero ID) has no actor_id; no details store as
// an empty JSON object; created_at is the time of writing.
func TestRecordFields(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()
	q := queries.New(b.pool)

	tests := []struct {
		name        string
		actor       audit.Actor
		event       audit.Event
		wantActorID pgtype.Int8
		wantDetails map[string]any
	}{
		{
			name: "user with details",
			actor: audit.Actor{
				UserID: b.user.ID, Email: b.user.Email,
				IP: "203.0.113.7", UserAgent: "Mozilla/5.0 (X11; Linux x86_64)",
			},
			event: audit.Event{
				Action: "api_key.create", TargetType: "api_key", TargetID: "42",
				Details: map[string]any{"name": "ci", "uses": 3, "nested": map[string]any{"on": true}, "tags": []string{"a", "b"}},
			},
			wantActorID: pgtype.Int8{Int64: b.user.ID, Valid: true},
			wantDetails: map[string]any{"name": "ci", "uses": float64(3), "nested": map[string]any{"on": true}, "tags": []any{"a", "b"}},
		},
		{
			name:        "system, nil details",
			actor:       audit.Actor{Email: "cli"},
			event:       audit.Event{Action: "admin.create_via_cli", TargetType: "user", TargetID: "7"},
			wantDetails: map[string]any{},
		},
		{
			name:        "empty details map",
			actor:       audit.Actor{UserID: b.user.ID, Email: b.user.Email},
			event:       audit.Event{Action: "user.sign_out", Details: map[string]any{}},
			wantActorID: pgtype.Int8{Int64: b.user.ID, Valid: true},
			wantDetails: map[string]any{},
		},
	}
	for _, tt := range tests {
		require.NoError(t, audit.Record(ctx, q, tt.actor, tt.event), tt.name)
		got := b.events(t, tt.event.Action)
		require.Len(t, got, 1, tt.name)
		e := got[0]
		require.Equal(t, tt.wantActorID, e.ActorID, tt.name)
		require.Equal(t, tt.actor.Email, e.ActorEmail, tt.name)
		require.Equal(t, tt.actor.IP, e.Ip, tt.name)
		require.Equal(t, tt.actor.UserAgent, e.UserAgent, tt.name)
		require.Equal(t, tt.event.Action, e.Action, tt.name)
		require.Equal(t, tt.event.TargetType, e.TargetType, tt.name)
		require.Equal(t, tt.event.TargetID, e.TargetID, tt.name)
		var details map[string]any
		require.NoError(t, json.Unmarshal(e.Details, &details), tt.name)
		require.Equal(t, tt.wantDetails, details, tt.name)
		require.True(t, e.CreatedAt.Valid, tt.name)
		require.WithinDuration(t, time.Now(), e.CreatedAt.Time, time.Minute, tt.name)
	}

	// Listed by actor: the user's two events, not the system's.
	byActor, err := q.AuditEventListByActor(ctx, queries.AuditEventListByActorParams{
		ActorID: pgtype.Int8{Int64: b.user.ID, Valid: true}, RowLimit: 10,
	})
	require.NoError(t, err)
	require.Len(t, byActor, 2)
}

// TestRecordErrors: details JSON cannot encode and an actor that does not
// exist are refused with an error naming the action, and write nothing.
func TestRecordErrors(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()
	q := queries.New(b.pool)

	tests := []struct {
		name    string
		actor   audit.Actor
		event   audit.Event
		wantErr string
	}{
		{
			name:    "unencodable details",
			actor:   audit.Actor{UserID: b.user.ID, Email: b.user.Email},
			event:   audit.Event{Action: "test.unencodable", Details: map[string]any{"ch": make(chan int)}},
			wantErr: "audit test.unencodable: encode details",
		},
		{
			name:    "unknown actor",
			actor:   audit.Actor{UserID: b.user.ID + 1000, Email: "ghost@example.com"},
			event:   audit.Event{Action: "test.ghost"},
			wantErr: "audit test.ghost: ",
		},
	}
	for _, tt := range tests {
		err := audit.Record(ctx, q, tt.actor, tt.event)
		require.ErrorContains(t, err, tt.wantErr, tt.name)
		require.Empty(t, b.events(t, tt.event.Action), tt.name)
	}
}

type settings struct {
	Host     string            `json:"host"`
	Port     int               `json:"port"`
	Password string            `json:"-"`
	Scopes   []string          `json:"scopes"`
	Labels   map[string]string `json:"labels"`
	Limits   struct {
		Max int `json:"max"`
	} `json:"limits"`
	Untagged bool
	internal string
}

// TestChanged: the fields that differ, by JSON name; secrets (json:"-")
// and unexported fields are not compared.
func TestChanged(t *testing.T) {
	t.Parallel()
	base := settings{Host: "mail.example.com", Port: 587, Password: "p1", Scopes: []string{"a"}, Labels: map[string]string{"k": "v"}, internal: "x"}
	base.Limits.Max = 3

	tests := []struct {
		name   string
		change func(s *settings)
		want   []string
	}{
		{name: "nothing", change: func(*settings) {}},
		{name: "secret only", change: func(s *settings) { s.Password = "p2" }},
		{name: "unexported only", change: func(s *settings) { s.internal = "y" }},
		{name: "one field", change: func(s *settings) { s.Port = 465 }, want: []string{"port"}},
		{name: "slice", change: func(s *settings) { s.Scopes = append(s.Scopes, "b") }, want: []string{"scopes"}},
		{name: "map", change: func(s *settings) { s.Labels = map[string]string{"k": "w"} }, want: []string{"labels"}},
		{name: "nested struct", change: func(s *settings) { s.Limits.Max = 4 }, want: []string{"limits"}},
		{name: "untagged field by Go name", change: func(s *settings) { s.Untagged = true }, want: []string{"Untagged"}},
		{
			name:   "several",
			change: func(s *settings) { s.Host, s.Port, s.Password = "smtp.example.com", 25, "p3" },
			want:   []string{"host", "port"},
		},
	}
	for _, tt := range tests {
		next := base
		next.Scopes = append([]string{}, base.Scopes...)
		next.Labels = map[string]string{"k": "v"}
		tt.change(&next)
		changed, err := audit.Changed(base, next)
		require.NoError(t, err, tt.name)
		require.ElementsMatch(t, tt.want, changed, tt.name)
		back, err := audit.Changed(next, base)
		require.NoError(t, err, tt.name)
		require.ElementsMatch(t, tt.want, back, tt.name+" (the other way)")
	}
}

// TestChangedUnencodable: a value JSON cannot encode is an error, not an
// empty list of changes.
func TestChangedUnencodable(t *testing.T) {
	t.Parallel()
	type withChan struct {
		C chan int `json:"c"`
	}
	_, err := audit.Changed(withChan{C: make(chan int)}, withChan{})
	require.ErrorContains(t, err, "encode audit_test.withChan")
	_, err = audit.Changed(withChan{}, withChan{C: make(chan int)})
	require.ErrorContains(t, err, "encode audit_test.withChan")
}

// TestChangedOmitempty: a field JSON leaves out when empty (omitempty)
// counts as changed whichever side it is empty on.
func TestChangedOmitempty(t *testing.T) {
	t.Parallel()
	type methods struct {
		Currency string   `json:"currency"`
		Methods  []string `json:"methods,omitempty"`
	}
	unset := methods{Currency: "EUR"}
	set := methods{Currency: "EUR", Methods: []string{"card"}}

	changed, err := audit.Changed(set, unset)
	require.NoError(t, err)
	require.Equal(t, []string{"methods"}, changed, "set, then cleared")

	changed, err = audit.Changed(unset, set)
	require.NoError(t, err)
	require.Equal(t, []string{"methods"}, changed, "empty, then set")
}
