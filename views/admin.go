package views

import (
	"context"
	"fmt"
	"time"

	"github.com/a-h/templ"

	"github.com/kubebyon/kubebyon/internal/adminauth"
	"github.com/kubebyon/kubebyon/internal/adminusers"
	"github.com/kubebyon/kubebyon/internal/locale"
)

// AdminUser is an account as the admin pages show it. Zero times were
// never set.
type AdminUser struct {
	ID         int64
	Email      string
	Name       string
	Role       string // "user" or "admin"
	Status     string // "active", "unverified" or "disabled"
	Language   string
	Created    time.Time
	Verified   time.Time
	Disabled   time.Time
	LastSignIn time.Time
}

// AdminUserList is one page of the user list.
type AdminUserList struct {
	Query string
	Users []AdminUser
	// NextURL is the next page, FirstURL the first one; empty when there
	// is none to go to.
	NextURL  string
	FirstURL string
	// Sort is the order the admin chose, by a column's header.
	Sort Sort
}

// AdminSession is one signed-in browser.
type AdminSession struct {
	Created   time.Time
	LastSeen  time.Time
	IP        string
	UserAgent string
}

// AdminEvent is one audit event.
type AdminEvent struct {
	ID         int64
	Time       time.Time
	ActorID    int64 // 0 for the system
	ActorEmail string
	Action     string
	TargetType string
	TargetID   string
	IP         string
	Details    string // JSON, shown as text
}

// AdminUserDetail is the page of one account.
type AdminUserDetail struct {
	User        AdminUser
	Sessions    []AdminSession
	Events      []AdminEvent
	ActivityURL string
	// Self is set when admins look at their own account, which they may
	// not disable or demote.
	Self bool
	// Form is the action form submitted last, Action names it.
	Form   Form
	Action string
	// Confirm is how the admin confirms the actions.
	Confirm AdminConfirm
	// More is what else the page shows of the account (admin_user_detail.go).
	More AdminUserMore
}

// AdminActivity is one page of the audit stream.
type AdminActivity struct {
	Actor  string
	Action string
	Events []AdminEvent
	// MoreURL loads the next, older page; empty at the end.
	MoreURL string
}

// adminTime shows a time in UTC, or "never" for the zero time.
func adminTime(ctx context.Context, t time.Time) string {
	if t.IsZero() {
		return locale.T(ctx, "AdminNever")
	}
	return t.UTC().Format("2006-01-02 15:04 UTC")
}

// adminISOTime is a time for a <time datetime> attribute.
func adminISOTime(t time.Time) string {
	return t.UTC().Format(time.RFC3339)
}

// adminUserURL is the admin page of the account with id.
func adminUserURL(id int64) templ.SafeURL {
	return templ.SafeURL(fmt.Sprintf("/admin/users/%d", id))
}

// adminStatusMsg is the message ID of an account status.
func adminStatusMsg(status string) string {
	switch status {
	case string(adminusers.StatusDisabled):
		return "AdminStatusDisabled"
	case string(adminusers.StatusUnverified):
		return "AdminStatusUnverified"
	}
	return "AdminStatusActive"
}

// adminRoleMsg is the message ID of a role.
func adminRoleMsg(role string) string {
	if role == adminauth.RoleAdmin {
		return "AdminRoleAdmin"
	}
	return "AdminRoleUser"
}

// adminEventColumns is the number of columns of an audit event table.
func adminEventColumns(withActor bool) string {
	if withActor {
		return "5"
	}
	return "4"
}
