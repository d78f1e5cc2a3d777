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
// email, each as the user's preferences say.
type Notices struct {
	Box *secrets.Box
	// River inserts the emails; nil: the River client of the job whose
	// context Tell is given.
	River *river.Client[pgx.Tx]
}

// Tell writes the in-app notification and queues the email of template
// about an event of kind, in the caller's transaction (the job's River
// client inserts the email). The messages are Mail<template>Subject (also
// the in-app title), Mail<template>Body and Notify<template>Body; each is
// worded when read or sent, in the reader's language. It returns the
// in-app notification's id, or 0 when the user wants none. The user's
// webhook channels get the event too, when the user wants it there.
func (n Notices) Tell(ctx context.Context, tx pgx.Tx, user queries.User, kind Kind, template string, data map[string]any) (int64, error) {
	q := queries.New(tx)
	var id int64
	inApp, err := Enabled(ctx, q, user.ID, kind, InApp)
	if err != nil {
		return 0, err
	}
	if inApp {
		row, err := Create(ctx, q, user.ID, kind, template, data)
		if err != nil {
			return 0, err
		}
		id = row.ID
	}
	byEmail, err := Enabled(ctx, q, user.ID, kind, Email)
	if err != nil {
		return 0, err
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
	hooks, err := webhookChannels(ctx, q, user.ID)
	if err != nil {
		return 0, fmt.Errorf("webhook channels of user %d: %w", user.ID, err)
	}
	if len(hooks) == 0 {
		return id, nil
	}
	byWebhook, err := Enabled(ctx, q, user.ID, kind, Webhook)
	if err != nil || !byWebhook {
		return id, err
	}
	if err := enqueueWebhooks(ctx, tx, n.river(ctx), n.Box, hooks, user.Language, kind, template, data); err != nil {
		return 0, fmt.Errorf("queue webhooks of user %d about %s: %w", user.ID, template, err)
	}
	return id, nil
}

// TellOwner tells the owner of cluster c about it (Tell), in tx: data
// gets the cluster's name (Cluster) and id (ClusterID).
func (n Notices) TellOwner(ctx context.Context, tx pgx.Tx, c queries.Cluster, kind Kind, template string, data map[string]any) error {
	owner, err := queries.New(tx).UserGetByID(ctx, c.OwnerID)
	if err != nil {
		return fmt.Errorf("load owner of cluster %d: %w", c.ID, err)
	}
	data["Cluster"], data["ClusterID"] = c.Name, c.ID
	if _, err := n.Tell(ctx, tx, owner, kind, template, data); err != nil {
		return fmt.Errorf("notice of cluster %d: %w", c.ID, err)
	}
	return nil
}

// TellPlatform queues the operator alert of template about an event of
// kind to the platform's webhook channels (the admins' own choices are
// Tell's).
func (n Notices) TellPlatform(ctx context.Context, tx pgx.Tx, kind Kind, template string, data map[string]any) error {
	hooks, err := webhookChannels(ctx, queries.New(tx), 0)
	if err != nil {
		return fmt.Errorf("platform webhook channels: %w", err)
	}
	if err := enqueueWebhooks(ctx, tx, n.river(ctx), n.Box, hooks, "", kind, template, data); err != nil {
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
