-- name: InvitationLockEmail :exec
-- Runs invitations of one address one after the other (until the
-- transaction ends), so that an address never has two open invitations.
SELECT pg_advisory_xact_lock(hashtext('invitation:' || lower(@email::text)));

-- name: InvitationCreate :one
INSERT INTO invitations (email, token_hash, invited_by, expires_at)
VALUES (@email, @token_hash, @invited_by, @expires_at)
RETURNING *;

-- name: InvitationGetOpenByEmail :one
-- The address's invitation that can still be accepted at @now, if any.
SELECT * FROM invitations
WHERE lower(email) = lower(@email) AND accepted_at IS NULL AND revoked_at IS NULL AND expires_at > @now
ORDER BY id DESC
LIMIT 1;

-- name: InvitationGetByHash :one
SELECT * FROM invitations WHERE token_hash = @token_hash;

-- name: InvitationLockByID :one
SELECT * FROM invitations WHERE id = @id FOR UPDATE;

-- name: InvitationAccept :execrows
-- Uses the invitation up, unless it was used, revoked or expired since it
-- was read.
UPDATE invitations SET accepted_at = @now, accepted_user_id = @user_id
WHERE id = @id AND accepted_at IS NULL AND revoked_at IS NULL AND expires_at > @now;

-- name: InvitationRevoke :execrows
UPDATE invitations SET revoked_at = @now
WHERE id = @id AND accepted_at IS NULL AND revoked_at IS NULL;

-- name: InvitationRenew :one
-- A resend: a new token (the old link stops working) and a new expiry.
UPDATE invitations SET token_hash = @token_hash, sent_at = @now, expires_at = @expires_at
WHERE id = @id AND accepted_at IS NULL AND revoked_at IS NULL
RETURNING *;

-- name: InvitationList :many
-- The admins' list, newest first, with who sent each, paged by id
-- (keyset: ids below @before_id, 0 for the first page).
SELECT i.id, i.email, i.created_at, i.sent_at, i.expires_at, i.accepted_at, i.revoked_at,
       coalesce(inviter.email, '')::text AS invited_by_email
FROM invitations i
LEFT JOIN users inviter ON inviter.id = i.invited_by
WHERE (@before_id::bigint = 0 OR i.id < @before_id)
ORDER BY i.id DESC
LIMIT @max_rows;
