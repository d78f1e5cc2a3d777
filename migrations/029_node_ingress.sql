-- Managed ingress on the nodes (package ingress): whether the user marked
-- the node as an ingress node (its label kubebyon.io/ingress-node=true)
-- and the public address the user gave it (its annotation
-- kubebyon.io/public-address; '' for none), as the health job records
-- them. The CNAME target's records follow these with each node's
-- readiness and ExternalIP.
ALTER TABLE nodes
    ADD COLUMN ingress        BOOLEAN NOT NULL DEFAULT false,
    ADD COLUMN public_address TEXT NOT NULL DEFAULT '';

-- What the CNAME target <slug>.<apps base domain> last published, and
-- how it went: dns_state published, removed or error ('' never).
ALTER TABLE cluster_ingress
    ADD COLUMN dns_name      TEXT NOT NULL DEFAULT '',
    ADD COLUMN dns_addresses TEXT[] NOT NULL DEFAULT '{}',
    ADD COLUMN dns_state     TEXT NOT NULL DEFAULT '',
    ADD COLUMN dns_error     TEXT NOT NULL DEFAULT '';

-- The addresses each cluster's CNAME target should have: the public
-- address the user gave each Ready ingress node, else its ExternalIP;
-- every Ready node is an ingress node when none is marked.
CREATE VIEW ingress_node_addresses AS
SELECT n.cluster_id, n.name,
       CASE WHEN n.public_address <> '' THEN n.public_address ELSE n.external_ip END AS address
FROM nodes n
WHERE n.status = 'Ready'
  AND (n.ingress OR NOT EXISTS (SELECT 1 FROM nodes m WHERE m.cluster_id = n.cluster_id AND m.ingress));

---- create above / drop below ----

DROP VIEW ingress_node_addresses;

ALTER TABLE cluster_ingress
    DROP COLUMN dns_name, DROP COLUMN dns_addresses, DROP COLUMN dns_state, DROP COLUMN dns_error;
ALTER TABLE nodes DROP COLUMN ingress, DROP COLUMN public_address;
