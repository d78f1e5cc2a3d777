package notify

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/jackc/pgx/v5"
	"github.com/riverqueue/river"

	"github.com/kubebyon/kubebyon/internal/secrets"
	"github.com/kubebyon/kubebyon/queries"
)

// EmailArgs is one email to send (worked by jobs.EmailWorker). Its
// template data (which can hold a one-time code) is sealed with the
// platform key, since job arguments sit in the database.
type EmailArgs struct {
	To       string `json:"to"`
	Lang     string `json:"lang"`
	Template string `json:"template"`
	Sealed   string `json:"sealed"`
}

// Kind implements river.JobArgs.
func (EmailArgs) Kind() string { return "email" }

// InsertOpts keeps email jobs in their own queue, so a slow mail server
// never holds up cluster work.
func (EmailArgs) InsertOpts() river.InsertOpts {
	return river.InsertOpts{Queue: QueueEmail, MaxAttempts: 10}
}

// QueueEmail is the queue of email jobs.
const QueueEmail = "email"

// Email templates: each has the messages Mail<Template>Subject and
// Mail<Template>Body in the catalog; those sent as notices (Notices.Tell)
// also have Notify<Template>Body.
const (
	// Accounts.
	EmailSignupCode      = "SignupCode"
	EmailSignupExists    = "SignupExists"
	EmailChangeCode      = "EmailChangeCode"
	EmailPasswordReset   = "PasswordReset"
	EmailNewSignIn       = "NewSignIn"
	EmailPasswordChanged = "PasswordChanged"
	// EmailInvitation carries an admin's invitation link (adminsignup).
	EmailInvitation = "Invitation"
	// EmailOrgInvitation carries an invitation to join an organization
	// (orgs).
	EmailOrgInvitation = "OrgInvitation"
	// The cluster lifecycle.
	EmailClusterReady  = "ClusterReady"
	EmailClusterFailed = "ClusterFailed"
	// An administrator's actions on a user's cluster.
	EmailClusterAdminRetried   = "ClusterAdminRetried"
	EmailClusterAdminDeleted   = "ClusterAdminDeleted"
	EmailClusterAdminSuspended = "ClusterAdminSuspended"
	EmailClusterAdminResumed   = "ClusterAdminResumed"
	// Joins: one node, or several in one sync.
	EmailNodeJoined  = "NodeJoined"
	EmailNodesJoined = "NodesJoined"
	// Node health.
	EmailNodeNotReady  = "NodeNotReady"
	EmailNodeRecovered = "NodeRecovered"
	// Control-plane alerts.
	EmailControlPlaneErrors        = "ControlPlaneErrors"
	EmailControlPlaneErrorsCleared = "ControlPlaneErrorsCleared"
	EmailControlPlaneSlow          = "ControlPlaneSlow"
	EmailControlPlaneSlowCleared   = "ControlPlaneSlowCleared"
	// Managed ingress.
	EmailIngressReady        = "IngressReady"
	EmailIngressFailed       = "IngressFailed"
	EmailHostnameVerified    = "HostnameVerified"
	EmailHostnameBroken      = "HostnameBroken"
	EmailCertificateFailed   = "CertificateFailed"
	EmailCertificateExpiring = "CertificateExpiring"
	// The public entry, to admins.
	EmailEdgeOutOfStep  = "EdgeOutOfStep"
	EmailEdgeBackInStep = "EdgeBackInStep"
	// The platform's own health, to admins (package opswatch).
	EmailJobsFailing     = "JobsFailing"
	EmailHostUnreachable = "HostUnreachable"
	EmailHostReachable   = "HostReachable"
)

// NewEmail seals data into the arguments of an email job.
func NewEmail(box *secrets.Box, to, lang, template string, data map[string]any) (EmailArgs, error) {
	raw, err := json.Marshal(data)
	if err != nil {
		return EmailArgs{}, fmt.Errorf("encode email data: %w", err)
	}
	return EmailArgs{To: to, Lang: lang, Template: template, Sealed: box.Seal(raw)}, nil
}

// Notices tells users about what happens to their clusters, in-app and by
// email, each as the user's preferences say, and the webhooks.
type Notices struct {
	Box *secrets.Box
	// River inserts the emails; nil: the River client of the job whose
	// context Tell is given.
	River *river.Client[pgx.Tx]
}

// Tell writes the in-app notification and queues the email of template
// about an event of kind that is the user's own (billing, security, the
// admins' alerts), in the caller's transaction (the job's River client
// inserts the email). The messages are Mail<template>Subject (also the
// in-app title), Mail<template>Body and Notify<template>Body; each is
// worded when read or sent, in the reader's language. It returns the
// in-app notification's id, or 0 when the user wants none. The webhook
// channels the user added in their personal organization get the event
// too, when the user wants it there. Events of a cluster are TellCluster's.
func (n Notices) Tell(ctx context.Context, tx pgx.Tx, user queries.User, kind Kind, template string, data map[string]any) (int64, error) {
	q := queries.New(tx)
	inApp, err := Enabled(ctx, q, user.ID, kind, InApp)
	if err != nil {
		return 0, err
	}
	byEmail, err := Enabled(ctx, q, user.ID, kind, Email)
	if err != nil {
		return 0, err
	}
	id, err := n.tellUser(ctx, tx, user, inApp, byEmail, kind, template, data)
	if err != nil {
		return 0, err
	}
	chans, err := q.WebhookChannelListPersonal(ctx, user.ID)
	if err != nil {
		return 0, fmt.Errorf("webhook channels of user %d: %w", user.ID, err)
	}
	if len(chans) == 0 {
		return id, nil
	}
	byWebhook, err := Enabled(ctx, q, user.ID, kind, Webhook)
	if err != nil || !byWebhook {
		return id, err
	}
	hooks := make([]hook, len(chans))
	for i, c := range chans {
		hooks[i] = hook{channelID: c.ID, lang: user.Language}
	}
	if err := enqueueWebhooks(ctx, tx, n.river(ctx), n.Box, hooks, kind, template, data); err != nil {
		return 0, fmt.Errorf("queue webhooks of user %d about %s: %w", user.ID, template, err)
	}
	return id, nil
}

