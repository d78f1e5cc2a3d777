-- Where a cluster's routes through the platform edge stand (package
-- ingress, check ingress_edge): edge_state '' (not routed through the
-- edge), routed (the Gateway's implementation accepted every route),
-- pending (not every route accepted yet: edge_message says which
-- condition), error (the platform could not write them: edge_message
-- says why); edge_pods the controller pods' addresses the routes lead to;
-- edge_gateway the shared Gateway's addresses, which the CNAME target's
-- records hold in edge mode.
ALTER TABLE cluster_ingress
    ADD COLUMN edge_state   TEXT NOT NULL DEFAULT '',
    ADD COLUMN edge_message TEXT NOT NULL DEFAULT '',
    ADD COLUMN edge_pods    TEXT[] NOT NULL DEFAULT '{}',
    ADD COLUMN edge_gateway TEXT[] NOT NULL DEFAULT '{}';

-- What the Gateway's implementation says of a host name's routes: ''
-- (none yet), or 'ok', or the first condition not True, in words.
ALTER TABLE cluster_hostnames ADD COLUMN edge_status TEXT NOT NULL DEFAULT '';

---- create above / drop below ----

ALTER TABLE cluster_hostnames DROP COLUMN edge_status;
ALTER TABLE cluster_ingress DROP COLUMN edge_state, DROP COLUMN edge_message, DROP COLUMN edge_pods, DROP COLUMN edge_gateway;
