package adminusers

import "context"

// ConfirmPassword checks the admin's password for a dangerous action
// outside this package (such as replacing the host cluster's credentials),
// under the same ReauthPerAdmin limit. It returns ErrWrongPassword,
// *LimitedError or ErrNotAdmin when the admin may not go on.
func (s *Service) ConfirmPassword(ctx context.Context, adminID int64, password string) error {
	return s.confirm(ctx, adminID, password)
}
