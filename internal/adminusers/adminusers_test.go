package adminusers_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgtype"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/kubebyon/kubebyon/internal/adminauth"
	"github.com/kubebyon/kubebyon/internal/adminusers"
	"github.com/kubebyon/kubebyon/internal/apikeys"
	"github.com/kubebyon/kubebyon/internal/audit"
	"github.com/kubebyon/kubebyon/internal/passwords"
	"github.com/kubebyon/kubebyon/internal/testenv"
	"github.com/kubebyon/kubebyon/queries"
)

func TestMain(m *testing.M) { testenv.Main(m) }

// createUser makes a verified account with the given role and password.
func createUser(t *testing.T, pool *pgxpool.Pool, email, role, password string) queries.User {
	t.Helper()
	hash, err := passwords.Hash(password)
	require.NoError(t, err)
	u, err := queries.New(pool).UserCreate(context.Background(), queries.UserCreateParams{
		Email: email, Name: "Name of " + email, Role: role,
		PasswordHash:    pgtype.Text{String: hash, Valid: true},
		EmailVerifiedAt: pgtype.Timestamptz{Time: time.Now(), Valid: true},
	})
	require.NoError(t, err)
	return u
}

func TestStatusOf(t *testing.T) {
	t.Parallel()
	now := pgtype.Timestamptz{Time: time.Now(), Valid: true}
	tests := []struct {
		u    queries.User
		want adminusers.Status
	}{
		{queries.User{EmailVerifiedAt: now}, adminusers.StatusActive},
		{queries.User{}, adminusers.StatusUnverified},
		{queries.User{EmailVerifiedAt: now, DisabledAt: now}, adminusers.StatusDisabled},
		{queries.User{DisabledAt: now}, adminusers.StatusDisabled},
	}
	for _, tt := range tests {
		require.Equal(t, tt.want, adminusers.StatusOf(tt.u))
	}
}

// list reads a page of the user list on pool, as the admin user list does.
func list(t *testing.T, pool *pgxpool.Pool, search string, after int64) (adminusers.Page, error) {
	t.Helper()
	return (&adminusers.Service{Pool: pool}).List(context.Background(), search, after, adminusers.PageSize)
}

func TestList(t *testing.T) {
	t.Parallel()
	pool := testenv.DB(t)
	ctx := context.Background()
	_, err := pool.Exec(ctx, `INSERT INTO users (email, name)
		SELECT 'bulk' || g || '@example.com', 'Bulk Person ' || g FROM generate_series(1, 60) g`)
	require.NoError(t, err)
	_, err = pool.Exec(ctx, `INSERT INTO users (email, name) VALUES ('grace@example.org', 'Grace HOPPER'), ('odd_100%@example.org', 'Odd')`)
	require.NoError(t, err)

	var sizes []int
	var seen []int64
	after := int64(0)
	for {
		p, err := list(t, pool, "BULK", after)
		require.NoError(t, err)
		sizes = append(sizes, len(p.Users))
		for _, u := range p.Users {
			if len(seen) > 0 {
				require.Greater(t, u.ID, seen[len(seen)-1], "in id order, no repeats")
			}
			seen = append(seen, u.ID)
		}
		if p.NextAfter == 0 {
			break
		}
		require.Equal(t, p.Users[len(p.Users)-1].ID, p.NextAfter)
		after = p.NextAfter
	}
	require.Equal(t, []int{25, 25, 10}, sizes)
	// Another page size (the API's limit) pages the same way.
	s := &adminusers.Service{Pool: pool}
	p, err := s.List(ctx, "bulk", 0, 59)
	require.NoError(t, err)
	require.Len(t, p.Users, 59)
	require.Equal(t, seen[58], p.NextAfter)
	p, err = s.List(ctx, "", p.NextAfter, 59)
	require.NoError(t, err)
	require.Len(t, p.Users, 3, "the last bulk user, grace and odd")
	require.Zero(t, p.NextAfter)

	tests := []struct {
		search string
		want   []string
	}{
		{"hopper", []string{"grace@example.org"}},
		{"GRACE@", []string{"grace@example.org"}},
		{"_100%", []string{"odd_100%@example.org"}},
		{"%", []string{"odd_100%@example.org"}}, // not a wildcard
		{"nobody", nil},
	}
	for _, tt := range tests {
		p, err := list(t, pool, tt.search, 0)
		require.NoError(t, err)
		var got []string
		for _, u := range p.Users {
			got = append(got, u.Email)
		}
		require.Equal(t, tt.want, got, tt.search)
		require.Zero(t, p.NextAfter)
	}
}

