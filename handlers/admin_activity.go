package handlers

import (
	"bytes"
	"encoding/json"
	"net/url"
	"strconv"
	"strings"

	"github.com/labstack/echo/v4"

	"github.com/kubebyon/kubebyon/internal/adminusers"
	"github.com/kubebyon/kubebyon/queries"
	"github.com/kubebyon/kubebyon/views"
)

// activityPageSize is how many audit events a page of the stream shows.
const activityPageSize = 50

// showAdminActivityPage is the audit stream, newest first: the page, or for
// htmx's "Load more" the next rows only.
func (h *Handlers) showAdminActivityPage(c echo.Context) error {
	m := views.AdminActivity{
		Actor:  strings.TrimSpace(c.QueryParam("actor")),
		Action: strings.TrimSpace(c.QueryParam("action")),
	}
	page, err := h.AdminUsers.Activity(c.Request().Context(),
		adminusers.ActivityFilter{Actor: m.Actor, Action: m.Action}, queryID(c, "before"), activityPageSize)
	if err != nil {
		return err
	}
	if page.Older != 0 {
		m.MoreURL = adminActivityURL(m.Actor, m.Action, page.Older)
	}
	for _, e := range page.Events {
		m.Events = append(m.Events, adminEventView(e))
	}
	h.viewAsAPICall(c, "adminListActivity", nil)
	return renderPageOrFragment(c, views.AdminActivityPage(m), views.AdminActivityRows(m))
}

// adminActivityURL is a page of the audit stream.
func adminActivityURL(actor, action string, before int64) string {
	v := url.Values{}
	if actor != "" {
		v.Set("actor", actor)
	}
	if action != "" {
		v.Set("action", action)
	}
	if before != 0 {
		v.Set("before", strconv.FormatInt(before, 10))
	}
	if len(v) == 0 {
		return "/admin/activity"
	}
	return "/admin/activity?" + v.Encode()
}

func adminEventView(e queries.AuditEvent) views.AdminEvent {
	details := string(e.Details)
	if details == "{}" {
		details = ""
	}
	// One key a line reads better than one long line in a table cell.
	var indented bytes.Buffer
	if details != "" && json.Indent(&indented, e.Details, "", "  ") == nil {
		details = indented.String()
	}
	return views.AdminEvent{
		ID: e.ID, Time: timeOf(e.CreatedAt), ActorID: e.ActorID.Int64, ActorEmail: e.ActorEmail,
		Action: e.Action, TargetType: e.TargetType, TargetID: e.TargetID, IP: e.Ip, Details: details,
	}
}
