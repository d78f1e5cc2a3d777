-- Whether the owner was told of the cluster's current failure: set by the
-- first failure, cleared when the cluster is ready again, retried or
-- changed, so that River's retries of one failure tell the owner once.
ALTER TABLE clusters ADD COLUMN failure_notified BOOLEAN NOT NULL DEFAULT false;

-- When the owner was told that the node joined with the token (NULL: not
-- yet). The nodes recorded before this column are taken as told.
ALTER TABLE join_token_nodes ADD COLUMN notified_at TIMESTAMPTZ;
UPDATE join_token_nodes SET notified_at = first_seen;

---- create above / drop below ----

ALTER TABLE join_token_nodes DROP COLUMN notified_at;
ALTER TABLE clusters DROP COLUMN failure_notified;
