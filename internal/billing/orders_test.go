package billing_test

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/riverqueue/river"
	"github.com/riverqueue/river/riverdriver/riverpgxv5"
	"github.com/stretchr/testify/require"

	"github.com/kubebyon/kubebyon/internal/audit"
	"github.com/kubebyon/kubebyon/internal/billing"
	"github.com/kubebyon/kubebyon/internal/orgs"
	"github.com/kubebyon/kubebyon/internal/secrets"
	"github.com/kubebyon/kubebyon/internal/testenv"
	"github.com/kubebyon/kubebyon/queries"
)

// shop is a database with billing on: manual payments, the free default
// plan, Team (USD 10.00 a month, 100.00 a year) and Pro (USD 30.00 a
// month), an admin, and a clock the test moves.
type shop struct {
	pool        *pgxpool.Pool
	svc         *billing.Service
	admin       audit.Actor
	team, pro   queries.Plan
	hidden, cny queries.Plan
	clock       atomic.Pointer[time.Time]
}

func newShop(t *testing.T, st billing.Settings) *shop {
	t.Helper()
	ctx := context.Background()
	pool := testenv.DB(t)
	rc, err := river.NewClient(riverpgxv5.New(pool), &river.Config{})
	require.NoError(t, err)
	box, err := secrets.New(make([]byte, 32))
	require.NoError(t, err)
	s := &shop{pool: pool}
	start := time.Date(2026, 1, 31, 10, 0, 0, 0, time.UTC)
	s.clock.Store(&start)
	s.svc = &billing.Service{Pool: pool, Box: box, River: rc, Now: func() time.Time { return *s.clock.Load() }}
	s.admin = audit.Actor{UserID: person(t, pool, "admin@example.com", "admin")}
	mk := func(name, cur, monthly, yearly string, public bool) queries.Plan {
		p, err := s.svc.CreatePlan(ctx, billing.PlanInput{
			Name: name, MaxClusters: 5, MaxNodesPerCluster: 20, MaxHostnamesPerCluster: 10, IngressAllowed: true, Public: public,
			Currency: cur, PriceMonthly: monthly, PriceYearly: yearly,
		}, s.admin)
		require.NoError(t, err)
		return p
	}
	s.team = mk("Team", "USD", "10", "100", true)
	s.pro = mk("Pro", "USD", "30", "300", true)
	s.hidden = mk("Partner", "USD", "5", "50", false)
	s.cny = mk("China", "CNY", "300", "3000", true)
	require.NoError(t, s.svc.SaveSettings(ctx, st, s.admin))
	return s
}

func manual() billing.Settings {
	st := billing.DefaultSettings()
	st.Methods = []string{billing.MethodManual}
	st.ManualInstructions = "Transfer to IBAN XX00 0000, reference: the order number."
	return st
}

func (s *shop) at(t time.Time) { s.clock.Store(&t) }
func (s *shop) now() time.Time { return *s.clock.Load() }

// personal is user acting in their personal organization, as its owner.
func (s *shop) personal(t *testing.T, user int64) orgs.Acting {
	t.Helper()
	who, err := orgs.PersonalActing(context.Background(), s.pool, user)
	require.NoError(t, err)
	return who
}

// sub is the subscription of user's personal organization.
func (s *shop) sub(t *testing.T, user int64) queries.Subscription {
	t.Helper()
	return s.subOf(t, s.personal(t, user).OrgID)
}

// subOf is organization org's subscription.
func (s *shop) subOf(t *testing.T, org int64) queries.Subscription {
	t.Helper()
	sub, err := queries.New(s.pool).SubscriptionGet(context.Background(), org)
	require.NoError(t, err)
	return sub
}

// buy orders plan for period for user's personal organization and has
// the admin mark it paid.
func (s *shop) buy(t *testing.T, user int64, plan queries.Plan, period billing.Period) queries.Order {
	t.Helper()
	return s.buyAs(t, s.personal(t, user), plan, period)
}

// buyAs is buy by who, for their organization.
func (s *shop) buyAs(t *testing.T, who orgs.Acting, plan queries.Plan, period billing.Period) queries.Order {
	t.Helper()
	ctx := context.Background()
	ch, err := s.svc.Choose(ctx, who, plan.ID, period, billing.MethodManual, audit.Actor{UserID: who.UserID})
	require.NoError(t, err)
	require.NotZero(t, ch.Order.ID, "an order")
	o, err := s.svc.MarkPaid(ctx, ch.Order.ID, "TRX-1", s.admin)
	require.NoError(t, err)
	return o
}

