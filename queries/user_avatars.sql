-- name: UserAvatarGet :one
SELECT * FROM user_avatars WHERE user_id = @user_id;

-- name: UserAvatarETag :one
-- The current avatar's version, without its bytes, for pages that link to it.
SELECT etag FROM user_avatars WHERE user_id = @user_id;

-- name: UserAvatarSet :exec
INSERT INTO user_avatars (user_id, image, etag)
VALUES (@user_id, @image, @etag)
ON CONFLICT (user_id) DO UPDATE SET image = EXCLUDED.image, etag = EXCLUDED.etag, updated_at = now();

-- name: UserAvatarDelete :execrows
DELETE FROM user_avatars WHERE user_id = @user_id;
