-- name: BrandingLogoGet :one
SELECT image, content_type, etag FROM branding_logo WHERE singleton;

-- name: BrandingLogoSet :exec
INSERT INTO branding_logo (image, content_type, etag) VALUES (@image, @content_type, @etag)
ON CONFLICT (singleton) DO UPDATE
SET image = EXCLUDED.image, content_type = EXCLUDED.content_type, etag = EXCLUDED.etag, updated_at = now();

-- name: BrandingLogoDelete :exec
DELETE FROM branding_logo;
