package billing

import (
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"golang.org/x/text/currency"
)

// Money is an amount in the minor units of an ISO 4217 currency (cents
// for USD, fen for CNY, yen for JPY, which has none).
type Money struct {
	Minor    int64
	Currency string
}

// Supported are the currencies plans may be priced in.
var Supported = []string{"CNY", "USD", "EUR", "GBP", "JPY", "HKD", "SGD"}

// ErrCurrency: not an ISO 4217 code the platform prices in (catalog
// message ID).
var ErrCurrency = errors.New("ErrBillingCurrency")

// ErrAmount: an amount that is not a number of the currency's minor
// units, or is negative (catalog message ID).
var ErrAmount = errors.New("ErrBillingAmount")

// unit is code's currency, if the platform prices in it.
func unit(code string) (currency.Unit, error) {
	code = strings.ToUpper(strings.TrimSpace(code))
	u, err := currency.ParseISO(code)
	if err != nil || !slices.Contains(Supported, u.String()) {
		return currency.Unit{}, ErrCurrency
	}
	return u, nil
}

// Digits is how many decimal places the currency's amounts have (2 for
// USD and CNY, 0 for JPY), from CLDR by way of golang.org/x/text.
func Digits(code string) (int, error) {
	u, err := unit(code)
	if err != nil {
		return 0, err
	}
	scale, _ := currency.Standard.Rounding(u)
	return scale, nil
}

// ParseMoney reads an amount typed as a decimal ("12", "12.5", "12.50")
// in code's currency, exactly: more decimal places than the currency has
// is an error, not a rounding.
func ParseMoney(s, code string) (Money, error) {
	digits, err := Digits(code)
	if err != nil {
		return Money{}, err
	}
	s = strings.TrimSpace(s)
	whole, frac, hasPoint := strings.Cut(s, ".")
	if whole == "" || (hasPoint && (frac == "" || len(frac) > digits)) || !allDigits(whole) || !allDigits(frac) {
		return Money{}, ErrAmount
	}
	frac += strings.Repeat("0", digits-len(frac))
	minor, err := strconv.ParseInt(whole+frac, 10, 64)
	if err != nil || len(whole) > 12 {
		return Money{}, ErrAmount
	}
	return Money{Minor: minor, Currency: strings.ToUpper(code)}, nil
}

func allDigits(s string) bool {
	for _, r := range s {
		if r < '0' || r > '9' {
			return false
		}
	}
	return true
}

// Decimal is the amount as a decimal in major units, exactly ("12.50").
func (m Money) Decimal() string {
	digits, err := Digits(m.Currency)
	if err != nil {
		digits = 2
	}
	sign, v := "", m.Minor
	if v < 0 {
		sign, v = "-", -v
	}
	s := strconv.FormatInt(v, 10)
	if digits == 0 {
		return sign + s
	}
	if len(s) <= digits {
		s = strings.Repeat("0", digits-len(s)+1) + s
	}
	return sign + s[:len(s)-digits] + "." + s[len(s)-digits:]
}

// String is the amount with its currency code: "USD 12.50".
func (m Money) String() string {
	return fmt.Sprintf("%s %s", m.Currency, m.Decimal())
}
