-- name: AdminOrgList :many
-- Every organization, newest first, keyset-paginated by id (below
-- @before_id; 0: from the newest), with what the admins' list shows: the
-- address of the user whose personal organization it is (empty for a team's)
-- and the number of members.
SELECT o.id, o.name, o.personal_of, o.created_at, o.closed_at,
       coalesce(p.email, '')::text AS personal_email,
       (SELECT count(*) FROM organization_members m WHERE m.org_id = o.id) AS member_count
FROM organizations o
LEFT JOIN users p ON p.id = o.personal_of
WHERE @before_id::bigint = 0 OR o.id < @before_id::bigint
ORDER BY o.id DESC
LIMIT @row_limit;

-- name: AdminOrgSearch :many
-- AdminOrgList of the organizations whose name, or one of whose members'
-- email, holds the search, in any case. @pattern is the search with \, %
-- and _ escaped, between two %. The matches are found first, through the
-- trigram indexes on lower(organizations.name) and lower(users.email);
-- only they are sorted.
WITH matches AS MATERIALIZED (
    SELECT organizations.id FROM organizations WHERE lower(organizations.name) LIKE lower(@pattern::text)
    UNION
    SELECT mm.org_id FROM users mu JOIN organization_members mm ON mm.user_id = mu.id
    WHERE lower(mu.email) LIKE lower(@pattern::text)
)
SELECT o.id, o.name, o.personal_of, o.created_at, o.closed_at,
       coalesce(p.email, '')::text AS personal_email,
       (SELECT count(*) FROM organization_members m WHERE m.org_id = o.id) AS member_count
FROM organizations o
LEFT JOIN users p ON p.id = o.personal_of
WHERE o.id IN (SELECT matches.id FROM matches) AND (@before_id::bigint = 0 OR o.id < @before_id::bigint)
ORDER BY o.id DESC
LIMIT @row_limit;

-- name: AdminOrgGet :one
-- One organization as the admins see it, with the addresses of the user
-- whose personal organization it is and of who made it (empty for none or
-- an account deleted since), and its number of members.
SELECT sqlc.embed(o),
       coalesce(p.email, '')::text AS personal_email,
       coalesce(c.email, '')::text AS created_by_email,
       (SELECT count(*) FROM organization_members m WHERE m.org_id = o.id) AS member_count
FROM organizations o
LEFT JOIN users p ON p.id = o.personal_of
LEFT JOIN users c ON c.id = o.created_by
WHERE o.id = @id;

-- name: AdminOrgMembers :many
-- The members of an organization, owners first, then by address.
SELECT m.user_id, m.role, m.created_at, u.email, u.name
FROM organization_members m
JOIN users u ON u.id = m.user_id
WHERE m.org_id = @org_id
ORDER BY array_position(ARRAY['owner', 'admin', 'member', 'viewer'], m.role), lower(u.email);

-- name: AdminOrgInvitations :many
-- An organization's invitations, newest first, with the inviter's address
-- (empty for an account deleted since).
SELECT sqlc.embed(i), coalesce(u.email, '')::text AS invited_by_email
FROM org_invitations i
LEFT JOIN users u ON u.id = i.invited_by
WHERE i.org_id = @org_id
ORDER BY i.id DESC
LIMIT @row_limit;

-- name: AdminOrgListForUser :many
-- The organizations a user is a member of, with their role and the
-- number of members: the personal one first, then by name.
SELECT o.id, o.name, o.personal_of, m.role, m.created_at AS joined_at,
       (SELECT count(*) FROM organization_members om WHERE om.org_id = o.id) AS member_count
FROM organizations o
JOIN organization_members m ON m.org_id = o.id
WHERE m.user_id = @user_id
ORDER BY o.personal_of IS NULL, lower(o.name), o.id;

-- name: OrgCreate :one
INSERT INTO organizations (name, created_by)
VALUES (@name, @created_by)
RETURNING *;

-- name: OrgMemberAdd :exec
INSERT INTO organization_members (org_id, user_id, role)
VALUES (@org_id, @user_id, @role);

-- name: OrgGetForMember :one
-- An organization as one of its members sees it, with their role: no
-- row for anyone else.
SELECT sqlc.embed(o), m.role
FROM organizations o
JOIN organization_members m ON m.org_id = o.id
WHERE o.id = @id AND m.user_id = @user_id;

-- name: OrgDetailForMember :one
-- OrgGetForMember with the organization's number of members.
SELECT sqlc.embed(o), m.role,
       (SELECT count(*) FROM organization_members om WHERE om.org_id = o.id) AS member_count
FROM organizations o
JOIN organization_members m ON m.org_id = o.id
WHERE o.id = @id AND m.user_id = @user_id;

-- name: OrgRename :one
-- Renames an organization, for a member (@user_id) in one of @roles: no
-- row for anyone else.
UPDATE organizations SET name = @name, updated_at = now()
WHERE id = @id AND EXISTS (SELECT 1 FROM organization_members om WHERE om.org_id = @id AND om.user_id = @user_id AND om.role = ANY (@roles::text[]))
RETURNING *;

-- name: OrgSetViewerKubeconfig :one
-- Lets an organization's viewers download a kubeconfig, or stops them,
-- for a member (@user_id) in one of @roles: no row for anyone else.
UPDATE organizations SET viewer_kubeconfig = @viewer_kubeconfig, updated_at = now()
WHERE id = @id AND EXISTS (SELECT 1 FROM organization_members om WHERE om.org_id = @id AND om.user_id = @user_id AND om.role = ANY (@roles::text[]))
RETURNING *;

-- name: OrgLockForMember :one
-- The role of a member of the organization, with the organization's row
-- locked until the transaction ends: membership changes of one
-- organization run one after the other. No row for a non-member.
SELECT m.role
FROM organizations o
JOIN organization_members m ON m.org_id = o.id
WHERE o.id = @id AND m.user_id = @user_id
FOR UPDATE OF o;

-- name: OrgListForUser :many
-- The organizations a user is a member of, with their role: the personal
-- one first, then by name.
SELECT sqlc.embed(o), m.role
FROM organizations o
JOIN organization_members m ON m.org_id = o.id
WHERE m.user_id = @user_id
ORDER BY o.personal_of IS NULL, lower(o.name), o.id;

-- name: OrgGet :one
SELECT * FROM organizations WHERE id = @id;

-- name: OrgOwnerUsers :many
-- The accounts of an organization's owners (who are told about its
-- billing).
SELECT users.* FROM users JOIN organization_members m ON m.user_id = users.id
WHERE m.org_id = @org_id AND m.role = 'owner'
ORDER BY users.id;

