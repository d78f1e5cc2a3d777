-- Placeholder on the profile branch only: migration numbers 005 and 006
-- belong to other branches, and tern refuses a gap before 007. Delete this
-- file when the migration that really has number 005 is merged.
SELECT 1;

---- create above / drop below ----
