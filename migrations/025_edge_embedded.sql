-- The edge inside serve (KUBEBYON_EDGE=embedded) reads the routes and
-- reports without a token: its row has none, and is still one per name.
ALTER TABLE edge_instances ALTER COLUMN token_id DROP NOT NULL;
ALTER TABLE edge_instances DROP CONSTRAINT edge_instances_token_id_name_key;
ALTER TABLE edge_instances ADD CONSTRAINT edge_instances_token_id_name_key UNIQUE NULLS NOT DISTINCT (token_id, name);

---- create above / drop below ----

DELETE FROM edge_instances WHERE token_id IS NULL;
ALTER TABLE edge_instances DROP CONSTRAINT edge_instances_token_id_name_key;
ALTER TABLE edge_instances ADD CONSTRAINT edge_instances_token_id_name_key UNIQUE (token_id, name);
ALTER TABLE edge_instances ALTER COLUMN token_id SET NOT NULL;
