-- name: PlanForUser :one
-- The user's plan, or the default plan when the user has none.
SELECT plans.* FROM plans
WHERE plans.id = coalesce((SELECT plan_id FROM users WHERE users.id = @user_id), (SELECT id FROM plans WHERE is_default));
