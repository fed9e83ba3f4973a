-- The registry's state. Signatures and TUF metadata (next) add tables beside
-- these; published rows are never rewritten.

CREATE TABLE users (
    id          BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    login       TEXT NOT NULL UNIQUE CHECK (login ~ '^[A-Za-z0-9][A-Za-z0-9_-]{0,38}$'),
    created_at  TIMESTAMPTZ NOT NULL DEFAULT now()
);

-- Tokens are stored only as the SHA-256 of their secret.
CREATE TABLE api_tokens (
    id            BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    user_id       BIGINT NOT NULL REFERENCES users(id) ON DELETE CASCADE,
    name          TEXT NOT NULL,
    token_sha256  BYTEA NOT NULL UNIQUE CHECK (octet_length(token_sha256) = 32),
    -- Empty: every power, including managing tokens.
    scopes        TEXT[] NOT NULL DEFAULT '{}',
    -- Empty: every package.
    package_globs TEXT[] NOT NULL DEFAULT '{}',
    created_at    TIMESTAMPTZ NOT NULL DEFAULT now(),
    expires_at    TIMESTAMPTZ,
    revoked_at    TIMESTAMPTZ,
    last_used_at  TIMESTAMPTZ
);
CREATE INDEX api_tokens_user ON api_tokens (user_id);

CREATE TABLE packages (
    id                BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    name              TEXT NOT NULL,
    -- Lowercase, `-` as `_` (SPEC §2.1): two names equal here are one package.
    normalized_name   TEXT NOT NULL UNIQUE,
    created_at        TIMESTAMPTZ NOT NULL DEFAULT now(),
    updated_at        TIMESTAMPTZ NOT NULL DEFAULT now(),
    -- The sparse index file, rebuilt in the transaction that changes a version,
    -- so what is served is always exactly the versions table.
    index_file        TEXT NOT NULL,
    index_sha256      BYTEA NOT NULL,
    index_modified_at TIMESTAMPTZ NOT NULL,
    -- The version search describes, and what it is searched by.
    described_version TEXT NOT NULL,
    all_yanked        BOOLEAN NOT NULL,
    description       TEXT,
    keywords          TEXT[] NOT NULL DEFAULT '{}',
    programs          TEXT[] NOT NULL DEFAULT '{}',
    search            TSVECTOR NOT NULL,
    downloads         BIGINT NOT NULL DEFAULT 0
);
CREATE INDEX packages_search ON packages USING GIN (search);
CREATE INDEX packages_updated ON packages (updated_at DESC);

CREATE TABLE package_owners (
    package_id BIGINT NOT NULL REFERENCES packages(id) ON DELETE CASCADE,
    user_id    BIGINT NOT NULL REFERENCES users(id) ON DELETE CASCADE,
    added_at   TIMESTAMPTZ NOT NULL DEFAULT now(),
    added_by   BIGINT REFERENCES users(id),
    PRIMARY KEY (package_id, user_id)
);
CREATE INDEX package_owners_user ON package_owners (user_id);

CREATE TABLE versions (
    id           BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    package_id   BIGINT NOT NULL REFERENCES packages(id) ON DELETE CASCADE,
    -- As published (with build metadata, if any).
    num          TEXT NOT NULL,
    -- Without build metadata: `1.0.0+a` and `1.0.0+b` are one version.
    num_no_build TEXT NOT NULL,
    cksum        TEXT NOT NULL CHECK (cksum ~ '^[0-9a-f]{64}$'),
    size         BIGINT NOT NULL,
    yanked       BOOLEAN NOT NULL DEFAULT false,
    -- The index line as published; only its `yanked` field ever changes.
    index_line   TEXT NOT NULL,
    license      TEXT,
    readme       TEXT,
    published_by BIGINT NOT NULL REFERENCES users(id),
    created_at   TIMESTAMPTZ NOT NULL DEFAULT now(),
    yanked_at    TIMESTAMPTZ,
    downloads    BIGINT NOT NULL DEFAULT 0,
    UNIQUE (package_id, num_no_build)
);

-- Publish rate limits, per user and action: a token bucket shared by every replica.
CREATE TABLE publish_limit_buckets (
    user_id     BIGINT NOT NULL REFERENCES users(id) ON DELETE CASCADE,
    action      TEXT NOT NULL,
    tokens      DOUBLE PRECISION NOT NULL,
    last_refill TIMESTAMPTZ NOT NULL,
    PRIMARY KEY (user_id, action)
);
