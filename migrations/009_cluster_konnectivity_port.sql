-- In nodeport mode the control plane Service exposes konnectivity (8132)
-- besides https. Both NodePorts are allocated by the platform: a port the
-- apiserver picked at random for one cluster could otherwise be the one
-- the platform had handed to the next.
ALTER TABLE clusters ADD COLUMN konnectivity_node_port INT UNIQUE;

---- create above / drop below ----

ALTER TABLE clusters DROP COLUMN konnectivity_node_port;
