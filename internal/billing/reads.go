package billing

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/kubebyon/kubebyon/internal/orgs"
	"github.com/kubebyon/kubebyon/queries"
)

// Settings are the billing settings as stored, defaults for what was
// never set (LoadSettings).
func (s *Service) Settings(ctx context.Context) (Settings, error) {
	return LoadSettings(ctx, queries.New(s.Pool), s.Box)
}

// Order is any order with id (the admin's pages), or ErrOrderNotFound.
func (s *Service) Order(ctx context.Context, id int64) (queries.Order, error) {
	o, err := queries.New(s.Pool).OrderGet(ctx, id)
	if errors.Is(err, pgx.ErrNoRows) {
		return queries.Order{}, ErrOrderNotFound
	}
	if err != nil {
		return queries.Order{}, fmt.Errorf("load order %d: %w", id, err)
	}
	return o, nil
}

// OrderOf is the order with id of who's organization, with the
// organization's name and who placed it, for an owner (orderReaders).
// Another organization's order is ErrOrderNotFound, as one that does not
// exist; the organization's own, for a member who is not an owner,
// orgs.ErrForbidden.
func (s *Service) OrderOf(ctx context.Context, who orgs.Acting, id int64) (queries.OrderGetForMemberRow, error) {
	q := queries.New(s.Pool)
	o, err := q.OrderGetForMember(ctx, queries.OrderGetForMemberParams{ID: id, OrgID: who.OrgID, UserID: who.UserID, Roles: orderReaders(who)})
	if errors.Is(err, pgx.ErrNoRows) {
		return o, orderRefusal(ctx, q, who, id)
	}
	if err != nil {
		return o, fmt.Errorf("load order %d: %w", id, err)
	}
	return o, nil
}

// OrdersOf are the newest orders of who's organization with an id below
// before (0: from the newest), up to n, each with its plan's name, for an
// owner (orderReaders): orgs.ErrForbidden for another member.
func (s *Service) OrdersOf(ctx context.Context, who orgs.Acting, before int64, n int32) ([]queries.OrderListForMemberRow, error) {
	q := queries.New(s.Pool)
	may, err := q.OrgMemberIn(ctx, queries.OrgMemberInParams{OrgID: who.OrgID, UserID: who.UserID, Roles: orderReaders(who)})
	if err != nil {
		return nil, fmt.Errorf("check membership: %w", err)
	}
	if !may {
		return nil, refusal(ctx, q, who)
	}
	rows, err := q.OrderListForMember(ctx, queries.OrderListForMemberParams{
		OrgID: who.OrgID, UserID: who.UserID, Roles: orderReaders(who), BeforeID: before, MaxRows: n,
	})
	if err != nil {
		return nil, fmt.Errorf("list orders of organization %d: %w", who.OrgID, err)
	}
	return rows, nil
}

// orderReaders are the roles that may read the orders and receipts of
// who's organization: those that may pay for them (orgs.Billing), the
// owners. Unlike what changes billing it is not capped by who's key: a
// read key acts as a viewer, and yet reads its owner's orders, as it did
// before organizations (it still changes nothing).
func orderReaders(who orgs.Acting) []string {
	return orgs.Acting{OrgID: who.OrgID, UserID: who.UserID}.Roles(orgs.Billing)
}

// orderRefusal is why who found no order id in their organization:
// orgs.ErrForbidden for a member when the organization has it, else
// ErrOrderNotFound.
func orderRefusal(ctx context.Context, q *queries.Queries, who orgs.Acting, id int64) error {
	member, err := q.OrgMemberIn(ctx, queries.OrgMemberInParams{OrgID: who.OrgID, UserID: who.UserID, Roles: who.Roles(orgs.Read)})
	if err != nil {
		return fmt.Errorf("check membership: %w", err)
	}
	if !member {
		return ErrOrderNotFound
	}
	has, err := q.OrderExistsInOrg(ctx, queries.OrderExistsInOrgParams{ID: id, OrgID: who.OrgID})
	switch {
	case err != nil:
		return fmt.Errorf("look up order %d: %w", id, err)
	case has:
		return orgs.ErrForbidden
	}
	return ErrOrderNotFound
}

