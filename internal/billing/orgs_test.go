package billing_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/kubebyon/kubebyon/internal/audit"
	"github.com/kubebyon/kubebyon/internal/billing"
	"github.com/kubebyon/kubebyon/internal/entitlements"
	"github.com/kubebyon/kubebyon/internal/orgs"
	"github.com/kubebyon/kubebyon/queries"
)

// team is a team's organization: its maker (an owner), a second owner, a
// member in each other role, and someone who is not a member.
type team struct {
	org                                             int64
	owner, coOwner, admin, member, viewer, outsider int64
}

func (s *shop) newTeam(t *testing.T, name string) team {
	t.Helper()
	ctx := context.Background()
	mk := func(role string) int64 { return person(t, s.pool, name+"-"+role+"@example.com", "user") }
	tm := team{owner: mk("owner"), coOwner: mk("co-owner"), admin: mk("admin"), member: mk("member"), viewer: mk("viewer"), outsider: mk("outsider")}
	o, err := (&orgs.Service{Pool: s.pool}).Create(ctx, name, audit.Actor{UserID: tm.owner})
	require.NoError(t, err)
	tm.org = o.ID
	q := queries.New(s.pool)
	for user, role := range map[int64]orgs.Role{tm.coOwner: orgs.Owner, tm.admin: orgs.Admin, tm.member: orgs.Member, tm.viewer: orgs.Viewer} {
		require.NoError(t, q.OrgMemberAdd(ctx, queries.OrgMemberAddParams{OrgID: tm.org, UserID: user, Role: string(role)}))
	}
	return tm
}

// as is user acting in the team as role (the console's cap: their role).
func (tm team) as(user int64, role orgs.Role) orgs.Acting {
	return orgs.Acting{OrgID: tm.org, UserID: user, Cap: role}
}

