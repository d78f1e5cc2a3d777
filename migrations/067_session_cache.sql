-- Each API replica keeps the signed-in sessions its pages read in memory
-- for a few seconds (internal/sessioncache, issue 36). These triggers
-- tell every replica, on kubebyon_session, when what the session query
-- (SessionFindSignedIn) reads may have changed, so that it forgets it:
--   t:<token hash>  a session's row (its data, or sign-out);
--   u:<user id>     the user, their user sessions (sign-out elsewhere, the
--                   organization chosen), unread notifications, two-factor
--                   authentication or memberships;
--   *               everyone: the two-factor setting, or an organization's
--                   name or kubeconfig rule.
-- The notification leaves at commit, and PostgreSQL folds identical ones
-- of a transaction into one.
CREATE FUNCTION session_changed() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
    -- TG_ARGV[0] is the kind; TG_ARGV[1], if any, the column that names
    -- what changed, read from the row as it is now, or was (a delete).
    r jsonb := CASE WHEN TG_OP = 'DELETE' THEN to_jsonb(OLD) ELSE to_jsonb(NEW) END;
BEGIN
    PERFORM pg_notify('kubebyon_session', TG_ARGV[0] || coalesce(r ->> TG_ARGV[1], ''));
    RETURN NULL;
END
$$;

CREATE TRIGGER sessions_session_cache AFTER UPDATE ON sessions
    FOR EACH ROW EXECUTE FUNCTION session_changed('t:', 'token');
-- An expired session is found no more: the cleanup job's deletions of
-- visitors' sessions by the thousand tell no one.
CREATE TRIGGER sessions_session_cache_delete AFTER DELETE ON sessions
    FOR EACH ROW WHEN (OLD.expiry > now()) EXECUTE FUNCTION session_changed('t:', 'token');
CREATE TRIGGER users_session_cache AFTER UPDATE OR DELETE ON users
    FOR EACH ROW EXECUTE FUNCTION session_changed('u:', 'id');
CREATE TRIGGER user_sessions_session_cache AFTER UPDATE OR DELETE ON user_sessions
    FOR EACH ROW EXECUTE FUNCTION session_changed('u:', 'user_id');
CREATE TRIGGER notifications_session_cache AFTER INSERT OR UPDATE OR DELETE ON notifications
    FOR EACH ROW EXECUTE FUNCTION session_changed('u:', 'user_id');
CREATE TRIGGER user_totp_session_cache AFTER INSERT OR UPDATE OR DELETE ON user_totp
    FOR EACH ROW EXECUTE FUNCTION session_changed('u:', 'user_id');
CREATE TRIGGER organization_members_session_cache AFTER INSERT OR UPDATE OR DELETE ON organization_members
    FOR EACH ROW EXECUTE FUNCTION session_changed('u:', 'user_id');
CREATE TRIGGER organizations_session_cache AFTER UPDATE OR DELETE ON organizations
    FOR EACH STATEMENT EXECUTE FUNCTION session_changed('*');
-- The one setting the query reads (other settings are written by the
-- workers on every pass).
CREATE TRIGGER settings_session_cache AFTER INSERT OR UPDATE ON settings
    FOR EACH ROW WHEN (NEW.key = 'two_factor') EXECUTE FUNCTION session_changed('*');
CREATE TRIGGER settings_session_cache_delete AFTER DELETE ON settings
    FOR EACH ROW WHEN (OLD.key = 'two_factor') EXECUTE FUNCTION session_changed('*');

---- create above / drop below ----

DROP TRIGGER settings_session_cache_delete ON settings;
DROP TRIGGER settings_session_cache ON settings;
DROP TRIGGER organizations_session_cache ON organizations;
DROP TRIGGER organization_members_session_cache ON organization_members;
DROP TRIGGER user_totp_session_cache ON user_totp;
DROP TRIGGER notifications_session_cache ON notifications;
DROP TRIGGER user_sessions_session_cache ON user_sessions;
DROP TRIGGER users_session_cache ON users;
DROP TRIGGER sessions_session_cache_delete ON sessions;
DROP TRIGGER sessions_session_cache ON sessions;
DROP FUNCTION session_changed();
