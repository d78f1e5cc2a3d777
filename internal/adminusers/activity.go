package adminusers

import (
	"context"
	"fmt"

	"github.com/kubebyon/kubebyon/queries"
)

// ActivityFilter narrows the audit stream; empty fields do not.
type ActivityFilter struct {
	Actor, Action string
}

// ActivityPage is a page of the audit stream, newest first.
type ActivityPage struct {
	Events []queries.AuditEvent
	// Older is the cursor of the next page (the id of the last event
	// shown) while older events remain; 0 on the last page.
	Older int64
}

// Activity is the page of up to size audit events under f below the id
// before (0: the newest).
func (s *Service) Activity(ctx context.Context, f ActivityFilter, before int64, size int) (ActivityPage, error) {
	// One more row than shown tells whether older ones remain.
	rows, err := queries.New(s.Pool).AuditEventList(ctx, queries.AuditEventListParams{
		BeforeID: before, Actor: f.Actor, Action: f.Action, RowLimit: int32(size) + 1,
	})
	if err != nil {
		return ActivityPage{}, fmt.Errorf("list audit events: %w", err)
	}
	var p ActivityPage
	if len(rows) > size {
		rows = rows[:size]
		p.Older = rows[len(rows)-1].ID
	}
	p.Events = rows
	return p, nil
}