-- name: OrgPersonal :one
SELECT * FROM organizations WHERE personal_of = @user_id;

-- name: OrgMembers :many
-- The members of an organization, owners first, then by address; only
-- for a member (@member_id) of it.
SELECT m.user_id, m.role, m.created_at, u.email, u.name
FROM organization_members m
JOIN users u ON u.id = m.user_id
WHERE m.org_id = @org_id
  AND EXISTS (SELECT 1 FROM organization_members me WHERE me.org_id = @org_id AND me.user_id = @member_id)
ORDER BY array_position(ARRAY['owner', 'admin', 'member', 'viewer'], m.role), lower(u.email);

-- name: OrgMemberGet :one
-- One member of an organization, for a member (@member_id) of it.
SELECT m.user_id, m.role, m.created_at, u.email, u.name
FROM organization_members m
JOIN users u ON u.id = m.user_id
WHERE m.org_id = @org_id AND m.user_id = @user_id
  AND EXISTS (SELECT 1 FROM organization_members me WHERE me.org_id = @org_id AND me.user_id = @member_id);

-- name: OrgMemberRole :one
SELECT role FROM organization_members WHERE org_id = @org_id AND user_id = @user_id;

-- name: OrgMemberSetRole :exec
UPDATE organization_members SET role = @role WHERE org_id = @org_id AND user_id = @user_id;

-- name: OrgMemberRemove :exec
DELETE FROM organization_members WHERE org_id = @org_id AND user_id = @user_id;

-- name: OrgOwnerCount :one
SELECT count(*) FROM organization_members WHERE org_id = @org_id AND role = 'owner';

-- name: OrgInvitationCreate :one
INSERT INTO org_invitations (org_id, email, role, token_hash, invited_by, expires_at)
VALUES (@org_id, @email, @role, @token_hash, @invited_by, @expires_at)
RETURNING *;

-- name: OrgInvitationRevokePending :execrows
-- Revokes the pending invitations of an address to an organization.
UPDATE org_invitations SET revoked_at = @now
WHERE org_id = @org_id AND lower(email) = lower(@email)
  AND accepted_at IS NULL AND revoked_at IS NULL AND expires_at > @now;

-- name: OrgInvitationRevoke :one
UPDATE org_invitations SET revoked_at = @now
WHERE id = @id AND org_id = @org_id AND accepted_at IS NULL AND revoked_at IS NULL
RETURNING *;

-- name: OrgInvitationList :many
-- An organization's invitations, newest first, for a member (@member_id)
-- of it.
SELECT i.*, coalesce(u.email, '')::text AS invited_by_email
FROM org_invitations i
LEFT JOIN users u ON u.id = i.invited_by
WHERE i.org_id = @org_id
  AND EXISTS (SELECT 1 FROM organization_members me WHERE me.org_id = @org_id AND me.user_id = @member_id)
ORDER BY i.id DESC
LIMIT 100;

-- name: OrgInvitationGet :one
-- One invitation of an organization, with the inviter's address, for a
-- member (@member_id) of it.
SELECT sqlc.embed(i), coalesce(u.email, '')::text AS invited_by_email
FROM org_invitations i
LEFT JOIN users u ON u.id = i.invited_by
WHERE i.id = @id AND i.org_id = @org_id
  AND EXISTS (SELECT 1 FROM organization_members me WHERE me.org_id = @org_id AND me.user_id = @member_id);