// TestTeamOrders: an owner of a team orders a plan for it: it is the
// team's plan (its entitlements), their personal organization's is
// unchanged; the order is the team's, placed by the owner, and audited
// on the team with the owner as the actor. Another owner reads and
// cancels the team's orders; the other members read the plan and the
// plans on offer, and are refused (orgs.ErrForbidden) everything else;
// someone who is not a member finds nothing; nothing refused writes
// anything.
func TestTeamOrders(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := newShop(t, manual())
	q := queries.New(s.pool)
	tm := s.newTeam(t, "acme")
	def, err := q.PlanDefault(ctx)
	require.NoError(t, err)

	ent, err := entitlements.For(ctx, q, tm.org)
	require.NoError(t, err)
	require.Equal(t, def.ID, ent.Plan.ID, "a new team is on the default plan")

	paid := s.buyAs(t, tm.as(tm.owner, orgs.Owner), s.pro, billing.Monthly)
	require.Equal(t, tm.org, paid.OrgID)
	require.Equal(t, tm.owner, paid.UserID, "who placed it")
	ent, err = entitlements.For(ctx, q, tm.org)
	require.NoError(t, err)
	require.Equal(t, s.pro.ID, ent.Plan.ID, "the team's plan")
	require.Equal(t, "active", s.subOf(t, tm.org).Status)
	personal := s.sub(t, tm.owner)
	require.Equal(t, def.ID, personal.PlanID, "the owner's personal plan is unchanged")
	require.False(t, personal.CurrentPeriodEnd.Valid)
	var actor int64
	require.NoError(t, s.pool.QueryRow(ctx, `SELECT actor_id FROM audit_events
		WHERE action = 'billing.order_create' AND target_type = 'organization' AND target_id = $1`, fmt.Sprint(tm.org)).Scan(&actor))
	require.Equal(t, tm.owner, actor)

	// Another owner's Pay-later order, for the other members to try.
	pending, err := s.svc.Choose(ctx, tm.as(tm.coOwner, orgs.Owner), s.pro.ID, billing.Monthly, billing.MethodManual, audit.Actor{UserID: tm.coOwner})
	require.NoError(t, err)
	require.Equal(t, billing.KindRenewal, pending.Order.Kind, "the team's period, renewed")

	orders := func() int {
		var n int
		require.NoError(t, s.pool.QueryRow(ctx, `SELECT count(*) FROM orders WHERE org_id = $1`, tm.org).Scan(&n))
		return n
	}
	tests := []struct {
		name string
		who  orgs.Acting
		// act: ordering, cancelling the plan or an order, paying; read:
		// the team's paid order; list: the orders; sub: the plan (its
		// subscription, usage and offer).
		act, read, list, sub error
	}{
		{"co-owner", tm.as(tm.coOwner, orgs.Owner), nil, nil, nil, nil},
		{"owner's read key", tm.as(tm.owner, orgs.Viewer), orgs.ErrForbidden, nil, nil, nil},
		{"admin", tm.as(tm.admin, orgs.Admin), orgs.ErrForbidden, orgs.ErrForbidden, orgs.ErrForbidden, nil},
		{"member", tm.as(tm.member, orgs.Member), orgs.ErrForbidden, orgs.ErrForbidden, orgs.ErrForbidden, nil},
		{"viewer", tm.as(tm.viewer, orgs.Viewer), orgs.ErrForbidden, orgs.ErrForbidden, orgs.ErrForbidden, nil},
		{"outsider", tm.as(tm.outsider, orgs.Owner), orgs.ErrNotFound, billing.ErrOrderNotFound, orgs.ErrNotFound, orgs.ErrNotFound},
		{"the owner, in their personal organization", orgs.Acting{OrgID: s.personal(t, tm.owner).OrgID, UserID: tm.owner, Cap: orgs.Owner},
			nil, billing.ErrOrderNotFound, nil, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			// Not parallel: the co-owner's cancel below is the last change.
			if tt.act != nil {
				_, err := s.svc.Choose(ctx, tt.who, s.team.ID, billing.Monthly, billing.MethodManual, audit.Actor{UserID: tt.who.UserID})
				require.ErrorIs(t, err, tt.act)
				require.ErrorIs(t, s.svc.SetCancel(ctx, tt.who, true, audit.Actor{UserID: tt.who.UserID}), tt.act)
				_, err = s.svc.Checkout(ctx, tt.who, pending.Order.ID, "", "https://kb.example/")
				require.ErrorIs(t, err, orderErr(tt.act))
				_, err = s.svc.CancelOrder(ctx, tt.who, pending.Order.ID, audit.Actor{UserID: tt.who.UserID})
				require.ErrorIs(t, err, orderErr(tt.act))
				require.Equal(t, 2, orders(), "nothing ordered")
				require.False(t, s.subOf(t, tm.org).CancelAtPeriodEnd, "nothing cancelled")
			}

			o, err := s.svc.OrderOf(ctx, tt.who, paid.ID)
			if tt.read != nil {
				require.ErrorIs(t, err, tt.read)
			} else {
				require.NoError(t, err)
				require.Equal(t, "acme", o.OrgName)
				require.False(t, o.OrgPersonal)
				require.Equal(t, "acme-owner@example.com", o.PlacedByEmail)
			}
			rows, err := s.svc.OrdersOf(ctx, tt.who, 0, 10)
			if tt.list != nil {
				require.ErrorIs(t, err, tt.list)
			} else {
				require.NoError(t, err)
				for _, r := range rows {
					require.Equal(t, tt.who.OrgID, r.Order.OrgID, "its own organization's orders only")
				}
			}

			sub, err := s.svc.SubscriptionOf(ctx, tt.who)
			use, useErr := s.svc.UsageOf(ctx, tt.who)
			plans, plansErr := s.svc.PlansFor(ctx, tt.who, 0, 0)
			require.NoError(t, plansErr)
			if tt.sub != nil {
				require.ErrorIs(t, err, tt.sub)
				require.ErrorIs(t, useErr, tt.sub)
				require.Empty(t, plans, "no plans on offer to a stranger")
				return
			}
			require.NoError(t, err)
			require.NoError(t, useErr)
			require.NotEmpty(t, plans)
			if tt.who.OrgID == tm.org {
				require.Equal(t, s.pro.ID, sub.PlanID)
				require.Equal(t, "acme", sub.OrgName)
				require.False(t, sub.Personal)
				require.Equal(t, s.pro.ID, use.Plan.ID)
			}
		})
	}

	// The other owner reads the team's orders and cancels the pending one.
	rows, err := s.svc.OrdersOf(ctx, tm.as(tm.coOwner, orgs.Owner), 0, 10)
	require.NoError(t, err)
	require.Len(t, rows, 2)
	cancelled, err := s.svc.CancelOrder(ctx, tm.as(tm.coOwner, orgs.Owner), pending.Order.ID, audit.Actor{UserID: tm.coOwner})
	require.NoError(t, err)
	require.Equal(t, billing.OrderCancelled, cancelled.Status)
	_, err = s.svc.CancelOrder(ctx, orgs.Acting{OrgID: s.personal(t, tm.owner).OrgID, UserID: tm.owner, Cap: orgs.Owner}, paid.ID, audit.Actor{UserID: tm.owner})
	require.ErrorIs(t, err, billing.ErrOrderNotFound, "an order of another of the owner's organizations, named from this one")
}

// orderErr is the refusal of an action on one order for a refusal of the
// organization's billing: a stranger finds no order.
func orderErr(err error) error {
	if err == orgs.ErrNotFound {
		return billing.ErrOrderNotFound
	}
	return err
}

