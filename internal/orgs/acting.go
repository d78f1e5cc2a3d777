package orgs

import (
	"context"
	"fmt"

	"github.com/kubebyon/kubebyon/queries"
)

// Acting is who acts, and where: a user (UserID) in an organization
// (OrgID), with at most the role Cap. The console acts with the member's
// own role (Cap Owner caps nothing); an API key with its own (a read key:
// Viewer). It names, it does not vouch: the services' queries look the
// membership up (EXISTS over organization_members), so an Acting for an
// organization the user is not a member of reads nothing.
type Acting struct {
	OrgID  int64
	UserID int64
	Cap    Role
}

// Roles are the roles of a member who may do p acting as a: those that
// allow p, none when a's cap does not. What a service's query matches the
// member's role against (in SQL): since every role may do all that
// the roles below it may, a member may do p when both their role and the
// cap allow it.
func (a Acting) Roles(p Permission) []string {
	if a.Cap != "" && !Allows(a.Cap, p) {
		return []string{}
	}
	return allowing(p)
}

// May reports whether a's cap allows p: a service that refuses what the
// member's role could do, but the key they act with may not, says so
// (ErrForbidden) instead of finding nothing.
func (a Acting) May(p Permission) bool { return a.Cap == "" || Allows(a.Cap, p) }

// PersonalActing is userID acting in their personal organization, as its
// owner: what acts for a user where no organization is named (a test's
// fixtures, a command run for one user).
func PersonalActing(ctx context.Context, db queries.DBTX, userID int64) (Acting, error) {
	o, err := queries.New(db).OrgPersonal(ctx, pgInt8(userID))
	if err != nil {
		return Acting{}, fmt.Errorf("read the personal organization of user %d: %w", userID, err)
	}
	return Acting{OrgID: o.ID, UserID: userID, Cap: Owner}, nil
}
