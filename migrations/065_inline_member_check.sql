-- org_member_in could never be inlined: PostgreSQL inlines a scalar SQL
-- function only when its body has no sub-select, and its body is one
-- (EXISTS over organization_members). Every query that called it ran it
-- as a function call, planned anew each time, once per row it filtered:
-- about 55 µs each, a hundred or more per page (issue 36). The queries now
-- say the same EXISTS themselves, which the planner runs once per query.
DROP FUNCTION org_member_in(BIGINT, BIGINT, TEXT[]);

---- create above / drop below ----

CREATE FUNCTION org_member_in(org BIGINT, usr BIGINT, roles TEXT[]) RETURNS BOOLEAN
LANGUAGE sql STABLE AS $$
    SELECT EXISTS (
        SELECT 1 FROM organization_members m
        WHERE m.org_id = org AND m.user_id = usr AND m.role = ANY (roles)
    )
$$;
