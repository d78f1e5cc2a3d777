SELECT 1;

---- create above / drop below ----

SELECT 1;