// auditCount counts the events of an action on a user.
func auditCount(t *testing.T, pool *pgxpool.Pool, action string, userID int64) int {
	t.Helper()
	var n int
	require.NoError(t, pool.QueryRow(context.Background(),
		"SELECT count(*) FROM audit_events WHERE action = $1 AND target_type = 'user' AND target_id = $2",
		action, fmt.Sprint(userID)).Scan(&n))
	return n
}

func TestApply(t *testing.T) {
	t.Parallel()
	pool := testenv.DB(t)
	ctx := context.Background()
	s := &adminusers.Service{Pool: pool}
	q := queries.New(pool)
	admin := createUser(t, pool, "admin@example.com", "admin", "admin password 1")
	target := createUser(t, pool, "target@example.com", "user", "target password 1")
	for _, id := range []string{"s1", "s2"} {
		require.NoError(t, q.UserSessionCreate(ctx, queries.UserSessionCreateParams{ID: id, UserID: target.ID}))
	}
	actor := audit.Actor{UserID: admin.ID, Email: admin.Email, IP: "192.0.2.1"}
	// One key in use and one its owner revoked before.
	keys := &apikeys.Service{Pool: pool}
	active, err := keys.Create(ctx, actingAs(t, pool, target.ID), "active", apikeys.ScopeWrite, apikeys.Expiry{Choice: apikeys.ExpiryNever}, actor)
	require.NoError(t, err)
	revoked, err := keys.Create(ctx, actingAs(t, pool, target.ID), "revoked", apikeys.ScopeWrite, apikeys.Expiry{Choice: apikeys.ExpiryNever}, actor)
	require.NoError(t, err)
	require.NoError(t, keys.Revoke(ctx, target.ID, revoked.Key.ID, actor))
	revokedBefore, err := keys.Get(ctx, target.ID, revoked.Key.ID)
	require.NoError(t, err)
	get := func() queries.User {
		u, err := q.UserGetByID(ctx, target.ID)
		require.NoError(t, err)
		return u
	}

	err = s.Apply(ctx, adminusers.Disable, target.ID, "not my password", actor)
	require.ErrorIs(t, err, adminauth.ErrWrongPassword)
	require.False(t, get().DisabledAt.Valid, "a wrong password changes nothing")
	sessions, err := q.UserSessionListActiveByUser(ctx, target.ID)
	require.NoError(t, err)
	require.Len(t, sessions, 2)
	require.Zero(t, auditCount(t, pool, "admin.user_disable", target.ID))

	require.NoError(t, s.Apply(ctx, adminusers.Disable, target.ID, "admin password 1", actor))
	require.True(t, get().DisabledAt.Valid)
	sessions, err = q.UserSessionListActiveByUser(ctx, target.ID)
	require.NoError(t, err)
	require.Empty(t, sessions, "disabling ends every session")
	var details []byte
	var actorID int64
	var ip string
	require.NoError(t, pool.QueryRow(ctx,
		"SELECT details, actor_id, ip FROM audit_events WHERE action = 'admin.user_disable' AND target_id = $1",
		fmt.Sprint(target.ID)).Scan(&details, &actorID, &ip))
	require.JSONEq(t, `{"email": "target@example.com", "sessions_ended": 2, "api_keys_revoked": 1}`, string(details))
	require.Equal(t, admin.ID, actorID)
	require.Equal(t, "192.0.2.1", ip)

	require.ErrorIs(t, s.Apply(ctx, adminusers.Disable, target.ID, "admin password 1", actor), adminusers.ErrNoChange)

	require.NoError(t, s.Apply(ctx, adminusers.Enable, target.ID, "admin password 1", actor))
	require.False(t, get().DisabledAt.Valid)
	sessions, err = q.UserSessionListActiveByUser(ctx, target.ID)
	require.NoError(t, err)
	require.Empty(t, sessions, "enabling does not bring old sessions back")
	_, err = keys.Authenticate(ctx, active.Value, "192.0.2.1")
	require.ErrorIs(t, err, apikeys.ErrUnauthorized, "enabling does not bring old API keys back")
	k, err := keys.Get(ctx, target.ID, active.Key.ID)
	require.NoError(t, err)
	require.Equal(t, "revoked", apikeys.Status(k, time.Now()))
	k, err = keys.Get(ctx, target.ID, revoked.Key.ID)
	require.NoError(t, err)
	require.Equal(t, revokedBefore.RevokedAt, k.RevokedAt, "a key revoked before keeps its time")

	require.NoError(t, s.Apply(ctx, adminusers.Promote, target.ID, "admin password 1", actor))
	require.Equal(t, "admin", get().Role)
	require.ErrorIs(t, s.Apply(ctx, adminusers.Promote, target.ID, "admin password 1", actor), adminusers.ErrNoChange)
	require.NoError(t, s.Apply(ctx, adminusers.Demote, target.ID, "admin password 1", actor))
	require.Equal(t, "user", get().Role)

	for action, want := range map[string]string{
		"admin.user_disable": `{"email": "target@example.com", "sessions_ended": 2, "api_keys_revoked": 1}`,
		"admin.user_enable":  `{"email": "target@example.com"}`,
		"admin.user_promote": `{"email": "target@example.com", "from": "user", "to": "admin"}`,
		"admin.user_demote":  `{"email": "target@example.com", "from": "admin", "to": "user"}`,
	} {
		require.Equal(t, 1, auditCount(t, pool, action, target.ID), action)
		require.NoError(t, pool.QueryRow(ctx, "SELECT details FROM audit_events WHERE action = $1", action).Scan(&details))
		require.JSONEq(t, want, string(details), action)
	}

	t.Run("not on oneself", func(t *testing.T) {
		require.ErrorIs(t, s.Apply(ctx, adminusers.Disable, admin.ID, "admin password 1", actor), adminusers.ErrSelfDisable)
		require.ErrorIs(t, s.Apply(ctx, adminusers.Demote, admin.ID, "admin password 1", actor), adminusers.ErrSelfDemote)
		u, err := q.UserGetByID(ctx, admin.ID)
		require.NoError(t, err)
		require.Equal(t, "admin", u.Role)
		require.False(t, u.DisabledAt.Valid)
	})

	t.Run("only admins", func(t *testing.T) {
		other := createUser(t, pool, "plain@example.com", "user", "plain password 1")
		err := s.Apply(ctx, adminusers.Disable, target.ID, "plain password 1", audit.Actor{UserID: other.ID, Email: other.Email})
		require.ErrorIs(t, err, adminauth.ErrNotAdmin)
		require.False(t, get().DisabledAt.Valid)
	})

	t.Run("unknown account", func(t *testing.T) {
		err := s.Apply(ctx, adminusers.Disable, target.ID+1000, "admin password 1", actor)
		require.ErrorIs(t, err, adminusers.ErrNotFound)
	})
}

