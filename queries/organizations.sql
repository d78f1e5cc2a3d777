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

-- name: OrgMemberRole :one
SELECT role FROM organization_members WHERE org_id = @org_id AND user_id = @user_id;

-- name: OrgMemberSetRole :exec
UPDATE organization_members SET role = @role WHERE org_id = @org_id AND user_id = @user_id;

-- name: OrgMemberRemove :exec
DELETE FROM organization_members WHERE org_id = @org_id AND user_id = @user_id;

-- name: OrgOwnerCount :one
SELECT count(*) FROM organization_members WHERE org_id = @org_id AND role = 'owner';
