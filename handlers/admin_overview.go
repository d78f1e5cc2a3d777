package handlers

import (
	"net/http"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/kubebyon/kubebyon/internal/adminsettings"
	"github.com/kubebyon/kubebyon/views"
)

// showAdminOverviewPage is GET /admin: the platform at a glance, and the
// operator's first-run checklist from the state the platform records.
func (h *Handlers) showAdminOverviewPage(c echo.Context) error {
	ctx := c.Request().Context()
	f, err := h.AdminOverview.Read(ctx)
	if err != nil {
		return err
	}
	rt, _, err := h.AdminSettings.Load(ctx)
	if err != nil {
		return err
	}
	host, err := h.AdminSettings.Host(ctx, rt)
	if err != nil {
		return err
	}
	st, _, err := h.EdgeState.Current(ctx)
	if err != nil {
		return err
	}
	edges, err := h.Edge.Instances(ctx)
	if err != nil {
		return err
	}
	m := views.AdminOverview{
		Users: f.Users, UsersDisabled: f.UsersDisabled,
		Clusters: f.Clusters, Ready: f.ClustersReady, InProgress: f.ClustersInProgress, Failed: f.ClustersFailed, Suspended: f.ClustersSuspended,
		Nodes: f.Nodes, NodesReady: f.NodesReady,
		JobsRetrying: f.JobsRetrying, JobsDiscarded: f.JobsDiscarded, JobsQueued: f.JobsQueued,
		Edges: len(edges),
	}
	now := time.Now()
	for _, e := range edges {
		if e.AppliedVersion == st.Version && now.Sub(e.LastSeenAt.Time) <= views.EdgeStaleAfter {
			m.EdgesInStep++
		}
	}
	hostDown := !f.HostDownSince.IsZero()
	if hostDown {
		m.Notices = append(m.Notices, views.AdminNotice{Message: "AdminNoticeHostDown", Data: map[string]any{"Since": f.HostDownSince.UTC().Format("2006-01-02 15:04 UTC")}, Href: "/admin/settings"})
	}
	if m.EdgesInStep < m.Edges {
		m.Notices = append(m.Notices, views.AdminNotice{Message: "AdminNoticeEdgesBehind", Data: map[string]any{"Count": m.Edges - m.EdgesInStep}, Href: "/admin/edge"})
	}
	if f.JobsDiscarded > 0 {
		m.Notices = append(m.Notices, views.AdminNotice{Message: "AdminNoticeJobsFailed", Data: map[string]any{"Count": f.JobsDiscarded}, Href: "/admin/jobs?state=discarded"})
	}
	m.Checklist = []views.ChecklistItem{
		{Label: "AdminStepHost", Done: host.Source != adminsettings.SourceNone && !hostDown, Href: "/admin/settings", TestID: "checklist-host"},
		{Label: "AdminStepBaseURL", Done: h.loopbackBaseURL() == "", Href: "/admin/settings", TestID: "checklist-base-url"},
		{Label: "AdminStepEdge", Done: m.Edges > 0 && m.EdgesInStep == m.Edges, Href: "/admin/edge", TestID: "checklist-edge"},
		{Label: "AdminStepDNS", Done: f.DnsChecked, Href: "/admin/edge#dns", TestID: "checklist-dns"},
		{Label: "AdminStepMail", Done: f.MailTested, Href: "/admin/mail", TestID: "checklist-mail"},
		{Label: "AdminStepPlatform", Done: rt.PlatformHost != "" && rt.PlatformAccessKey != "", Href: "/admin/settings", TestID: "checklist-platform"},
	}
	return render(c, http.StatusOK, views.AdminOverviewPage(m))
}
