-- name: NodeOperationCreate :one
INSERT INTO node_operations (cluster_id, node_name, kind)
VALUES (@cluster_id, @node_name, @kind)
RETURNING *;

-- name: NodeOperationGet :one
SELECT * FROM node_operations WHERE id = @id AND cluster_id = @cluster_id;

-- name: NodeOperationGetByID :one
SELECT * FROM node_operations WHERE id = @id;

-- name: NodeOperationLatest :one
SELECT * FROM node_operations
WHERE cluster_id = @cluster_id AND node_name = @node_name
ORDER BY id DESC LIMIT 1;

-- name: NodeOperationRunning :one
SELECT * FROM node_operations
WHERE cluster_id = @cluster_id AND node_name = @node_name AND status = 'running'
ORDER BY id DESC LIMIT 1;

-- name: NodeOperationListRunning :many
SELECT * FROM node_operations WHERE status = 'running' ORDER BY id;

-- name: NodeOperationAppend :exec
UPDATE node_operations
SET progress = array_append(progress, @line::text), updated_at = now()
WHERE id = @id;

-- name: NodeOperationFinish :exec
UPDATE node_operations
SET status = @status, message = @message, updated_at = now()
WHERE id = @id AND status = 'running';