// TestApplyConcurrentDemotions checks that two admins demoting each other
// at once cannot leave the platform without an admin: the second change
// sees the first and is refused.
func TestApplyConcurrentDemotions(t *testing.T) {
	t.Parallel()
	pool := testenv.DB(t)
	ctx := context.Background()
	s := &adminusers.Service{Pool: pool}
	a := createUser(t, pool, "a@example.com", "admin", "password of a!")
	b := createUser(t, pool, "b@example.com", "admin", "password of b!")

	errs := make(chan error, 2)
	go func() {
		errs <- s.Apply(ctx, adminusers.Demote, b.ID, "password of a!", audit.Actor{UserID: a.ID, Email: a.Email})
	}()
	go func() {
		errs <- s.Apply(ctx, adminusers.Demote, a.ID, "password of b!", audit.Actor{UserID: b.ID, Email: b.Email})
	}()
	var failed []error
	for range 2 {
		if err := <-errs; err != nil {
			failed = append(failed, err)
		}
	}
	require.Len(t, failed, 1)
	require.ErrorIs(t, failed[0], adminauth.ErrNotAdmin)
	var admins int
	require.NoError(t, pool.QueryRow(ctx, "SELECT count(*) FROM users WHERE role = 'admin'").Scan(&admins))
	require.Equal(t, 1, admins)
}

