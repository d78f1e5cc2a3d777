package billing_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/kubebyon/kubebyon/internal/billing"
)

func mustLoad(t *testing.T, name string) *time.Location {
	t.Helper()
	loc, err := time.LoadLocation(name)
	require.NoError(t, err)
	return loc
}

// TestBoundary: periods keep the anchor's day, clamped to short months,
// through leap years, at the anchor's local time across daylight saving
// changes.
func TestBoundary(t *testing.T) {
	t.Parallel()
	ny := mustLoad(t, "America/New_York")
	sh := mustLoad(t, "Asia/Shanghai")
	day := func(y int, m time.Month, d, h int, loc *time.Location) time.Time {
		return time.Date(y, m, d, h, 0, 0, 0, loc)
	}
	for _, tc := range []struct {
		name   string
		period billing.Period
		anchor time.Time
		n      int
		want   time.Time
	}{
		{"plain month", billing.Monthly, day(2026, 3, 15, 10, time.UTC), 1, day(2026, 4, 15, 10, time.UTC)},
		{"31st into February", billing.Monthly, day(2026, 1, 31, 0, time.UTC), 1, day(2026, 2, 28, 0, time.UTC)},
		{"31st into a leap February", billing.Monthly, day(2028, 1, 31, 0, time.UTC), 1, day(2028, 2, 29, 0, time.UTC)},
		{"31st back to a long month", billing.Monthly, day(2026, 1, 31, 0, time.UTC), 2, day(2026, 3, 31, 0, time.UTC)},
		{"31st into April", billing.Monthly, day(2026, 1, 31, 0, time.UTC), 3, day(2026, 4, 30, 0, time.UTC)},
		{"30th into February", billing.Monthly, day(2026, 1, 30, 0, time.UTC), 1, day(2026, 2, 28, 0, time.UTC)},
		{"over a year end", billing.Monthly, day(2026, 12, 31, 0, time.UTC), 1, day(2027, 1, 31, 0, time.UTC)},
		{"twelve months", billing.Monthly, day(2026, 5, 31, 0, time.UTC), 12, day(2027, 5, 31, 0, time.UTC)},
		{"none", billing.Monthly, day(2026, 5, 31, 7, time.UTC), 0, day(2026, 5, 31, 7, time.UTC)},
		{"leap day, next year", billing.Yearly, day(2028, 2, 29, 0, time.UTC), 1, day(2029, 2, 28, 0, time.UTC)},
		{"leap day, four years on", billing.Yearly, day(2028, 2, 29, 0, time.UTC), 4, day(2032, 2, 29, 0, time.UTC)},
		{"yearly", billing.Yearly, day(2026, 12, 2, 9, time.UTC), 1, day(2027, 12, 2, 9, time.UTC)},
		{"same local time over DST start", billing.Monthly, day(2026, 2, 20, 9, ny), 1, day(2026, 3, 20, 9, ny)},
		{"same local time over DST end", billing.Monthly, day(2026, 10, 20, 9, ny), 1, day(2026, 11, 20, 9, ny)},
		{"Shanghai month end", billing.Monthly, day(2026, 1, 31, 23, sh), 1, day(2026, 2, 28, 23, sh)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			got := tc.period.Boundary(tc.anchor, tc.n)
			require.True(t, tc.want.Equal(got), "want %s, got %s", tc.want, got)
			require.Equal(t, tc.anchor.Location(), got.Location())
		})
	}
	// Across DST the period is an hour shorter or longer, not shifted.
	start := day(2026, 2, 20, 9, ny)
	require.Equal(t, 28*24*time.Hour-time.Hour, billing.Monthly.Boundary(start, 1).Sub(start))
}

