-- Publish rate limits keep what was spent rather than what is left: a bucket's
-- size (`--new-package-burst`) then takes effect at once when the operator
-- changes it, instead of users waiting out the old, smaller bucket. The new
-- columns sit beside the old ones (given defaults), so replicas of the previous
-- release keep working during a rolling upgrade; buckets start full.
ALTER TABLE publish_limit_buckets
    ADD COLUMN spent DOUBLE PRECISION NOT NULL DEFAULT 0,
    ADD COLUMN spent_at TIMESTAMPTZ NOT NULL DEFAULT now(),
    ALTER COLUMN tokens SET DEFAULT 0,
    ALTER COLUMN last_refill SET DEFAULT now();
