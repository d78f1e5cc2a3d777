-- The processes that run River workers (`serve` with workers, `worker`),
-- each as it tells itself (internal/workerprocs): River 0.51 keeps no
-- such rows. id is the process's River client ID, the leader_id of
-- river_leader while it leads. A live process refreshes last_seen_at
-- every few seconds and sets stopped_at on a clean shutdown; the cleanup
-- job deletes the rows not seen for a day.
CREATE TABLE worker_processes (
    id           TEXT PRIMARY KEY,
    hostname     TEXT NOT NULL,
    pid          INTEGER NOT NULL,
    version      TEXT NOT NULL,
    queues       TEXT[] NOT NULL,
    started_at   TIMESTAMPTZ NOT NULL,
    last_seen_at TIMESTAMPTZ NOT NULL DEFAULT now(),
    stopped_at   TIMESTAMPTZ
);

---- create above / drop below ----

DROP TABLE worker_processes;
