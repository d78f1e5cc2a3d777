package jobs_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/kubebyon/kubebyon/internal/orgs"
	"github.com/kubebyon/kubebyon/queries"
)

// actingAs is userID acting in their personal organization, as its owner.
func actingAs(tb testing.TB, db queries.DBTX, userID int64) orgs.Acting {
	tb.Helper()
	a, err := orgs.PersonalActing(context.Background(), db, userID)
	require.NoError(tb, err)
	return a
}
