package jobs

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"
	"github.com/riverqueue/river"

	"github.com/kubebyon/kubebyon/internal/notify"
	"github.com/kubebyon/kubebyon/internal/secrets"
	"github.com/kubebyon/kubebyon/queries"
)

// Notices tells users about what happens to their clusters, in-app and by
// email, each as the user's preferences say.
type Notices struct {
	Box *secrets.Box
}

// Tell writes the in-app notification and queues the email of template
// about an event of kind, in the caller's transaction (the job's River
// client inserts the email). The messages are Mail<template>Subject (also
// the in-app title), Mail<template>Body and Notify<template>Body; each is
// worded when read or sent, in the reader's language. It returns the
// in-app notification's id, or 0 when the user wants none.
func (n Notices) Tell(ctx context.Context, tx pgx.Tx, user queries.User, kind notify.Kind, template string, data map[string]any) (int64, error) {
	q := queries.New(tx)
	var id int64
	inApp, err := notify.Enabled(ctx, q, user.ID, kind, notify.InApp)
	if err != nil {
		return 0, err
	}
	if inApp {
		row, err := notify.Create(ctx, q, user.ID, kind, template, data)
		if err != nil {
			return 0, err
		}
		id = row.ID
	}
	byEmail, err := notify.Enabled(ctx, q, user.ID, kind, notify.Email)
	if err != nil {
		return 0, err
	}
	if byEmail {
		args, err := NewEmail(n.Box, user.Email, user.Language, template, data)
		if err != nil {
			return 0, err
		}
		if _, err := river.ClientFromContext[pgx.Tx](ctx).InsertTx(ctx, tx, args, nil); err != nil {
			return 0, fmt.Errorf("queue email to user %d about %s: %w", user.ID, template, err)
		}
	}
	return id, nil
}
