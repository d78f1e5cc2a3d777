package handlerstest

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/kubebyon/kubebyon/internal/audit"
	"github.com/kubebyon/kubebyon/internal/billing"
	"github.com/kubebyon/kubebyon/internal/orgs"
	"github.com/kubebyon/kubebyon/queries"
)

// BillingWorld is what the admin billing tests start from: an admin, the
// billing service on the test's database, manual payments switched on,
// and a paid plan (USD 10.00 a month).
type BillingWorld struct {
	Admin      *Client
	AdminEmail string
	AdminActor audit.Actor
	Billing    *billing.Service
	Plan       queries.Plan
}

// NewBillingWorld signs up an admin called name, saves billing settings
// and creates a plan.
func NewBillingWorld(t *testing.T, b *Bundle, name string) BillingWorld {
	t.Helper()
	ctx := context.Background()
	admin, email := b.SignedUpAdmin(t, name)
	u, err := queries.New(b.Pool).UserGetByEmail(ctx, email)
	require.NoError(t, err)
	w := BillingWorld{
		Admin: admin, AdminEmail: email, AdminActor: audit.Actor{UserID: u.ID, Email: u.Email},
		Billing: &billing.Service{Pool: b.Pool, River: b.River, Box: b.Box},
	}
	st := billing.DefaultSettings()
	st.Methods = []string{billing.MethodManual}
	st.ManualInstructions = "Transfer to IBAN XX00 0000, with the order number."
	require.NoError(t, w.Billing.SaveSettings(ctx, st, w.AdminActor))
	w.Plan, err = w.Billing.CreatePlan(ctx, billing.PlanInput{
		Name: "Pro " + name, MaxClusters: 10, MaxNodesPerCluster: 20, MaxHostnamesPerCluster: 5, IngressAllowed: true,
		Currency: "USD", PriceMonthly: "10", PriceYearly: "100", Public: true, SortOrder: 1,
	}, w.AdminActor)
	require.NoError(t, err)
	return w
}

// Order signs up a user who orders the world's plan for a month for their
// personal organization, paid by hand; it returns the user and the
// pending order.
func (w BillingWorld) Order(t *testing.T, b *Bundle, name string) (*Client, queries.User, queries.Order) {
	t.Helper()
	ctx := context.Background()
	c, email := b.SignedUpUser(t, name)
	u, err := queries.New(b.Pool).UserGetByEmail(ctx, email)
	require.NoError(t, err)
	who, err := orgs.PersonalActing(ctx, b.Pool, u.ID)
	require.NoError(t, err)
	choice, err := w.Billing.Choose(ctx, who, w.Plan.ID, billing.Monthly, billing.MethodManual, audit.Actor{UserID: u.ID, Email: u.Email})
	require.NoError(t, err)
	require.Equal(t, billing.OrderPending, choice.Order.Status)
	return c, u, choice.Order
}

// ShopOpen switches manual payments on and adds a public paid plan
// "Team" (USD 10.00 a month, 100.00 a year, 6 clusters); its id.
func (b *Bundle) ShopOpen(t *testing.T) (*billing.Service, audit.Actor, int64) {
	t.Helper()
	ctx := context.Background()
	svc := &billing.Service{Pool: b.Pool, Box: b.Box, River: b.River}
	_, adminEmail := b.SignedUpAdmin(t, "shopkeeper")
	admin := audit.Actor{UserID: b.UserID(t, adminEmail)}
	st := billing.DefaultSettings()
	st.Methods = []string{billing.MethodManual}
	st.ManualInstructions = "Transfer to IBAN XX00 1234.\nBank: Example Bank"
	st.SellerName, st.SellerAddress = "KubeBYON Ltd", "1 Example Road"
	require.NoError(t, svc.SaveSettings(ctx, st, admin))
	p, err := svc.CreatePlan(ctx, billing.PlanInput{
		Name: "Team", MaxClusters: 6, MaxNodesPerCluster: 20, MaxHostnamesPerCluster: 10, IngressAllowed: true, Public: true,
		Currency: "USD", PriceMonthly: "10", PriceYearly: "100",
	}, admin)
	require.NoError(t, err)
	return svc, admin, p.ID
}
