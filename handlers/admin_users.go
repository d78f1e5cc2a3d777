package handlers

import (
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"

	"github.com/labstack/echo/v4"

	"github.com/kubebyon/kubebyon/internal/adminusers"
	"github.com/kubebyon/kubebyon/queries"
	"github.com/kubebyon/kubebyon/views"
)

func (h *Handlers) showAdminUsersPage(c echo.Context) error {
	search, after := strings.TrimSpace(c.QueryParam("q")), queryID(c, "after")
	key, desc, pg := listSort(c, adminusers.SortKeys)
	m := views.AdminUserList{Query: search, Sort: views.Sort{Path: "/admin/users", Key: key, Desc: desc}}
	if search != "" {
		m.Sort.Query = url.Values{"q": {search}}
	}
	var rows []queries.AdminUserListRow
	if key == "" {
		page, err := h.AdminUsers.List(c.Request().Context(), search, after, adminusers.PageSize)
		if err != nil {
			return err
		}
		rows = page.Users
		if page.NextAfter != 0 {
			m.NextURL = adminUsersURL(search, page.NextAfter)
		}
		if after != 0 {
			m.FirstURL = adminUsersURL(search, 0)
		}
	} else {
		var more bool
		var err error
		if rows, more, err = h.AdminUsers.ListSorted(c.Request().Context(), search, key, desc, pg, adminusers.PageSize); err != nil {
			return err
		}
		if more {
			m.NextURL = m.Sort.URL(key, desc, pg+1)
		}
		if pg > 1 {
			m.FirstURL = m.Sort.URL(key, desc, 1)
		}
	}
	m.Users = make([]views.AdminUser, 0, len(rows))
	for _, u := range rows {
		m.Users = append(m.Users, adminUserListView(u))
	}
	h.viewAsAPICall(c, "adminListUsers", nil)
	return renderPageOrFragment(c, views.AdminUsersPage(m), views.AdminUsersResults(m))
}

// adminUsersURL is a page of the user list.
func adminUsersURL(search string, after int64) string {
	v := url.Values{}
	if search != "" {
		v.Set("q", search)
	}
	if after != 0 {
		v.Set("after", strconv.FormatInt(after, 10))
	}
	if len(v) == 0 {
		return "/admin/users"
	}
	return "/admin/users?" + v.Encode()
}

func (h *Handlers) showAdminUserPage(c echo.Context) error {
	id, err := strconv.ParseInt(c.Param("id"), 10, 64)
	if err != nil {
		return echo.ErrNotFound
	}
	h.viewAsAPICall(c, "adminGetUser", nil, c.Param("id"))
	return h.renderAdminUser(c, http.StatusOK, id, views.NewForm(), "")
}

// renderAdminUser shows the account with id; f is the form of action,
// when one was submitted and failed.
func (h *Handlers) renderAdminUser(c echo.Context, status int, id int64, f views.Form, action adminusers.Action) error {
	return h.renderAdminUserPage(c, status, id, f, action, views.NewForm(), "")
}

// renderAdminUserPage shows the account with id: f is the form of an
// account action, subForm that of a subscription action (subAction,
// admin_billing.go), when one was submitted and failed.
func (h *Handlers) renderAdminUserPage(c echo.Context, status int, id int64, f views.Form, action adminusers.Action, subForm views.Form, subAction string) error {
	d, err := h.AdminUsers.Get(c.Request().Context(), id)
	if errors.Is(err, adminusers.ErrNotFound) {
		return echo.ErrNotFound
	}
	if err != nil {
		return err
	}
	me, _ := currentUser(c)
	m := views.AdminUserDetail{
		User:        adminUserView(d.User),
		ActivityURL: adminActivityURL(d.User.Email, "", 0),
		Self:        me.ID == d.User.ID,
		Form:        f,
		Action:      string(action),
		More:        adminUserMore(d),
	}
	if m.Confirm, err = h.adminConfirm(c, me, fmt.Sprintf("/admin/users/%d", id)); err != nil {
		return err
	}
	if m.More.Orgs, err = h.AdminOrgs.ForUser(c.Request().Context(), id); err != nil {
		return err
	}
	tf, err := h.Accounts.TwoFactorStatus(c.Request().Context(), id)
	if err != nil {
		return err
	}
	m.More.TwoFactor = tf.Enabled
	for _, s := range d.Sessions {
		m.Sessions = append(m.Sessions, views.AdminSession{
			Created: timeOf(s.CreatedAt), LastSeen: timeOf(s.LastSeenAt), IP: s.Ip, UserAgent: s.UserAgent,
		})
	}
	for _, e := range d.Events {
		m.Events = append(m.Events, adminEventView(e))
	}
	sub, err := h.adminSubscriptionView(c.Request().Context(), d.User, subForm, subAction)
	if err != nil {
		return err
	}
	return render(c, status, views.AdminUserPage(m, sub))
}

// changeAdminUser makes one change to an account, confirmed with the
// admin's password.
func (h *Handlers) changeAdminUser(a adminusers.Action) echo.HandlerFunc {
	return func(c echo.Context) error {
		id, err := strconv.ParseInt(c.Param("id"), 10, 64)
		if err != nil {
			return echo.ErrNotFound
		}
		err = h.AdminUsers.Apply(c.Request().Context(), a, id, c.FormValue("password"), actor(c))
		f := views.NewForm()
		switch {
		case err == nil:
			h.flash(c, adminFlash(a))
			return redirect(c, fmt.Sprintf("/admin/users/%d", id))
		case errors.Is(err, adminusers.ErrNotFound):
			return echo.ErrNotFound
		case errors.Is(err, adminusers.ErrSelfDisable), errors.Is(err, adminusers.ErrSelfDemote), errors.Is(err, adminusers.ErrNoChange):
			f.Error = err.Error()
			return h.renderAdminUser(c, http.StatusUnprocessableEntity, id, f, a)
		}
		return adminSaveError(c, err, &f, "", nil, func(status int) error {
			return h.renderAdminUser(c, status, id, f, a)
		})
	}
}

// adminFlash is the message shown after an action succeeded.
func adminFlash(a adminusers.Action) string {
	switch a {
	case adminusers.Disable:
		return "FlashAdminUserDisabled"
	case adminusers.Enable:
		return "FlashAdminUserEnabled"
	case adminusers.Promote:
		return "FlashAdminUserPromoted"
	case adminusers.RevokeSessions:
		return "FlashAdminUserSessionsRevoked"
	}
	return "FlashAdminUserDemoted"
}

// adminUserListView is a user as the list shows it (no language).
func adminUserListView(u queries.AdminUserListRow) views.AdminUser {
	return views.AdminUser{
		ID: u.ID, Email: u.Email, Name: u.Name, Role: u.Role,
		Status:     string(adminusers.StatusFrom(u.EmailVerifiedAt.Valid, u.DisabledAt.Valid)),
		Created:    timeOf(u.CreatedAt),
		Verified:   timeOf(u.EmailVerifiedAt),
		Disabled:   timeOf(u.DisabledAt),
		LastSignIn: timeOf(u.LastSignInAt),
	}
}

func adminUserView(u queries.User) views.AdminUser {
	return views.AdminUser{
		ID: u.ID, Email: u.Email, Name: u.Name, Role: u.Role, Language: u.Language,
		Status:     string(adminusers.StatusOf(u)),
		Created:    timeOf(u.CreatedAt),
		Verified:   timeOf(u.EmailVerifiedAt),
		Disabled:   timeOf(u.DisabledAt),
		LastSignIn: timeOf(u.LastSignInAt),
	}
}
