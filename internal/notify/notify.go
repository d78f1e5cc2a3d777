// Package notify knows the kinds of notification, the channels they go
// through, and each user's choice for every pair.
package notify

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgtype"

	"github.com/kubebyon/kubebyon/internal/locale"
	"github.com/kubebyon/kubebyon/queries"
)

// Kind is an event a user can be told about.
type Kind string

// The kinds, in the order the preferences page shows them.
const (
	ClusterReady  Kind = "cluster_ready"
	ClusterFailed Kind = "cluster_failed"
	// ClusterAdmin: an administrator retried, deleted, suspended or
	// resumed the user's cluster.
	ClusterAdmin Kind = "cluster_admin"
	NodeNotReady Kind = "node_not_ready"
	// ControlPlane: a control plane answers with errors, or slowly, for
	// ten minutes; or is back under the threshold.
	ControlPlane   Kind = "control_plane"
	JoinTokenUsed  Kind = "join_token_used"
	SecuritySignIn Kind = "security_sign_in"
	Billing        Kind = "billing"
	// EdgeOutOfStep is for admins alone: an edge of the public entry
	// stays out of step with the platform, or is back in step.
	EdgeOutOfStep Kind = "edge_out_of_step"
	// PlatformHealth is for admins alone: background jobs that failed for
	// good, or the host cluster unreachable (and back).
	PlatformHealth Kind = "platform_health"
	// Managed ingress: the controller ready or failed; a host name
	// verified or broken; a certificate failing or close to its expiry.
	Ingress     Kind = "ingress"
	Hostname    Kind = "hostname"
	Certificate Kind = "certificate"
)

// Kinds lists every kind.
var Kinds = []Kind{ClusterReady, ClusterFailed, ClusterAdmin, NodeNotReady, ControlPlane, JoinTokenUsed, Ingress, Hostname, Certificate, SecuritySignIn, Billing, EdgeOutOfStep, PlatformHealth}

// AdminOnly reports whether only admins are told of kind k.
func AdminOnly(k Kind) bool { return k == EdgeOutOfStep || k == PlatformHealth }

// KindsFor lists the kinds a user of role hears of: every kind for an
// admin, the others' for everyone else.
func KindsFor(admin bool) []Kind {
	var out []Kind
	for _, k := range Kinds {
		if admin || !AdminOnly(k) {
			out = append(out, k)
		}
	}
	return out
}

// Audience is who, of the members of a cluster's organization, hears of
// an event of kind k about the cluster (Notices.TellCluster), each then as
// their own preferences say; nil for the kinds that are not about a
// cluster. The roles are organization_members.role (package orgs):
//
//	kind                                    owner admin member viewer
//	cluster_failed, control_plane,            ✓     ✓
//	ingress, hostname, certificate
//	cluster_ready, cluster_admin,             ✓     ✓     ✓
//	node_not_ready, join_token_used
//
// The first row says something broke (or, for the same kind, that it is
// fixed or ready again: those told of the trouble hear of its end): the
// owners and admins, who answer for the clusters, are told. The second row
// is news of the cluster and its nodes: every member who works on the
// clusters hears of it as they opted in (or as Default says, when they
// did not choose). Viewers only read: they see the clusters' state on the
// pages and are told nothing. In a personal organization its owner hears
// of everything, as when clusters were people's.
func Audience(k Kind) []string {
	switch k {
	case ClusterFailed, ControlPlane, Ingress, Hostname, Certificate:
		return []string{"owner", "admin"}
	case ClusterReady, ClusterAdmin, NodeNotReady, JoinTokenUsed:
		return []string{"owner", "admin", "member"}
	}
	return nil
}

// Channel is a way to reach the user.
type Channel string

// The channels.
const (
	Email Channel = "email"
	InApp Channel = "in_app"
	// Webhook is the webhook channels the user added (package webhooks):
	// in an organization, for its clusters' events; in their personal
	// organization, for their own events too.
	Webhook Channel = "webhook"
)

// Channels lists every channel.
var Channels = []Channel{Email, InApp, Webhook}

// ValidKind reports whether k is a known kind.
func ValidKind(k string) bool {
	for _, x := range Kinds {
		if string(x) == k {
			return true
		}
	}
	return false
}

// ValidChannel reports whether c is a known channel.
func ValidChannel(c string) bool {
	return c == string(Email) || c == string(InApp) || c == string(Webhook)
}

