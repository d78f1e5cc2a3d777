// Package audit records who did what. Every state-changing action calls
// Record with the queries of its own transaction, so the event exists if and
// only if the change committed.
package audit

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/jackc/pgx/v5/pgtype"

	"github.com/kubebyon/kubebyon/queries"
)

// Actor is who acted: a user, or the system (zero ID) such as the CLI.
type Actor struct {
	UserID    int64
	Email     string
	IP        string
	UserAgent string
}

// Event is one action on one target.
type Event struct {
	Action     string // dotted, e.g. "user.signup", "api_key.revoke"
	TargetType string
	TargetID   string
	Details    map[string]any
}

// Record writes the event with q, which should be the transaction's.
func Record(ctx context.Context, q *queries.Queries, a Actor, e Event) error {
	details := []byte("{}")
	if len(e.Details) > 0 {
		var err error
		if details, err = json.Marshal(e.Details); err != nil {
			return fmt.Errorf("audit %s: encode details: %w", e.Action, err)
		}
	}
	err := q.AuditEventCreate(ctx, queries.AuditEventCreateParams{
		ActorID:    pgtype.Int8{Int64: a.UserID, Valid: a.UserID != 0},
		ActorEmail: a.Email,
		Action:     e.Action,
		TargetType: e.TargetType,
		TargetID:   e.TargetID,
		Ip:         a.IP,
		UserAgent:  a.UserAgent,
		Details:    details,
	})
	if err != nil {
		return fmt.Errorf("audit %s: %w", e.Action, err)
	}
	return nil
}
