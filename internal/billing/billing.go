// Package billing is the billing domain (issue 14): plans, subscriptions,
// orders and payments. This first part holds what the rest stands on:
// money as integer minor units of an ISO 4217 currency (never floats),
// subscription periods that keep their anchor day through short months,
// leap years and time zones, and the pro rata credit of an upgrade.
package billing