-- name: OrgInvitationByHash :one
-- The invitation a link names, with its organization's name.
SELECT sqlc.embed(i), o.name AS org_name, coalesce(u.email, '')::text AS invited_by_email
FROM org_invitations i
JOIN organizations o ON o.id = i.org_id
LEFT JOIN users u ON u.id = i.invited_by
WHERE i.token_hash = @token_hash;

-- name: OrgInvitationLockByHash :one
SELECT * FROM org_invitations WHERE token_hash = @token_hash FOR UPDATE;

-- name: OrgInvitationAccept :exec
UPDATE org_invitations SET accepted_at = @now, accepted_user_id = @user_id WHERE id = @id;

-- name: OrgMemberAddIfAbsent :execrows
-- Adds a member; nothing when they are one already.
INSERT INTO organization_members (org_id, user_id, role)
VALUES (@org_id, @user_id, @role)
ON CONFLICT (org_id, user_id) DO NOTHING;

-- name: OrgMemberByEmail :one
-- Whether an address is a member's of an organization (its user id).
SELECT m.user_id FROM organization_members m JOIN users u ON u.id = m.user_id
WHERE m.org_id = @org_id AND lower(u.email) = lower(@email);

-- name: OrgMemberIn :one
-- Whether the user is a member of the organization in one of roles.
SELECT EXISTS (SELECT 1 FROM organization_members om WHERE om.org_id = @org_id AND om.user_id = @user_id AND om.role = ANY (@roles::text[]))::boolean;

-- name: OrgOrderCount :one
-- How many orders an organization has, and how many of them wait for
-- payment: they are kept for accounting (orders.org_id has no ON DELETE),
-- so one with any is closed rather than deleted.
SELECT count(*) AS orders, count(*) FILTER (WHERE status = 'pending') AS pending
FROM orders WHERE org_id = @org_id;

-- name: OrgAPIKeysDelete :execrows
-- The API keys made in an organization that goes, its members' (their
-- foreign key would take them with it: deleted here to count them).
DELETE FROM api_keys WHERE org_id = @org_id;

-- name: OrgDelete :one
-- Deletes a team's organization, for a member (@user_id) in one of
-- @roles: its members, invitations, webhook channels and subscription go
-- with it (ON DELETE CASCADE). No row for a personal organization or
-- anyone else.
DELETE FROM organizations
WHERE id = @id AND personal_of IS NULL AND EXISTS (SELECT 1 FROM organization_members om WHERE om.org_id = @id AND om.user_id = @user_id AND om.role = ANY (@roles::text[]))
RETURNING *;

-- name: AdminOrgClusters :many
-- An organization's live clusters, newest first, up to @row_limit, each
-- with its recorded nodes and the address of who made it (empty for an
-- account deleted since), and the number of its live clusters on every
-- row (total).
SELECT c.id, c.name, c.status, c.created_at, c.owner_id,
       coalesce(u.email, '')::text AS owner_email,
       (SELECT count(*) FROM nodes n WHERE n.cluster_id = c.id)::bigint AS nodes,
       (count(*) OVER ())::bigint AS total
FROM clusters c
LEFT JOIN users u ON u.id = c.owner_id
WHERE c.org_id = @org_id AND c.status <> 'deleted'
ORDER BY c.id DESC
LIMIT @row_limit;

-- name: OrgClose :one
-- Closes a team's organization that has orders (they keep naming it),
-- for a member (@user_id) in one of @roles: the row stays, with the time
-- it was closed. No row for a personal organization, one closed before,
-- or anyone else. OrgCloseMembers and the others empty it.
UPDATE organizations SET closed_at = now()
WHERE id = @id AND personal_of IS NULL AND closed_at IS NULL AND EXISTS (SELECT 1 FROM organization_members om WHERE om.org_id = @id AND om.user_id = @user_id AND om.role = ANY (@roles::text[]))
RETURNING *;

-- name: OrgCloseMembers :exec
DELETE FROM organization_members WHERE org_id = @org_id;

-- name: OrgCloseInvitations :exec
DELETE FROM org_invitations WHERE org_id = @org_id;

-- name: OrgCloseWebhooks :exec
DELETE FROM webhook_channels WHERE org_id = @org_id;

-- name: OrgCloseSubscription :exec
-- A closed organization's subscription: on the default plan, cancelled,
-- with no period to renew or end.
UPDATE subscriptions SET plan_id = (SELECT id FROM plans WHERE is_default), status = 'cancelled',
    period = NULL, period_anchor = NULL, current_period_end = NULL, period_amount = 0,
    cancel_at_period_end = FALSE, scheduled_plan_id = NULL, scheduled_period = NULL, updated_at = now()
WHERE org_id = @org_id;
