-- Publish rate limits keep what was spent rather than what is left: a bucket's
-- size (`--new-package-burst`) then takes effect at once when the operator
-- changes it, instead of users waiting out the old, smaller bucket. Existing
-- buckets start full.
ALTER TABLE publish_limit_buckets ADD COLUMN spent DOUBLE PRECISION NOT NULL DEFAULT 0;
ALTER TABLE publish_limit_buckets DROP COLUMN tokens;
ALTER TABLE publish_limit_buckets RENAME COLUMN last_refill TO spent_at;
