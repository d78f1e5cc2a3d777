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

-- name: ClusterMetricLatestByResource :one
-- The stored objects per resource a cluster's last successful scrape saw
-- in the day before.
SELECT at, by_resource FROM cluster_metrics
WHERE cluster_id = @cluster_id AND up AND at >= @since
ORDER BY at DESC LIMIT 1;

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
-- The status of a user's cluster, whose metrics they may read; no row for
-- another user's.
SELECT status FROM clusters WHERE id = @id AND owner_id = @owner_id;

-- name: ClusterMetricWindow :one
-- A cluster's successful scrapes since a time: how many, the first one's
-- time, whether every one had its 5xx rate above error_rate and every one
-- with a latency its p99 above latency_p99, and the last one's figures
-- (0 for none: no requests finished, none were slow).
SELECT count(*)::int AS samples,
       coalesce(min(at), 'infinity')::timestamptz AS first_at,
       coalesce(bool_and(error_rate > @error_rate::real), false)::boolean AS errors_high,
       coalesce(bool_and(latency_p99 > @latency_p99::real), false)::boolean AS latency_high,
       coalesce((array_agg(error_rate ORDER BY at DESC))[1], 0)::real AS last_error_rate,
       coalesce((array_agg(latency_p99 ORDER BY at DESC))[1], 0)::real AS last_latency_p99
FROM cluster_metrics
WHERE cluster_id = @cluster_id AND up AND at >= @since;

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

-- name: MetricsOverviewBusiest :many
-- The control planes that served the most requests a second (reads,
-- writes and watches) in their scrapes since a time, with their 5xx
-- rate, worst p99, and whether an alert is open for them (the columns of
-- MetricsOverviewErroring).
SELECT m.cluster_id, clusters.name, clusters.owner_id, users.email AS owner_email,
       avg(coalesce(m.read_rate, 0) + coalesce(m.write_rate, 0) + coalesce(m.watch_rate, 0))::float8 AS requests,
       coalesce(avg(m.error_rate), 0)::float8 AS errors,
       coalesce(max(m.latency_p99), 0)::float8 AS p99,
       EXISTS (SELECT 1 FROM cluster_metric_alerts a WHERE a.cluster_id = m.cluster_id)::boolean AS alerted
FROM cluster_metrics m
JOIN clusters ON clusters.id = m.cluster_id
JOIN users ON users.id = clusters.owner_id
WHERE m.at >= @since AND m.up
GROUP BY m.cluster_id, clusters.name, clusters.owner_id, users.email
ORDER BY requests DESC, m.cluster_id
LIMIT @max_rows;

-- name: MetricsOverviewErroring :many
-- The control planes with the highest 5xx rate in their scrapes since a
-- time (above zero), and whether an alert is open for them.
SELECT m.cluster_id, clusters.name, clusters.owner_id, users.email AS owner_email,
       avg(coalesce(m.read_rate, 0) + coalesce(m.write_rate, 0) + coalesce(m.watch_rate, 0))::float8 AS requests,
       avg(m.error_rate)::float8 AS errors,
       coalesce(max(m.latency_p99), 0)::float8 AS p99,
       EXISTS (SELECT 1 FROM cluster_metric_alerts a WHERE a.cluster_id = m.cluster_id)::boolean AS alerted
FROM cluster_metrics m
JOIN clusters ON clusters.id = m.cluster_id
JOIN users ON users.id = clusters.owner_id
WHERE m.at >= @since AND m.up AND m.error_rate > 0
GROUP BY m.cluster_id, clusters.name, clusters.owner_id, users.email
ORDER BY errors DESC, m.cluster_id
LIMIT @max_rows;