// TestOrderPaidOnce: a manual order is priced from its plan, replaces the
// user's pending one, and is paid once: the period starts, a second mark
// is ErrAlreadyPaid, and a renewal adds the next period on the anchor.
func TestOrderPaidOnce(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := newShop(t, manual())
	user := person(t, s.pool, "buyer@example.com", "user")
	me := audit.Actor{UserID: user}

	// Every user has a subscription: the default plan, no period.
	sub := s.sub(t, user)
	require.Equal(t, "active", sub.Status)
	require.False(t, sub.CurrentPeriodEnd.Valid)

	first, err := s.svc.Choose(ctx, s.personal(t, user), s.team.ID, billing.Monthly, billing.MethodManual, me)
	require.NoError(t, err)
	require.Regexp(t, `^KB-\d{8}-\d{6}$`, first.Order.Number)
	require.Equal(t, "pending", first.Order.Status)
	require.Equal(t, int64(1000), first.Order.Total)
	second, err := s.svc.Choose(ctx, s.personal(t, user), s.team.ID, billing.Yearly, billing.MethodManual, me)
	require.NoError(t, err)
	require.Equal(t, int64(10000), second.Order.Total)
	replaced, err := queries.New(s.pool).OrderGet(ctx, first.Order.ID)
	require.NoError(t, err)
	require.Equal(t, "cancelled", replaced.Status, "a new order replaces the pending one")
	_, err = s.svc.MarkPaid(ctx, first.Order.ID, "late", s.admin)
	require.ErrorIs(t, err, billing.ErrOrderClosed)
	_, err = s.svc.MarkPaid(ctx, second.Order.ID, "", s.admin)
	require.ErrorIs(t, err, billing.ErrReferenceRequired)
	_, err = s.svc.MarkPaid(ctx, second.Order.ID, "TRX", me)
	require.Error(t, err, "users do not mark orders paid")

	// Two admins mark it paid at once: one period.
	var wg sync.WaitGroup
	errs := make([]error, 2)
	for i := range errs {
		wg.Go(func() { _, errs[i] = s.svc.MarkPaid(ctx, second.Order.ID, "TRX-42", s.admin) })
	}
	wg.Wait()
	require.ElementsMatch(t, []bool{true, false}, []bool{errs[0] == nil, errs[1] == nil}, "%v", errs)
	require.True(t, errors.Is(errs[0], billing.ErrAlreadyPaid) || errors.Is(errs[1], billing.ErrAlreadyPaid))
	sub = s.sub(t, user)
	require.Equal(t, s.team.ID, sub.PlanID)
	require.Equal(t, "year", sub.Period.String)
	require.Equal(t, s.now().AddDate(1, 0, 0), sub.CurrentPeriodEnd.Time.UTC())
	var paidEvents int
	require.NoError(t, s.pool.QueryRow(ctx, `SELECT count(*) FROM order_events WHERE order_id = $1 AND kind = 'paid'`, second.Order.ID).Scan(&paidEvents))
	require.Equal(t, 1, paidEvents)

	// The unique index, not Go, refuses a second payment.
	_, err = s.pool.Exec(ctx, `INSERT INTO order_events (order_id, kind) VALUES ($1, 'paid')`, second.Order.ID)
	require.ErrorContains(t, err, "order_events_paid_once")

	// A renewal adds the next year after the current one.
	s.at(s.now().AddDate(0, 11, 0))
	renewal := s.buy(t, user, s.team, billing.Yearly)
	require.Equal(t, "renewal", renewal.Kind)
	require.Equal(t, time.Date(2027, 1, 31, 10, 0, 0, 0, time.UTC), renewal.PeriodStart.Time.UTC())
	require.Equal(t, time.Date(2028, 1, 31, 10, 0, 0, 0, time.UTC), s.sub(t, user).CurrentPeriodEnd.Time.UTC())
}

