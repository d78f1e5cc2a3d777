-- name: WorkerProcessBeat :exec
-- A process's row, written at its start and at each heartbeat: it says
-- the process is alive now. An upsert, so that a process whose row was
-- deleted (paused for over a day) writes it again.
INSERT INTO worker_processes (id, hostname, pid, version, queues, started_at)
VALUES (@id, @hostname, @pid, @version, @queues, @started_at)
ON CONFLICT (id) DO UPDATE
SET last_seen_at = now(), stopped_at = NULL;

-- name: WorkerProcessMarkStopped :execrows
UPDATE worker_processes SET stopped_at = now(), last_seen_at = now()
WHERE id = @id;

-- name: WorkerProcessList :many
-- The processes still kept, running ones first, newest first.
SELECT * FROM worker_processes
ORDER BY stopped_at IS NULL DESC, started_at DESC, id
LIMIT @max_rows;

-- name: WorkerProcessDeleteGone :execrows
-- The processes not seen for a day: stopped, or killed without a word.
DELETE FROM worker_processes WHERE last_seen_at < now() - interval '1 day';
