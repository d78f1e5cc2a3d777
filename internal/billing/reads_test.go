package billing_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/kubebyon/kubebyon/internal/billing"
	"github.com/kubebyon/kubebyon/queries"
)

// TestOrderReads: a user reads their personal organization's orders only;
// an admin finds any order by its buyer's address whatever its case, and
// reads one with its organization, buyer, plan and events.
func TestOrderReads(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := newShop(t, manual())
	buyer := person(t, s.pool, "Reader@example.com", "user")
	other := person(t, s.pool, "other-reader@example.com", "user")
	paid := s.buy(t, buyer, s.team, billing.Monthly)

	t.Run("own orders", func(t *testing.T) {
		t.Parallel()
		tests := []struct {
			name  string
			user  int64
			order int64
			err   error
		}{
			{"the buyer's", buyer, paid.ID, nil},
			{"another user's", other, paid.ID, billing.ErrOrderNotFound},
			{"none", buyer, paid.ID + 1000, billing.ErrOrderNotFound},
		}
		for _, tt := range tests {
			o, err := s.svc.OrderOf(ctx, s.personal(t, tt.user), tt.order)
			if tt.err != nil {
				require.ErrorIs(t, err, tt.err, tt.name)
				continue
			}
			require.NoError(t, err, tt.name)
			require.Equal(t, paid.ID, o.Order.ID, tt.name)
			require.Equal(t, "Reader@example.com", o.PlacedByEmail, tt.name)
			require.True(t, o.OrgPersonal, tt.name)
		}
		rows, err := s.svc.OrdersOf(ctx, s.personal(t, buyer), 0, 10)
		require.NoError(t, err)
		require.Len(t, rows, 1)
		require.Equal(t, "Team", rows[0].PlanName)
		rows, err = s.svc.OrdersOf(ctx, s.personal(t, other), 0, 10)
		require.NoError(t, err)
		require.Empty(t, rows)
	})

	t.Run("admin list by email", func(t *testing.T) {
		t.Parallel()
		tests := []struct {
			email string
			found int
		}{
			{"", 1},
			{"reader@EXAMPLE.com", 1},
			{"  nobody@example.com", 0},
			{"other-reader@example.com", 0},
		}
		for _, tt := range tests {
			rows, err := s.svc.AdminOrders(ctx, queries.OrderListAdminParams{UserEmail: tt.email, MaxRows: 10})
			require.NoError(t, err, tt.email)
			require.Len(t, rows, tt.found, tt.email)
			if tt.found > 0 {
				require.Equal(t, "Reader@example.com", rows[0].UserEmail, tt.email)
				require.Equal(t, "Reader@example.com", rows[0].OrgName, tt.email, "the personal organization, named after its user")
			}
		}
	})

	t.Run("admin order", func(t *testing.T) {
		t.Parallel()
		d, err := s.svc.AdminOrder(ctx, paid.ID)
		require.NoError(t, err)
		require.Equal(t, buyer, d.User.ID)
		require.Equal(t, s.personal(t, buyer).OrgID, d.Org.ID)
		require.Equal(t, s.team.ID, d.Plan.ID)
		require.NotEmpty(t, d.Events, "created, then paid")
		_, err = s.svc.AdminOrder(ctx, paid.ID+1000)
		require.ErrorIs(t, err, billing.ErrOrderNotFound)
		_, err = s.svc.Order(ctx, paid.ID+1000)
		require.ErrorIs(t, err, billing.ErrOrderNotFound)
	})

	t.Run("overview", func(t *testing.T) {
		t.Parallel()
		o, err := s.svc.Overview(ctx, s.now().AddDate(0, -1, 0))
		require.NoError(t, err)
		require.NotEmpty(t, o.Plans)
		require.Zero(t, o.Awaiting, "the order was paid")
		var revenue int64
		for _, r := range o.Revenue {
			revenue += r.Revenue
		}
		require.Equal(t, paid.Total, revenue)
		o, err = s.svc.Overview(ctx, time.Now().AddDate(10, 0, 0))
		require.NoError(t, err)
		require.Empty(t, o.Revenue, "nothing paid after since")
	})
}
