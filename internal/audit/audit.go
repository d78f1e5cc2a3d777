// Package audit records who did what. Every state-changing action calls
// Record with the queries of its own transaction, so the event exists if and
// only if the change committed.
package audit

import (
	"context"
	"encoding/json"
	"fmt"
	"reflect"

	"github.com/jackc/pgx/v5/pgtype"

	"github.com/kubebyon/kubebyon/queries"
)

// Actor is who acted: a user, or the system (zero ID) such as the CLI.
type Actor struct {
	UserID int64
	Email  string
	IP     string
	// UserAgent is stored as it is: the request's header made storable
	// and capped (input.HeaderValue) by whoever builds the Actor.
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

// Changed names the fields of a and b (values of one struct type) that
// differ, by their JSON names, unsorted: what a settings change's event
// lists. Fields JSON leaves out (secrets, `json:"-"`) are not compared.
func Changed(a, b any) ([]string, error) {
	am, err := jsonFields(a)
	if err != nil {
		return nil, err
	}
	bm, err := jsonFields(b)
	if err != nil {
		return nil, err
	}
	// Both sides' names: an omitempty field is in only one of them when it
	// goes from empty to set, or back.
	var changed []string
	for k := range am {
		if !reflect.DeepEqual(am[k], bm[k]) {
			changed = append(changed, k)
		}
	}
	for k := range bm {
		if _, ok := am[k]; !ok {
			changed = append(changed, k)
		}
	}
	return changed, nil
}

// jsonFields is v's fields by JSON name, as JSON sees them.
func jsonFields(v any) (map[string]any, error) {
	b, err := json.Marshal(v)
	if err != nil {
		return nil, fmt.Errorf("encode %T: %w", v, err)
	}
	m := map[string]any{}
	if err := json.Unmarshal(b, &m); err != nil {
		return nil, fmt.Errorf("decode %T: %w", v, err)
	}
	return m, nil
}
