package views

import "time"

// AdminSignUp is the sign-up settings page: the policy form, the
// invitation form and the invitations.
type AdminSignUp struct {
	// Policy holds "policy" and "allowedDomains" (one a line), as
	// submitted or stored, and their errors.
	Policy   Form
	Policies []string
	// Invite holds the invitation form's "email" and its error.
	Invite      Form
	Invitations []AdminInvitation
	// TTLDays is how long an invitation's link works.
	TTLDays int
}

// AdminInvitation is one invitation in the list.
type AdminInvitation struct {
	ID         int64
	Email      string
	State      string // "pending", "accepted", "expired", "revoked"
	SentAt     time.Time
	ExpiresAt  time.Time
	AcceptedAt time.Time
	RevokedAt  time.Time
	InvitedBy  string
}

// Open reports whether the invitation can still be resent or revoked.
func (i AdminInvitation) Open() bool { return i.State == "pending" || i.State == "expired" }

// signUpPolicyLabel is the message ID of a policy's name.
func signUpPolicyLabel(policy string) string {
	switch policy {
	case "invite_only":
		return "AdminSignUpPolicyInviteOnly"
	case "closed":
		return "AdminSignUpPolicyClosed"
	}
	return "AdminSignUpPolicyOpen"
}

// invitationStateLabel is the message ID of an invitation's state.
func invitationStateLabel(state string) string {
	switch state {
	case "accepted":
		return "AdminInvitationAccepted"
	case "expired":
		return "AdminInvitationExpired"
	case "revoked":
		return "AdminInvitationRevoked"
	}
	return "AdminInvitationPending"
}
