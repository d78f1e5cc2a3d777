package billing

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/kubebyon/kubebyon/queries"
)

// Settings are the billing settings as stored, defaults for what was
// never set (LoadSettings).
func (s *Service) Settings(ctx context.Context) (Settings, error) {
	return LoadSettings(ctx, queries.New(s.Pool), s.Box)
}

// Order is any user's order with id (the admin's pages), or
// ErrOrderNotFound.
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

// OrderOf is the user's order with id; another user's is ErrOrderNotFound,
// as one that does not exist.
func (s *Service) OrderOf(ctx context.Context, userID, id int64) (queries.Order, error) {
	o, err := queries.New(s.Pool).OrderGetForUser(ctx, queries.OrderGetForUserParams{ID: id, UserID: userID})
	if errors.Is(err, pgx.ErrNoRows) {
		return queries.Order{}, ErrOrderNotFound
	}
	if err != nil {
		return queries.Order{}, fmt.Errorf("load order %d: %w", id, err)
	}
	return o, nil
}

// OrdersOf are the user's newest orders with an id below before (0: from
// the newest), up to n, each with its plan's name.
func (s *Service) OrdersOf(ctx context.Context, userID, before int64, n int32) ([]queries.OrderListForUserRow, error) {
	rows, err := queries.New(s.Pool).OrderListForUser(ctx, queries.OrderListForUserParams{UserID: userID, BeforeID: before, MaxRows: n})
	if err != nil {
		return nil, fmt.Errorf("list orders of user %d: %w", userID, err)
	}
	return rows, nil
}

// AdminOrders are the orders of every user under the admin's filter f,
// newest first. The filter's email matches the account's address whatever
// its case: the stored address is looked up; an unknown one is matched as
// typed (and finds none).
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

// AdminOrder is an order with what its admin page shows beside it.
type AdminOrder struct {
	Order  queries.Order
	User   queries.User
	Plan   queries.Plan
	Events []queries.OrderEventsRow
}

// AdminOrder is any user's order with id, its buyer, plan and events, or
// ErrOrderNotFound.
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
