-- What the nodes page shows of a node's conditions and addresses, kept
-- beside them by PostgreSQL, so that the page reads a few short columns
-- instead of decoding both JSON documents of every node on every load
-- (and refresh, every 5 seconds). They are worked out as nodes.Readiness
-- and nodes.Address do: the Ready condition's status, or for a row
-- recorded without conditions its ready flag; the first address of each
-- type.
ALTER TABLE nodes
    ADD COLUMN status TEXT NOT NULL GENERATED ALWAYS AS (
        CASE jsonb_path_query_first(conditions, '$[*] ? (@.type == "Ready").status') #>> '{}'
            WHEN 'True' THEN 'Ready'
            WHEN 'False' THEN 'NotReady'
            ELSE CASE WHEN conditions = '[]'::jsonb AND ready THEN 'Ready' ELSE 'Unknown' END
        END) STORED,
    ADD COLUMN internal_ip TEXT NOT NULL GENERATED ALWAYS AS (
        coalesce(jsonb_path_query_first(addresses, '$[*] ? (@.type == "InternalIP").address') #>> '{}', '')) STORED,
    ADD COLUMN external_ip TEXT NOT NULL GENERATED ALWAYS AS (
        coalesce(jsonb_path_query_first(addresses, '$[*] ? (@.type == "ExternalIP").address') #>> '{}', '')) STORED;

---- create above / drop below ----

ALTER TABLE nodes DROP COLUMN external_ip, DROP COLUMN internal_ip, DROP COLUMN status;
