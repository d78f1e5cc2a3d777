-- name: ClusterMetricInsert :exec
-- One scrape's figures (or a gap: up false, the rest NULL). A repeated
-- scrape at the same instant keeps the first.
INSERT INTO cluster_metrics (
    cluster_id, at, up, read_rate, write_rate, watch_rate, error_rate, latency_p50, latency_p99,
    inflight, objects, watches, nodes_ready, nodes_total, pods_running, pods_total, by_resource)
VALUES (
    @cluster_id, @at, @up, @read_rate, @write_rate, @watch_rate, @error_rate, @latency_p50, @latency_p99,
    @inflight, @objects, @watches, @nodes_ready, @nodes_total, @pods_running, @pods_total, @by_resource)
ON CONFLICT (cluster_id, at) DO NOTHING;

-- name: ClusterMetricCountersGet :one
SELECT * FROM cluster_metric_counters WHERE cluster_id = @cluster_id;

-- name: ClusterMetricCountersPut :exec
INSERT INTO cluster_metric_counters (cluster_id, scraped_at, counters)
VALUES (@cluster_id, @scraped_at, @counters)
ON CONFLICT (cluster_id) DO UPDATE SET scraped_at = EXCLUDED.scraped_at, counters = EXCLUDED.counters;

-- name: ClusterMetricsRaw :many
-- A cluster's raw samples since a time, oldest first, gaps (up false)
-- included as rows of NULLs.
SELECT at, read_rate, write_rate, watch_rate, error_rate, latency_p50, latency_p99, inflight,
       objects, watches, nodes_ready, nodes_total, pods_running, pods_total
FROM cluster_metrics
WHERE cluster_id = @cluster_id AND at >= @since
ORDER BY at;

-- name: ClusterMetrics5m :many
SELECT at, read_rate, write_rate, watch_rate, error_rate, latency_p50, latency_p99, inflight,
       objects, watches, nodes_ready, nodes_total, pods_running, pods_total
FROM cluster_metrics_5m
WHERE cluster_id = @cluster_id AND at >= @since
ORDER BY at;

-- name: ClusterMetrics1h :many
SELECT at, read_rate, write_rate, watch_rate, error_rate, latency_p50, latency_p99, inflight,
       objects, watches, nodes_ready, nodes_total, pods_running, pods_total
FROM cluster_metrics_1h
WHERE cluster_id = @cluster_id AND at >= @since
ORDER BY at;

-- name: ClusterMetricRollupDoneUntil :one
-- Where a rollup has got, locked for the run that moves it on; no row
-- before its first run.
SELECT done_until FROM cluster_metric_rollups WHERE resolution = @resolution FOR UPDATE;

-- name: ClusterMetricRollupSet :exec
INSERT INTO cluster_metric_rollups (resolution, done_until) VALUES (@resolution, @done_until)
ON CONFLICT (resolution) DO UPDATE SET done_until = EXCLUDED.done_until;

-- name: ClusterMetricFirstRaw :one
-- The oldest raw sample's time (where a first rollup starts).
SELECT coalesce(min(at), 'infinity')::timestamptz FROM cluster_metrics;

-- name: ClusterMetricFirst5m :one
SELECT coalesce(min(at), 'infinity')::timestamptz FROM cluster_metrics_5m;

-- name: ClusterMetricRollup5m :execrows
-- The raw samples of [from, until) into 5-minute rows, per cluster.
-- Rates and the median are averaged over the scrapes that reached the
-- control plane, p99 and inflight are the worst, counts the last seen.
-- A window without a successful scrape has no row (a gap).
INSERT INTO cluster_metrics_5m (
    cluster_id, at, samples, read_rate, write_rate, watch_rate, error_rate, latency_p50, latency_p99,
    inflight, objects, watches, nodes_ready, nodes_total, pods_running, pods_total)
SELECT r.cluster_id, date_bin('5 minutes', r.at, 'epoch'), count(*)::int,
       avg(read_rate), avg(write_rate), avg(watch_rate), avg(error_rate), avg(latency_p50), max(latency_p99),
       max(inflight),
       (array_agg(objects ORDER BY r.at DESC) FILTER (WHERE objects IS NOT NULL))[1],
       (array_agg(watches ORDER BY r.at DESC) FILTER (WHERE watches IS NOT NULL))[1],
       (array_agg(nodes_ready ORDER BY r.at DESC) FILTER (WHERE nodes_ready IS NOT NULL))[1],
       (array_agg(nodes_total ORDER BY r.at DESC) FILTER (WHERE nodes_total IS NOT NULL))[1],
       (array_agg(pods_running ORDER BY r.at DESC) FILTER (WHERE pods_running IS NOT NULL))[1],
       (array_agg(pods_total ORDER BY r.at DESC) FILTER (WHERE pods_total IS NOT NULL))[1]
FROM cluster_metrics r
WHERE r.at >= @from_at AND r.at < @until_at AND r.up
GROUP BY r.cluster_id, date_bin('5 minutes', r.at, 'epoch')
ON CONFLICT (cluster_id, at) DO NOTHING;

-- name: ClusterMetricRollup1h :execrows
-- The 5-minute rows of [from, until) into hourly rows, the same way
-- (rates weighted by the scrapes each row stands for).
INSERT INTO cluster_metrics_1h (
    cluster_id, at, samples, read_rate, write_rate, watch_rate, error_rate, latency_p50, latency_p99,
    inflight, objects, watches, nodes_ready, nodes_total, pods_running, pods_total)