// Default is what a user gets before choosing: everything in-app; by email
// only the kinds that tell of failures (failed clusters and ingress,
// broken host names and certificates, unhealthy nodes and control planes,
// with their recoveries), security and billing; the same to webhooks, once
// the user adds one.
func Default(k Kind, c Channel) bool {
	if c == InApp {
		return true
	}
	switch k {
	case ClusterFailed, ClusterAdmin, NodeNotReady, ControlPlane, Ingress, Hostname, Certificate, SecuritySignIn, Billing, EdgeOutOfStep, PlatformHealth:
		return true
	}
	return false
}

// Enabled reports whether the user wants kind k through channel c.
func Enabled(ctx context.Context, q *queries.Queries, userID int64, k Kind, c Channel) (bool, error) {
	on, err := q.NotificationPreferenceGet(ctx, queries.NotificationPreferenceGetParams{UserID: userID, Kind: string(k), Channel: string(c)})
	if errors.Is(err, pgx.ErrNoRows) {
		return Default(k, c), nil
	}
	if err != nil {
		return false, fmt.Errorf("notification preference %s/%s: %w", k, c, err)
	}
	return on, nil
}

// chosen is a choice read with a query (NULL: none made, Default).
func chosen(on pgtype.Bool, k Kind, c Channel) bool {
	if !on.Valid {
		return Default(k, c)
	}
	return on.Bool
}

// Matrix returns the user's choice for every kind and channel.
func Matrix(ctx context.Context, q *queries.Queries, userID int64) (map[Kind]map[Channel]bool, error) {
	rows, err := q.NotificationPreferenceList(ctx, userID)
	if err != nil {
		return nil, fmt.Errorf("notification preferences: %w", err)
	}
	m := make(map[Kind]map[Channel]bool, len(Kinds))
	for _, k := range Kinds {
		m[k] = map[Channel]bool{}
		for _, c := range Channels {
			m[k][c] = Default(k, c)
		}
	}
	for _, r := range rows {
		if _, ok := m[Kind(r.Kind)]; ok {
			m[Kind(r.Kind)][Channel(r.Channel)] = r.Enabled
		}
	}
	return m, nil
}

// Create stores an in-app notification as a message of the catalog and its
// parameters, so that each reader reads it in their language of the
// moment: its title is Mail<message>Subject, its body Notify<message>Body.
func Create(ctx context.Context, q *queries.Queries, userID int64, k Kind, message string, params map[string]any) (queries.Notification, error) {
	raw, err := json.Marshal(params)
	if err != nil {
		return queries.Notification{}, fmt.Errorf("encode notification %s: %w", message, err)
	}
	n, err := q.NotificationCreate(ctx, queries.NotificationCreateParams{UserID: userID, Kind: string(k), Message: message, Params: raw})
	if err != nil {
		return queries.Notification{}, fmt.Errorf("notify user %d of %s: %w", userID, message, err)
	}
	return n, nil
}

// Word returns a notification's title and body in l's language. A
// notification stored before messages were (no message) keeps the words it
// was written with.
func Word(l *locale.Localizer, n queries.Notification) (title, body string) {
	if n.Message == "" {
		return n.Title, n.Body
	}
	// Numbers stay as written: a float64 count of a million would print 1e+06.
	params := map[string]any{}
	dec := json.NewDecoder(bytes.NewReader(n.Params))
	dec.UseNumber()
	if err := dec.Decode(&params); err != nil {
		// Only ever written by Create: the words show without their values.
		params = map[string]any{}
	}
	Plain(l, params)
	return Title(l, n.Message, params), l.T("Notify"+n.Message+"Body", params)
}

// ReasonMessage is the key of a notice's data that names the catalog
// message explaining its Reason (a recorded Go error, with the host's
// internal addresses) in plain words.
const ReasonMessage = "ReasonMessage"

// Plain puts in data's Reason, when data names its ReasonMessage, that
// message in l's language: notices say why in words the reader can act on
// (the raw error stays on the cluster's page, folded away). Notices stored
// before keep their Reason.
func Plain(l *locale.Localizer, data map[string]any) {
	if id, ok := data[ReasonMessage].(string); ok && id != "" {
		data["Reason"] = l.T(id)
	}
}

// Title is the title of a notice of template (its email's subject, its
// in-app and webhook title) in l's language: about a team's cluster or
// plan it starts with the team's name (NameOrg), "[Acme] Cluster web
// failed", as a member of several teams may have a cluster of the same
// name in each.
func Title(l *locale.Localizer, template string, data map[string]any) string {
	title := l.T("Mail"+template+"Subject", data)
	if org, _ := data["Org"].(string); org != "" {
		title = "[" + org + "] " + title
	}
	return title
}
