package views

import (
	"time"

	"github.com/kubebyon/kubebyon/internal/adminorgs"
)

// AdminUserMore is what an account's admin page shows beside its profile:
// its organizations, clusters, API keys (never their secrets) and ways to
// sign in.
type AdminUserMore struct {
	Orgs        []adminorgs.Membership
	Clusters    []AdminUserCluster
	APIKeys     []AdminUserAPIKey
	HasPassword bool
	// TwoFactor: the account's sign-ins ask for a second factor.
	TwoFactor  bool
	Identities []AdminUserIdentity
	// HasClusters is set when the account cannot be deleted for them.
	HasClusters bool
}

// AdminUserCluster is one of the account's clusters.
type AdminUserCluster struct {
	ID      int64
	Name    string
	Status  string
	Version string
	Nodes   int64
	Created time.Time
}

// AdminUserAPIKey is one of the account's API keys.
type AdminUserAPIKey struct {
	ID       int64
	Name     string
	Status   string
	Created  time.Time
	LastUsed time.Time
	Expires  time.Time
	Revoked  time.Time
}

// AdminUserIdentity is a provider account linked to the account.
type AdminUserIdentity struct {
	Provider string
	Since    time.Time
}