// TestChoose: each choice of plan, table-driven from a user on Team
// monthly paid on 31 January, looked at on 14 February (14 of its 28 days
// left: 5.00 of 10.00 unused), with a 10% tax.
func TestChoose(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	st := manual()
	st.TaxLabel, st.TaxRateBasisPoints = "VAT", 1000
	s := newShop(t, st)
	feb14 := time.Date(2026, 2, 14, 10, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		name      string
		plan      func() queries.Plan
		period    billing.Period
		method    string
		err       error
		scheduled bool
		kind      string
		credit    int64
		total     int64
	}{
		{name: "upgrade: credit for the unused part, tax on the rest", plan: func() queries.Plan { return s.pro }, period: billing.Monthly,
			kind: "new", credit: 500, total: (3000 - 500) * 11 / 10},
		{name: "same plan, same period: a renewal", plan: func() queries.Plan { return s.team }, period: billing.Monthly,
			kind: "renewal", total: 1100},
		{name: "same plan, yearly: at the period's end", plan: func() queries.Plan { return s.team }, period: billing.Yearly, scheduled: true},
		{name: "downgrade to free: at the period's end", plan: func() queries.Plan { p, _ := queries.New(s.pool).PlanDefault(ctx); return p },
			period: billing.Monthly, scheduled: true},
		{name: "hidden plan", plan: func() queries.Plan { return s.hidden }, period: billing.Monthly, err: billing.ErrPlanUnavailable},
		{name: "other currency mid-period", plan: func() queries.Plan { return s.cny }, period: billing.Monthly, err: billing.ErrCurrencyChange},
		{name: "method off", plan: func() queries.Plan { return s.pro }, period: billing.Monthly, method: billing.MethodStripe, err: billing.ErrMethod},
		{name: "bad period", plan: func() queries.Plan { return s.pro }, period: "week", err: billing.ErrPeriod},
	} {
		t.Run(tc.name, func(t *testing.T) {
			user := person(t, s.pool, "choose-"+tc.name+"@example.com", "user")
			s.at(time.Date(2026, 1, 31, 10, 0, 0, 0, time.UTC))
			_ = s.buy(t, user, s.team, billing.Monthly)
			require.Equal(t, time.Date(2026, 2, 28, 10, 0, 0, 0, time.UTC), s.sub(t, user).CurrentPeriodEnd.Time.UTC(), "31 January renews on 28 February")
			s.at(feb14)
			method := tc.method
			if method == "" {
				method = billing.MethodManual
			}
			ch, err := s.svc.Choose(ctx, s.personal(t, user), tc.plan().ID, tc.period, method, audit.Actor{UserID: user})
			if tc.err != nil {
				require.ErrorIs(t, err, tc.err)
				return
			}
			require.NoError(t, err)
			require.Equal(t, tc.scheduled, ch.Scheduled)
			if tc.scheduled {
				require.Zero(t, ch.Order.ID)
				require.Equal(t, tc.plan().ID, s.sub(t, user).ScheduledPlanID.Int64)
				return
			}
			require.Equal(t, tc.kind, ch.Order.Kind)
			require.InDelta(t, tc.credit, ch.Order.Credit, 1)
			require.InDelta(t, tc.total, ch.Order.Total, 1)
			if tc.credit > 0 {
				require.Equal(t, "VAT", ch.Order.TaxLabel)
			}
		})
	}
}

// TestPeriods: with a controllable clock, the period-end job tells the
// owner a week ahead once, makes an unpaid period past due (plan kept),
// moves it to the default plan after the grace period, applies a
// scheduled downgrade and a cancel at the period's end, and expires
// unpaid orders. Nothing of the user's is deleted.
func TestPeriods(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	st := manual()
	st.GraceDays, st.OrderExpiryHours = 3, 24
	s := newShop(t, st)
	def, err := queries.New(s.pool).PlanDefault(ctx)
	require.NoError(t, err)
	lapsing := person(t, s.pool, "lapsing@example.com", "user")
	downgrading := person(t, s.pool, "down@example.com", "user")
	cancelling := person(t, s.pool, "cancel@example.com", "user")
	for _, u := range []int64{lapsing, downgrading, cancelling} {
		s.buy(t, u, s.pro, billing.Monthly)
	}
	end := s.sub(t, lapsing).CurrentPeriodEnd.Time
	ch, err := s.svc.Choose(ctx, s.personal(t, downgrading), s.team.ID, billing.Monthly, billing.MethodManual, audit.Actor{UserID: downgrading})
	require.NoError(t, err)
	require.True(t, ch.Scheduled)
	require.NoError(t, s.svc.SetCancel(ctx, s.personal(t, cancelling), true, audit.Actor{UserID: cancelling}))
	// An order left unpaid.
	waiting := person(t, s.pool, "waiting@example.com", "user")
	unpaid, err := s.svc.Choose(ctx, s.personal(t, waiting), s.team.ID, billing.Monthly, billing.MethodManual, audit.Actor{UserID: waiting})
	require.NoError(t, err)

	notices := func(u int64, body string) int {
		var n int
		require.NoError(t, s.pool.QueryRow(ctx, `SELECT count(*) FROM notifications WHERE user_id = $1 AND message = $2`, u, body).Scan(&n))
		return n
	}
	run := func(at time.Time) {
		t.Helper()
		s.at(at)
		_, err := s.svc.RunPeriods(ctx)
		require.NoError(t, err)
		_, err = s.svc.ExpireOrders(ctx)
		require.NoError(t, err)
	}

	run(end.Add(-6 * 24 * time.Hour))
	run(end.Add(-5 * 24 * time.Hour))
	require.Equal(t, 1, notices(lapsing, billing.EmailPeriodEnding), "told once, a week ahead")
	require.Equal(t, 0, notices(cancelling, billing.EmailPeriodEnding), "who cancelled knows")
	o, err := queries.New(s.pool).OrderGet(ctx, unpaid.Order.ID)
	require.NoError(t, err)
	require.Equal(t, "expired", o.Status, "unpaid for more than 24 hours")

	run(end.Add(time.Minute))
	require.Equal(t, "past_due", s.sub(t, lapsing).Status)
	require.Equal(t, s.pro.ID, s.sub(t, lapsing).PlanID, "the plan is kept during the grace period")
	require.Equal(t, s.team.ID, s.sub(t, downgrading).PlanID, "the downgrade took effect")
	require.Equal(t, "past_due", s.sub(t, downgrading).Status, "until Team's period is paid")
	require.Equal(t, def.ID, s.sub(t, cancelling).PlanID)
	require.Equal(t, "cancelled", s.sub(t, cancelling).Status)
	require.Equal(t, 1, notices(lapsing, billing.EmailPeriodPastDue))

	// The downgraded user pays Team: its period follows the old one.
	renewal := s.buy(t, downgrading, s.team, billing.Monthly)
	require.Equal(t, "renewal", renewal.Kind)
	require.Equal(t, end, renewal.PeriodStart.Time)

	run(end.Add(3*24*time.Hour + 2*time.Minute))
	require.Equal(t, def.ID, s.sub(t, lapsing).PlanID, "after the grace period: the default plan")
	require.Equal(t, "expired", s.sub(t, lapsing).Status)
	require.Equal(t, 1, notices(lapsing, billing.EmailPlanExpired))
	require.Equal(t, "active", s.sub(t, downgrading).Status)
}

