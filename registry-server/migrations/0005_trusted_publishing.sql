-- Trusted publishing (docs/SECURITY.md, "Trusted publishing"): per package, the
-- CI identities (an OIDC issuer's repository and workflow, and optionally the
-- environment) whose tokens may be exchanged for a short-lived publish token.
CREATE TABLE trusted_publishers (
    id          BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    package_id  BIGINT NOT NULL REFERENCES packages(id) ON DELETE CASCADE,
    issuer      TEXT NOT NULL CHECK (octet_length(issuer) BETWEEN 1 AND 512),
    repository  TEXT NOT NULL CHECK (repository ~ '^[A-Za-z0-9_.-]+/[A-Za-z0-9_.-]+$'),
    workflow    TEXT NOT NULL CHECK (workflow ~ '^[A-Za-z0-9_.-]+\.ya?ml$'),
    -- NULL: any environment (or none).
    environment TEXT CHECK (octet_length(environment) BETWEEN 1 AND 255),
    -- The owner who configured it: the minted tokens act as this user, so a
    -- publish through it is attributed to them, and it stops working when they
    -- stop being an owner.
    created_by  BIGINT NOT NULL REFERENCES users(id) ON DELETE CASCADE,
    created_at  TIMESTAMPTZ NOT NULL DEFAULT now()
);
CREATE UNIQUE INDEX trusted_publishers_unique
    ON trusted_publishers (package_id, issuer, repository, workflow, coalesce(environment, ''));
CREATE INDEX trusted_publishers_identity ON trusted_publishers (issuer, repository);

-- Every OIDC token exchanged, until it expires: a token is good for one
-- exchange (the primary key makes a replay fail even when two race).
CREATE TABLE trusted_publishing_jtis (
    issuer     TEXT NOT NULL,
    jti        TEXT NOT NULL CHECK (octet_length(jti) BETWEEN 1 AND 256),
    expires_at TIMESTAMPTZ NOT NULL,
    PRIMARY KEY (issuer, jti)
);
CREATE INDEX trusted_publishing_jtis_expiry ON trusted_publishing_jtis (expires_at);