SELECT r.cluster_id, date_bin('1 hour', r.at, 'epoch'), sum(samples)::int,
       sum(read_rate * samples) / sum(samples), sum(write_rate * samples) / sum(samples),
       sum(watch_rate * samples) / sum(samples), sum(error_rate * samples) / sum(samples),
       sum(latency_p50 * samples) / sum(samples), max(latency_p99),
       max(inflight),
       (array_agg(objects ORDER BY r.at DESC) FILTER (WHERE objects IS NOT NULL))[1],
       (array_agg(watches ORDER BY r.at DESC) FILTER (WHERE watches IS NOT NULL))[1],
       (array_agg(nodes_ready ORDER BY r.at DESC) FILTER (WHERE nodes_ready IS NOT NULL))[1],
       (array_agg(nodes_total ORDER BY r.at DESC) FILTER (WHERE nodes_total IS NOT NULL))[1],
       (array_agg(pods_running ORDER BY r.at DESC) FILTER (WHERE pods_running IS NOT NULL))[1],
       (array_agg(pods_total ORDER BY r.at DESC) FILTER (WHERE pods_total IS NOT NULL))[1]
FROM cluster_metrics_5m r
WHERE r.at >= @from_at AND r.at < @until_at
GROUP BY r.cluster_id, date_bin('1 hour', r.at, 'epoch')
ON CONFLICT (cluster_id, at) DO NOTHING;

-- name: ClusterMetricsOwnedStatus :one
-- The status of an organization's cluster, whose metrics its members may
-- read; no row for another's.
SELECT status FROM clusters WHERE id = @id AND clusters.org_id = @org_id AND EXISTS (SELECT 1 FROM organization_members om WHERE om.org_id = @org_id AND om.user_id = @user_id AND om.role = ANY (@roles::text[]));

-- name: ClusterMetricWindow :many
-- A cluster's successful scrapes in [since, until], oldest first, with the
-- figures alerts watch.
SELECT at, error_rate, latency_p99
FROM cluster_metrics
WHERE cluster_id = @cluster_id AND up AND at >= @since AND at <= @until
ORDER BY at;

-- name: ClusterMetricAlertOpen :execrows
-- Claims the alert: one row, so the owner is told once.
INSERT INTO cluster_metric_alerts (cluster_id, kind) VALUES (@cluster_id, @kind)
ON CONFLICT DO NOTHING;

-- name: ClusterMetricAlertSetNotification :exec
UPDATE cluster_metric_alerts SET notification_id = @notification_id
WHERE cluster_id = @cluster_id AND kind = @kind;

-- name: ClusterMetricAlertClose :one
-- Closes an open alert, returning its in-app notification (if any); no
-- row when none was open.
DELETE FROM cluster_metric_alerts WHERE cluster_id = @cluster_id AND kind = @kind
RETURNING notification_id;

-- name: ClusterMetricAlertsOpen :many
SELECT kind FROM cluster_metric_alerts WHERE cluster_id = @cluster_id ORDER BY kind;

-- name: MetricsOverviewClusters :many
-- Clusters by status, deleted ones left out.
SELECT status, count(*)::bigint AS clusters FROM clusters WHERE status <> 'deleted'
GROUP BY status ORDER BY status;

-- name: MetricsOverviewNodes :one
-- The recorded nodes of live clusters: Ready and in all.
SELECT count(*) FILTER (WHERE nodes.ready)::bigint AS ready, count(*)::bigint AS total
FROM nodes JOIN clusters ON clusters.id = nodes.cluster_id
WHERE clusters.status <> 'deleted';

-- name: MetricsOverviewJoins :many
-- Nodes that joined with a token, per day (UTC) since a time.
SELECT date_trunc('day', first_seen, 'UTC')::timestamptz AS day, count(*)::bigint AS joins
FROM join_token_nodes WHERE first_seen >= @since
GROUP BY 1 ORDER BY 1;

-- name: MetricsTopRequests :many
-- The control planes that served the most requests a second (reads,
-- writes and watches) on average in their successful scrapes in
-- [since, until], with their average 5xx rate and worst p99.
SELECT cluster_id,
       avg(coalesce(read_rate, 0) + coalesce(write_rate, 0) + coalesce(watch_rate, 0))::float8 AS requests,
       coalesce(avg(error_rate), 0)::float8 AS errors,
       coalesce(max(latency_p99), 0)::float8 AS p99
FROM cluster_metrics
WHERE at >= @since AND at <= @until AND up
GROUP BY cluster_id
ORDER BY requests DESC, cluster_id
LIMIT @max_rows;

-- name: MetricsTopErrors :many
-- The control planes with the highest average 5xx rate (above zero) in
-- their successful scrapes in [since, until] (the columns of
-- MetricsTopRequests).
SELECT cluster_id,
       avg(coalesce(read_rate, 0) + coalesce(write_rate, 0) + coalesce(watch_rate, 0))::float8 AS requests,
       coalesce(avg(error_rate), 0)::float8 AS errors,
       coalesce(max(latency_p99), 0)::float8 AS p99
FROM cluster_metrics
WHERE at >= @since AND at <= @until AND up
GROUP BY cluster_id
HAVING avg(error_rate) > 0
ORDER BY errors DESC, cluster_id
LIMIT @max_rows;

-- name: MetricsOverviewClusterInfo :many
-- The name, owner and open alerts of the overview's control planes.
SELECT clusters.id, clusters.name, clusters.owner_id, users.email AS owner_email,
       EXISTS (SELECT 1 FROM cluster_metric_alerts a WHERE a.cluster_id = clusters.id)::boolean AS alerted
FROM clusters
JOIN users ON users.id = clusters.owner_id
WHERE clusters.id = ANY(@ids::bigint[]);