// TestMakeDefaultMovesFreeUsers: users with no paid period follow the
// default plan; paying users keep theirs.
func TestMakeDefaultMovesFreeUsers(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := newShop(t, manual())
	free := person(t, s.pool, "free@example.com", "user")
	paying := person(t, s.pool, "paying@example.com", "user")
	s.buy(t, paying, s.pro, billing.Monthly)
	_, err := s.svc.MakeDefault(ctx, s.team.ID, s.admin)
	require.NoError(t, err)
	require.Equal(t, s.team.ID, s.sub(t, free).PlanID)
	require.Equal(t, s.pro.ID, s.sub(t, paying).PlanID)
	fresh := person(t, s.pool, "fresh@example.com", "user")
	require.Equal(t, s.team.ID, s.sub(t, fresh).PlanID, "a new user gets the default plan")
}

// TestChooseNeverFree: a paid plan with a period left unpriced is not had
// for that period (the order of issue 35: "USD 0.00 a year", switched at
// once, never to renew): the choice is refused, nothing is written, and
// the monthly price still buys it. A plan said to be free switches at once.
func TestChooseNeverFree(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := newShop(t, manual())
	user := person(t, s.pool, "buyer@example.com", "user")
	me := audit.Actor{UserID: user}
	monthlyOnly, err := s.svc.CreatePlan(ctx, billing.PlanInput{
		Name: "Monthly", MaxClusters: 5, MaxNodesPerCluster: 20, IngressAllowed: true, Public: true,
		Currency: "USD", PriceMonthly: "10", PriceYearly: "",
	}, s.admin)
	require.NoError(t, err)
	before := s.sub(t, user)

	_, err = s.svc.Choose(ctx, s.personal(t, user), monthlyOnly.ID, billing.Yearly, billing.MethodManual, me)
	require.ErrorIs(t, err, billing.ErrPeriodNotOffered)
	require.Equal(t, before, s.sub(t, user), "the subscription is as it was")
	var orders int
	require.NoError(t, s.pool.QueryRow(ctx, `SELECT count(*) FROM orders WHERE user_id = $1`, user).Scan(&orders))
	require.Zero(t, orders)

	ch, err := s.svc.Choose(ctx, s.personal(t, user), monthlyOnly.ID, billing.Monthly, billing.MethodManual, me)
	require.NoError(t, err)
	require.Equal(t, billing.OrderPending, ch.Order.Status)
	require.Equal(t, int64(1000), ch.Order.Total)
	require.Equal(t, before.PlanID, s.sub(t, user).PlanID, "pending until paid")

	gift, err := s.svc.CreatePlan(ctx, billing.PlanInput{
		Name: "Education", MaxClusters: 5, MaxNodesPerCluster: 20, Public: true, Currency: "USD", Free: true,
	}, s.admin)
	require.NoError(t, err)
	ch, err = s.svc.Choose(ctx, s.personal(t, user), gift.ID, billing.Yearly, billing.MethodManual, me)
	require.NoError(t, err)
	require.True(t, ch.Switched)
	require.Equal(t, gift.ID, s.sub(t, user).PlanID)
}
