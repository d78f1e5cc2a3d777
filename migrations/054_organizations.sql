-- Organizations: who shares clusters, billing and notifications, and in
-- which role (issue 38). Every user has a personal organization, of which
-- they are the owner: for one person nothing changes. It is made here for
-- the accounts that exist, and with every new account by the trigger
-- below, whichever way the account is made (sign-up, a sign-in provider,
-- an invitation, `kubebyon admin create`).
CREATE TABLE organizations (
    id                BIGSERIAL PRIMARY KEY,
    name              TEXT NOT NULL,
    -- The user whose personal organization this is (one each); NULL for a
    -- team's, made by a user (created_by).
    personal_of       BIGINT UNIQUE REFERENCES users (id) ON DELETE CASCADE,
    -- Whether viewers may download a (read-only) kubeconfig.
    viewer_kubeconfig BOOLEAN NOT NULL DEFAULT FALSE,
    created_by        BIGINT REFERENCES users (id) ON DELETE SET NULL,
    created_at        TIMESTAMPTZ NOT NULL DEFAULT now(),
    updated_at        TIMESTAMPTZ NOT NULL DEFAULT now()
);

-- The roles are fixed (internal/orgs): owner (billing, members, deleting
-- the organization), admin (clusters, members except owners), member
-- (clusters, tokens, node operations) and viewer (read-only).
CREATE TABLE organization_members (
    org_id     BIGINT NOT NULL REFERENCES organizations (id) ON DELETE CASCADE,
    user_id    BIGINT NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    role       TEXT NOT NULL CHECK (role IN ('owner', 'admin', 'member', 'viewer')),
    created_at TIMESTAMPTZ NOT NULL DEFAULT now(),
    PRIMARY KEY (org_id, user_id)
);

CREATE INDEX organization_members_user_idx ON organization_members (user_id, org_id);

INSERT INTO organizations (name, personal_of, created_by, created_at)
SELECT CASE WHEN btrim(name) = '' THEN email ELSE name END, id, id, created_at FROM users;

INSERT INTO organization_members (org_id, user_id, role, created_at)
SELECT id, personal_of, 'owner', created_at FROM organizations;

CREATE FUNCTION organizations_make_personal() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    WITH o AS (
        INSERT INTO organizations (name, personal_of, created_by, created_at)
        VALUES (CASE WHEN btrim(NEW.name) = '' THEN NEW.email ELSE NEW.name END, NEW.id, NEW.id, NEW.created_at)
        RETURNING id
    )
    INSERT INTO organization_members (org_id, user_id, role, created_at)
    SELECT o.id, NEW.id, 'owner', NEW.created_at FROM o;
    RETURN NEW;
END;
$$;

CREATE TRIGGER users_personal_organization AFTER INSERT ON users
FOR EACH ROW EXECUTE FUNCTION organizations_make_personal();

---- create above / drop below ----

DROP TRIGGER users_personal_organization ON users;
DROP FUNCTION organizations_make_personal();
DROP TABLE organization_members;
DROP TABLE organizations;