// tellUser writes the in-app notification (inApp) and queues the email
// (byEmail) of Tell to user; it returns the notification's id, or 0.
func (n Notices) tellUser(ctx context.Context, tx pgx.Tx, user queries.User, inApp, byEmail bool, kind Kind, template string, data map[string]any) (int64, error) {
	var id int64
	if inApp {
		row, err := Create(ctx, queries.New(tx), user.ID, kind, template, data)
		if err != nil {
			return 0, err
		}
		id = row.ID
	}
	if byEmail {
		args, err := NewEmail(n.Box, user.Email, user.Language, template, data)
		if err != nil {
			return 0, err
		}
		if _, err := n.river(ctx).InsertTx(ctx, tx, args, nil); err != nil {
			return 0, fmt.Errorf("queue email to user %d about %s: %w", user.ID, template, err)
		}
	}
	return id, nil
}

// TellCluster tells the members of cluster c's organization that Audience
// names for kind about an event of c, as Tell does, each as their
// preferences say (one query reads them all), and queues it to the
// organization's webhook channels that want it (the kinds ticked in the
// webhook column of who added each), in tx: data gets the cluster's name
// (Cluster) and id (ClusterID). It returns the id of one in-app
// notification written, or 0 for none: the others told the same event to
// the other members, and are read with it
// (queries.NotificationMarkReadEvent).
func (n Notices) TellCluster(ctx context.Context, tx pgx.Tx, c queries.Cluster, kind Kind, template string, data map[string]any) (int64, error) {
	q := queries.New(tx)
	data["Cluster"], data["ClusterID"] = c.Name, c.ID
	if err := NameOrg(ctx, q, c.OrgID, data); err != nil {
		return 0, err
	}
	members, err := q.NotificationRecipientList(ctx, queries.NotificationRecipientListParams{OrgID: c.OrgID, Roles: Audience(kind), Kind: string(kind)})
	if err != nil {
		return 0, fmt.Errorf("recipients of the notice of cluster %d: %w", c.ID, err)
	}
	var first int64
	for _, m := range members {
		id, err := n.tellUser(ctx, tx, m.User, chosen(m.InApp, kind, InApp), chosen(m.ByEmail, kind, Email), kind, template, data)
		if err != nil {
			return 0, fmt.Errorf("notice of cluster %d: %w", c.ID, err)
		}
		if first == 0 {
			first = id
		}
	}
	chans, err := q.WebhookChannelListForEvent(ctx, queries.WebhookChannelListForEventParams{OrgID: c.OrgID, Kind: string(kind)})
	if err != nil {
		return 0, fmt.Errorf("webhook channels of cluster %d: %w", c.ID, err)
	}
	var hooks []hook
	for _, ch := range chans {
		if chosen(ch.Wanted, kind, Webhook) {
			hooks = append(hooks, hook{channelID: ch.WebhookChannel.ID, lang: ch.MessageLang})
		}
	}
	if err := enqueueWebhooks(ctx, tx, n.river(ctx), n.Box, hooks, kind, template, data); err != nil {
		return 0, fmt.Errorf("queue webhooks of cluster %d about %s: %w", c.ID, template, err)
	}
	return first, nil
}

// NameOrg sets data's Org to the name of organization orgID when it is a
// team, for a notice about something of the team's: the email's subject
// then starts with it ("[Acme] ..."), as the member may be in several
// teams with clusters of the same name. A personal organization's
// notices read as before organizations.
func NameOrg(ctx context.Context, q *queries.Queries, orgID int64, data map[string]any) error {
	org, err := q.OrgGet(ctx, orgID)
	if err != nil {
		return fmt.Errorf("load organization %d: %w", orgID, err)
	}
	if !org.PersonalOf.Valid {
		data["Org"] = org.Name
	}
	return nil
}

// TellPlatform queues the operator alert of template about an event of
// kind to the platform's webhook channels (the admins' own choices are
// Tell's).
func (n Notices) TellPlatform(ctx context.Context, tx pgx.Tx, kind Kind, template string, data map[string]any) error {
	chans, err := queries.New(tx).WebhookChannelListPlatform(ctx)
	if err != nil {
		return fmt.Errorf("platform webhook channels: %w", err)
	}
	hooks := make([]hook, len(chans))
	for i, c := range chans {
		hooks[i] = hook{channelID: c.ID, lang: c.Lang}
	}
	if err := enqueueWebhooks(ctx, tx, n.river(ctx), n.Box, hooks, kind, template, data); err != nil {
		return fmt.Errorf("queue platform webhooks about %s: %w", template, err)
	}
	return nil
}

// river is the client that inserts the jobs.
func (n Notices) river(ctx context.Context) *river.Client[pgx.Tx] {
	if n.River != nil {
		return n.River
	}
	return river.ClientFromContext[pgx.Tx](ctx)
}
