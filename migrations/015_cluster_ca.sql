-- The certificate authority of a cluster's control plane (PEM), which the
-- join script verifies the endpoint with. Learned from the cluster's
-- kubeconfig at the first join after the cluster became ready; emptied
-- each time it becomes ready again, as a recreated control plane may have
-- a new one.
ALTER TABLE clusters ADD COLUMN ca_cert TEXT NOT NULL DEFAULT '';

---- create above / drop below ----

ALTER TABLE clusters DROP COLUMN ca_cert;