// AdminOrders are the orders of every organization under the admin's
// filter f, newest first, each with its organization's name and the
// address of who placed it. The filter's email (who placed the order)
// matches the account's address whatever its case: the stored address is
// looked up; an unknown one is matched as typed (and finds none).
func (s *Service) AdminOrders(ctx context.Context, f queries.OrderListAdminParams) ([]queries.OrderListAdminRow, error) {
	q := queries.New(s.Pool)
	if f.UserEmail != "" {
		u, err := q.UserGetByEmail(ctx, f.UserEmail)
		switch {
		case err == nil:
			f.UserEmail = u.Email
		case !errors.Is(err, pgx.ErrNoRows):
			return nil, fmt.Errorf("look up user %q: %w", f.UserEmail, err)
		}
	}
	rows, err := q.OrderListAdmin(ctx, f)
	if err != nil {
		return nil, fmt.Errorf("list orders: %w", err)
	}
	return rows, nil
}

// AdminOrder is an order with what its admin page shows beside it: the
// organization it is for, who placed it (User), its plan and its events.
type AdminOrder struct {
	Order  queries.Order
	Org    queries.Organization
	User   queries.User
	Plan   queries.Plan
	Events []queries.OrderEventsRow
}

// AdminOrder is any order with id, its organization, who placed it, its
// plan and events, or ErrOrderNotFound.
func (s *Service) AdminOrder(ctx context.Context, id int64) (AdminOrder, error) {
	q := queries.New(s.Pool)
	var out AdminOrder
	var err error
	out.Order, err = q.OrderGet(ctx, id)
	if errors.Is(err, pgx.ErrNoRows) {
		return AdminOrder{}, ErrOrderNotFound
	}
	if err != nil {
		return AdminOrder{}, fmt.Errorf("load order %d: %w", id, err)
	}
	o := out.Order
	if out.Org, err = q.OrgGet(ctx, o.OrgID); err != nil {
		return AdminOrder{}, fmt.Errorf("load organization %d: %w", o.OrgID, err)
	}
	if out.User, err = q.UserGetByID(ctx, o.UserID); err != nil {
		return AdminOrder{}, fmt.Errorf("load user %d: %w", o.UserID, err)
	}
	if out.Plan, err = q.PlanGet(ctx, o.PlanID); err != nil {
		return AdminOrder{}, fmt.Errorf("load plan %d: %w", o.PlanID, err)
	}
	if out.Events, err = q.OrderEvents(ctx, o.ID); err != nil {
		return AdminOrder{}, fmt.Errorf("load events of order %d: %w", o.ID, err)
	}
	return out, nil
}

// Overview is the billing overview of the admin area.
type Overview struct {
	// Plans are the plans with their subscriptions by status.
	Plans []queries.SubscriptionsByPlanRow
	// Awaiting counts the orders waiting for their payment.
	Awaiting int64
	// Revenue is what was paid by currency and month, since the
	// overview's first month.
	Revenue []queries.RevenueByMonthRow
}

// Overview reads the overview, with the revenue paid since since.
func (s *Service) Overview(ctx context.Context, since time.Time) (Overview, error) {
	q := queries.New(s.Pool)
	var out Overview
	var err error
	if out.Plans, err = q.SubscriptionsByPlan(ctx); err != nil {
		return Overview{}, fmt.Errorf("subscriptions by plan: %w", err)
	}
	if out.Awaiting, err = q.OrdersAwaiting(ctx); err != nil {
		return Overview{}, fmt.Errorf("orders awaiting payment: %w", err)
	}
	if out.Revenue, err = q.RevenueByMonth(ctx, ts(since)); err != nil {
		return Overview{}, fmt.Errorf("revenue by month: %w", err)
	}
	return out, nil
}
