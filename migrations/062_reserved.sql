-- Number 062 is another branch's (issue 40); this step that does nothing
-- keeps the sequence whole on this branch until they meet. Drop it when
-- merging.
SELECT 1;

---- create above / drop below ----

SELECT 1;