func TestApplyRateLimit(t *testing.T) {
	t.Parallel()
	pool := testenv.DB(t)
	ctx := context.Background()
	now := time.Date(2030, 1, 1, 10, 0, 0, 0, time.UTC)
	s := &adminusers.Service{Pool: pool, Now: func() time.Time { return now }}
	admin := createUser(t, pool, "admin@example.com", "admin", "admin password 1")
	target := createUser(t, pool, "target@example.com", "user", "target password 1")
	actor := audit.Actor{UserID: admin.ID, Email: admin.Email}

	for i := 0; i < int(adminauth.ReauthPerAdmin.Limit); i++ {
		require.ErrorIs(t, s.Apply(ctx, adminusers.Promote, target.ID, "guess", actor), adminauth.ErrWrongPassword)
	}
	var limited *adminauth.LimitedError
	require.ErrorAs(t, s.Apply(ctx, adminusers.Promote, target.ID, "admin password 1", actor), &limited,
		"even the right password is refused once over the limit")
	// 11 hits in this window: one more passes once 1 + 11(1-f) <= 10 in
	// the next, at f = 2/11 of it.
	require.InDelta(t, float64(adminauth.ReauthPerAdmin.Window)*(1+2.0/11), float64(limited.RetryAfter), float64(time.Second))

	now = now.Add(limited.RetryAfter)
	require.NoError(t, s.Apply(ctx, adminusers.Promote, target.ID, "admin password 1", actor))
	require.Equal(t, 1, auditCount(t, pool, "admin.user_promote", target.ID))
}

// TestSearchUsesTrigramIndexes checks that among 10,000 users a search
// finds its matches through the trigram indexes on lower(email) and
// lower(name), not by reading every user: the plan of the query the
// user list (ListLoad) runs, as PostgreSQL plans it for the values given (a custom plan) and
// for any value (the generic plan a prepared statement may come to use).
func TestSearchUsesTrigramIndexes(t *testing.T) {
	t.Parallel()
	pool := testenv.DB(t)
	ctx := context.Background()
	_, err := pool.Exec(ctx, `INSERT INTO users (email, name, email_verified_at)
		SELECT 'member' || i || '@example.com', 'Member ' || i, now() FROM generate_series(1, 10000) i`)
	require.NoError(t, err)
	_, err = pool.Exec(ctx, `INSERT INTO users (email, name) VALUES ('ada@lovelace.example', 'Ada LOVELACE')`)
	require.NoError(t, err)
	_, err = pool.Exec(ctx, "ANALYZE users")
	require.NoError(t, err)

	// The statement List sends, caught on its way to the database.
	cfg := pool.Config().Copy()
	var sent queryCatcher
	cfg.ConnConfig.Tracer = &sent
	traced, err := pgxpool.NewWithConfig(ctx, cfg)
	require.NoError(t, err)
	t.Cleanup(traced.Close)
	p, err := list(t, traced, "lovelace", 0)
	require.NoError(t, err)
	require.Len(t, p.Users, 1)
	require.Equal(t, "ada@lovelace.example", p.Users[0].Email)
	require.Contains(t, sent.sql, "LIKE", "the search query was caught")

	for _, mode := range []string{"force_custom_plan", "force_generic_plan"} {
		conn, err := pool.Acquire(ctx)
		require.NoError(t, err)
		_, err = conn.Exec(ctx, "SET plan_cache_mode = "+mode)
		require.NoError(t, err)
		rows, err := conn.Query(ctx, "EXPLAIN "+sent.sql, sent.args...)
		require.NoError(t, err)
		var plan strings.Builder
		for rows.Next() {
			var line string
			require.NoError(t, rows.Scan(&line))
			plan.WriteString(line + "\n")
		}
		require.NoError(t, rows.Err())
		_, err = conn.Exec(ctx, "RESET plan_cache_mode")
		require.NoError(t, err)
		conn.Release()
		require.Contains(t, plan.String(), "users_email_trgm_idx", "%s:\n%s", mode, plan.String())
		require.Contains(t, plan.String(), "users_name_trgm_idx", "%s:\n%s", mode, plan.String())
		require.NotContains(t, plan.String(), "Seq Scan on users", "%s:\n%s", mode, plan.String())
	}
}

// queryCatcher is a pgx tracer that keeps the last query sent and its
// arguments.
type queryCatcher struct {
	sql  string
	args []any
}

func (q *queryCatcher) TraceQueryStart(ctx context.Context, _ *pgx.Conn, data pgx.TraceQueryStartData) context.Context {
	q.sql, q.args = data.SQL, data.Args
	return ctx
}

func (*queryCatcher) TraceQueryEnd(context.Context, *pgx.Conn, pgx.TraceQueryEndData) {}
