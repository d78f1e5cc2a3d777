package edge

import (
	"context"
	"time"

	"github.com/kubebyon/kubebyon/internal/edgewire"
	"github.com/kubebyon/kubebyon/queries"
)

// Local is the platform in the same process, as an edgeagent.Platform for
// the edge inside serve (KUBEBYON_EDGE=embedded): the watcher's state, and
// reports recorded without a token.
type Local struct {
	State   *Watcher
	Service *Service
}

// Config waits on the watcher.
func (p *Local) Config(ctx context.Context, have string, wait time.Duration) (edgewire.State, bool, error) {
	return p.State.Next(ctx, have, wait)
}

// Status records the report.
func (p *Local) Status(ctx context.Context, r edgewire.Report) error {
	_, err := p.Service.Record(ctx, queries.EdgeToken{}, "", r)
	return err
}