// TestTeamPeriods: the period-end job acts on each organization's
// subscription on its own: the team's period ends past due while its
// owner's personal one, bought later, runs on; the team's notices go to
// every owner of the team and to no other member; a paid order's notice
// goes to who placed it.
func TestTeamPeriods(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	st := manual()
	st.GraceDays = 3
	s := newShop(t, st)
	tm := s.newTeam(t, "periods")
	s.at(time.Date(2026, 1, 31, 10, 0, 0, 0, time.UTC))
	s.buyAs(t, tm.as(tm.owner, orgs.Owner), s.pro, billing.Monthly)
	teamEnd := s.subOf(t, tm.org).CurrentPeriodEnd.Time
	s.at(time.Date(2026, 2, 10, 10, 0, 0, 0, time.UTC))
	s.buy(t, tm.owner, s.team, billing.Monthly)
	personalEnd := s.sub(t, tm.owner).CurrentPeriodEnd.Time
	require.True(t, personalEnd.After(teamEnd))

	notices := func(u int64, template string) int {
		var n int
		require.NoError(t, s.pool.QueryRow(ctx, `SELECT count(*) FROM notifications WHERE user_id = $1 AND message = $2`, u, template).Scan(&n))
		return n
	}
	run := func(at time.Time) {
		t.Helper()
		s.at(at)
		_, err := s.svc.RunPeriods(ctx)
		require.NoError(t, err)
	}
	run(teamEnd.Add(-6 * 24 * time.Hour))
	run(teamEnd.Add(time.Minute))

	require.Equal(t, billing.StatusPastDue, s.subOf(t, tm.org).Status, "the team's period ended unpaid")
	require.Equal(t, s.pro.ID, s.subOf(t, tm.org).PlanID, "its plan kept for the grace period")
	personal := s.sub(t, tm.owner)
	require.Equal(t, billing.StatusActive, personal.Status, "the owner's personal period runs on")
	require.Equal(t, s.team.ID, personal.PlanID)

	for _, tt := range []struct {
		name        string
		user        int64
		ending, due int
		paidNotices int
	}{
		{name: "owner", user: tm.owner, ending: 1, due: 1, paidNotices: 2},
		{name: "co-owner", user: tm.coOwner, ending: 1, due: 1},
		{name: "admin", user: tm.admin},
		{name: "member", user: tm.member},
		{name: "viewer", user: tm.viewer},
		{name: "outsider", user: tm.outsider},
	} {
		require.Equal(t, tt.ending, notices(tt.user, billing.EmailPeriodEnding), tt.name)
		require.Equal(t, tt.due, notices(tt.user, billing.EmailPeriodPastDue), tt.name)
		require.Equal(t, tt.paidNotices, notices(tt.user, billing.EmailOrderPaid), tt.name+": the team's order and their own")
	}

	// The other owner renews the team's plan: its period follows the
	// old one, and they are told of their order.
	renewal := s.buyAs(t, tm.as(tm.coOwner, orgs.Owner), s.pro, billing.Monthly)
	require.Equal(t, billing.KindRenewal, renewal.Kind)
	require.Equal(t, teamEnd, renewal.PeriodStart.Time)
	require.Equal(t, billing.StatusActive, s.subOf(t, tm.org).Status)
	require.Equal(t, 1, notices(tm.coOwner, billing.EmailOrderPaid))

	// The personal period ends unpaid and its grace runs out; the
	// team's, paid, stays.
	run(personalEnd.Add(time.Minute))
	require.Equal(t, billing.StatusPastDue, s.sub(t, tm.owner).Status)
	run(personalEnd.Add(3*24*time.Hour + 2*time.Minute))
	require.Equal(t, billing.StatusExpired, s.sub(t, tm.owner).Status)
	require.Equal(t, billing.StatusActive, s.subOf(t, tm.org).Status)
	require.Equal(t, s.pro.ID, s.subOf(t, tm.org).PlanID)
	require.Equal(t, 1, notices(tm.owner, billing.EmailPlanExpired), "the personal plan's end, told to its owner")
	require.Zero(t, notices(tm.coOwner, billing.EmailPlanExpired), "not to the team's other owner")

	// The team's notices name it (the email's subject starts with it);
	// the personal ones name no organization.
	orgOf := func(template string) []string {
		rows, err := s.pool.Query(ctx, `SELECT DISTINCT coalesce(params->>'Org', '') FROM notifications WHERE user_id = $1 AND message = $2 ORDER BY 1`, tm.owner, template)
		require.NoError(t, err)
		out, err := pgx.CollectRows(rows, pgx.RowTo[string])
		require.NoError(t, err)
		return out
	}
	require.Equal(t, []string{"", "periods"}, orgOf(billing.EmailPeriodPastDue), "the personal period's, and the team's")
	require.Equal(t, []string{""}, orgOf(billing.EmailPlanExpired))
}
