-- Control-plane metrics (issue 15). A scrape per ready cluster every
-- interval writes one row to cluster_metrics; metrics_maintain rolls the
-- rows up into 5-minute and hourly rows and drops whole partitions once
-- they are past their retention, so pruning never deletes row by row.
-- Partitions are by day (raw, 5-minute) and by month (hourly); the job
-- makes them ahead of time (metrics.Maintain), and a write that finds none
-- makes its own. No foreign key to clusters: a cluster row is never
-- deleted, and a key would cost every insert a lookup.
--
-- A row with up false is a scrape that could not reach the control plane:
-- a gap, not zeros. Rates are per second over the interval before at;
-- latencies in seconds; counts as scraped.
CREATE TABLE cluster_metrics (
    cluster_id BIGINT NOT NULL,
    at TIMESTAMPTZ NOT NULL,
    up BOOLEAN NOT NULL,
    read_rate REAL,
    write_rate REAL,
    watch_rate REAL,
    error_rate REAL,
    latency_p50 REAL,
    latency_p99 REAL,
    inflight REAL,
    objects BIGINT,
    watches BIGINT,
    nodes_ready INTEGER,
    nodes_total INTEGER,
    pods_running INTEGER,
    pods_total INTEGER,
    -- Stored objects per resource, as last scraped in the interval.
    by_resource JSONB,
    PRIMARY KEY (cluster_id, at)
) PARTITION BY RANGE (at);

-- The admin overview reads the last minutes of every cluster.
CREATE INDEX cluster_metrics_at_idx ON cluster_metrics (at);

-- The rollups: samples is how many raw rows (up) the row stands for.
-- Rates and the median are averaged, p99 and inflight are the interval's
-- worst, counts the last seen.
CREATE TABLE cluster_metrics_5m (
    cluster_id BIGINT NOT NULL,
    at TIMESTAMPTZ NOT NULL,
    samples INTEGER NOT NULL,
    read_rate REAL,
    write_rate REAL,
    watch_rate REAL,
    error_rate REAL,
    latency_p50 REAL,
    latency_p99 REAL,
    inflight REAL,
    objects BIGINT,
    watches BIGINT,
    nodes_ready INTEGER,
    nodes_total INTEGER,
    pods_running INTEGER,
    pods_total INTEGER,
    PRIMARY KEY (cluster_id, at)
) PARTITION BY RANGE (at);

CREATE TABLE cluster_metrics_1h (
    cluster_id BIGINT NOT NULL,
    at TIMESTAMPTZ NOT NULL,
    samples INTEGER NOT NULL,
    read_rate REAL,
    write_rate REAL,
    watch_rate REAL,
    error_rate REAL,
    latency_p50 REAL,
    latency_p99 REAL,
    inflight REAL,
    objects BIGINT,
    watches BIGINT,
    nodes_ready INTEGER,
    nodes_total INTEGER,
    pods_running INTEGER,
    pods_total INTEGER,
    PRIMARY KEY (cluster_id, at)
) PARTITION BY RANGE (at);

-- The last scrape's cumulative counters of each cluster, which the next
-- scrape's rates are the difference from.
CREATE TABLE cluster_metric_counters (
    cluster_id BIGINT PRIMARY KEY REFERENCES clusters(id) ON DELETE CASCADE,
    scraped_at TIMESTAMPTZ NOT NULL,
    counters JSONB NOT NULL
);

-- How far each rollup has got: every window before done_until is rolled
-- up (resolution '5m' from the raw rows, '1h' from the 5-minute ones).
CREATE TABLE cluster_metric_rollups (
    resolution TEXT PRIMARY KEY,
    done_until TIMESTAMPTZ NOT NULL
);

-- A control plane's open alerts: a 5xx rate or p99 latency above the
-- admin's threshold for ten minutes. The row is the claim that the owner
-- was told once; it goes when the figure is back under the threshold.
CREATE TABLE cluster_metric_alerts (
    cluster_id BIGINT NOT NULL REFERENCES clusters(id) ON DELETE CASCADE,
    kind TEXT NOT NULL,
    opened_at TIMESTAMPTZ NOT NULL DEFAULT now(),
    notification_id BIGINT,
    PRIMARY KEY (cluster_id, kind)
);

-- Joins per day, for the admin overview.
CREATE INDEX join_token_nodes_first_seen_idx ON join_token_nodes (first_seen);

-- Every ready cluster is scraped from now on, spread over a minute.
INSERT INTO cluster_checks (cluster_id, kind, due_at)
SELECT id, 'metrics_scrape', now() + random() * interval '1 minute' FROM clusters WHERE status = 'ready'
ON CONFLICT DO NOTHING;

---- create above / drop below ----

DELETE FROM cluster_checks WHERE kind = 'metrics_scrape';
DROP TABLE cluster_metric_alerts;
DROP INDEX join_token_nodes_first_seen_idx;
DROP TABLE cluster_metric_rollups;
DROP TABLE cluster_metric_counters;
DROP TABLE cluster_metrics_1h;
DROP TABLE cluster_metrics_5m;
DROP TABLE cluster_metrics;