// TestCurrent finds the period around an instant, including instants on
// a boundary, before the anchor, and years on.
func TestCurrent(t *testing.T) {
	t.Parallel()
	anchor := time.Date(2026, 1, 31, 12, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		name       string
		period     billing.Period
		at         time.Time
		start, end time.Time
	}{
		{"before the anchor", billing.Monthly, anchor.Add(-time.Hour), anchor, time.Date(2026, 2, 28, 12, 0, 0, 0, time.UTC)},
		{"at the anchor", billing.Monthly, anchor, anchor, time.Date(2026, 2, 28, 12, 0, 0, 0, time.UTC)},
		{"on a boundary", billing.Monthly, time.Date(2026, 2, 28, 12, 0, 0, 0, time.UTC), time.Date(2026, 2, 28, 12, 0, 0, 0, time.UTC), time.Date(2026, 3, 31, 12, 0, 0, 0, time.UTC)},
		{"just before a boundary", billing.Monthly, time.Date(2026, 3, 31, 11, 59, 59, 0, time.UTC), time.Date(2026, 2, 28, 12, 0, 0, 0, time.UTC), time.Date(2026, 3, 31, 12, 0, 0, 0, time.UTC)},
		{"early in a month, before the day", billing.Monthly, time.Date(2026, 5, 3, 0, 0, 0, 0, time.UTC), time.Date(2026, 4, 30, 12, 0, 0, 0, time.UTC), time.Date(2026, 5, 31, 12, 0, 0, 0, time.UTC)},
		{"years on", billing.Monthly, time.Date(2030, 2, 28, 13, 0, 0, 0, time.UTC), time.Date(2030, 2, 28, 12, 0, 0, 0, time.UTC), time.Date(2030, 3, 31, 12, 0, 0, 0, time.UTC)},
		{"yearly", billing.Yearly, time.Date(2028, 1, 30, 0, 0, 0, 0, time.UTC), time.Date(2027, 1, 31, 12, 0, 0, 0, time.UTC), time.Date(2028, 1, 31, 12, 0, 0, 0, time.UTC)},
		{"another zone", billing.Monthly, time.Date(2026, 3, 1, 1, 0, 0, 0, mustLoad(t, "Asia/Shanghai")), time.Date(2026, 2, 28, 12, 0, 0, 0, time.UTC), time.Date(2026, 3, 31, 12, 0, 0, 0, time.UTC)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			start, end := tc.period.Current(anchor, tc.at)
			require.True(t, tc.start.Equal(start), "start: want %s, got %s", tc.start, start)
			require.True(t, tc.end.Equal(end), "end: want %s, got %s", tc.end, end)
		})
	}
}

// TestUnused: the credit for the rest of a paid period, to the second,
// rounded down, exact for large amounts.
func TestUnused(t *testing.T) {
	t.Parallel()
	start := time.Date(2026, 2, 1, 0, 0, 0, 0, time.UTC)
	end := time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC) // 28 days
	for _, tc := range []struct {
		name   string
		amount int64
		now    time.Time
		want   int64
	}{
		{"before it starts", 2800, start.Add(-time.Hour), 2800},
		{"at its start", 2800, start, 2800},
		{"half way", 2800, start.Add(14 * 24 * time.Hour), 1400},
		{"a quarter left", 2800, start.Add(21 * 24 * time.Hour), 700},
		{"rounded down", 1000, start.Add(24 * time.Hour), 964}, // 1000*27/28 = 964.28
		{"a second left", 2800, end.Add(-time.Second), 0},
		{"at its end", 2800, end, 0},
		{"after it", 2800, end.Add(time.Hour), 0},
		{"free", 0, start.Add(time.Hour), 0},
		{"large, exact", 9_000_000_000_000_000, start.Add(14 * 24 * time.Hour), 4_500_000_000_000_000},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			require.Equal(t, tc.want, billing.Unused(tc.amount, start, end, tc.now))
		})
	}
	require.Zero(t, billing.Unused(100, end, start, start), "an empty period")
}

// TestMoney: amounts are typed and shown exactly in the currency's minor
// units.
func TestMoney(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		in, currency string
		want         int64
		err          error
		shown        string
	}{
		{"12", "USD", 1200, nil, "USD 12.00"},
		{"12.5", "usd", 1250, nil, "USD 12.50"},
		{"0.07", "CNY", 7, nil, "CNY 0.07"},
		{" 99.90 ", "CNY", 9990, nil, "CNY 99.90"},
		{"1500", "JPY", 1500, nil, "JPY 1500"},
		{"1500.5", "JPY", 0, billing.ErrAmount, ""},
		{"12.345", "USD", 0, billing.ErrAmount, ""},
		{"-1", "USD", 0, billing.ErrAmount, ""},
		{"1e3", "USD", 0, billing.ErrAmount, ""},
		{"12.", "USD", 0, billing.ErrAmount, ""},
		{".5", "USD", 0, billing.ErrAmount, ""},
		{"", "USD", 0, billing.ErrAmount, ""},
		{"99999999999999", "USD", 0, billing.ErrAmount, ""},
		{"12", "XYZ", 0, billing.ErrCurrency, ""},
		{"12", "XAU", 0, billing.ErrCurrency, ""},
	} {
		t.Run(tc.in+" "+tc.currency, func(t *testing.T) {
			t.Parallel()
			m, err := billing.ParseMoney(tc.in, tc.currency)
			if tc.err != nil {
				require.ErrorIs(t, err, tc.err)
				return
			}
			require.NoError(t, err)
			require.Equal(t, tc.want, m.Minor)
			require.Equal(t, tc.shown, m.String())
		})
	}
	require.Equal(t, "-0.05", billing.Money{Minor: -5, Currency: "USD"}.Decimal())
	d, err := billing.Digits("JPY")
	require.NoError(t, err)
	require.Zero(t, d)
	p, err := billing.ParsePeriod("year")
	require.NoError(t, err)
	require.Equal(t, billing.Yearly, p)
	_, err = billing.ParsePeriod("week")
	require.ErrorIs(t, err, billing.ErrPeriod)
}
