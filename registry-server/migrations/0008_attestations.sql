-- Kernel verification attestations (docs/SECURITY.md, "Kernel verification
-- attestations"): Sigstore bundles holding an in-toto Statement about one
-- version's archive, signed with a live key of one of the package's owners.
-- Rows are never rewritten; a version's served file is rebuilt from them,
-- oldest first, in the transaction that adds one, and TUF signs it there too.
CREATE TABLE attestations (
    id          BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    version_id  BIGINT NOT NULL REFERENCES versions(id) ON DELETE CASCADE,
    -- The bundle's JSON exactly as uploaded.
    bundle      TEXT NOT NULL CHECK (octet_length(bundle) BETWEEN 1 AND 1048576),
    -- SHA-256 of `bundle`: the same upload twice is one attestation.
    sha256      BYTEA NOT NULL CHECK (octet_length(sha256) = 32),
    -- The publisher key its signature verified with.
    key_id      BYTEA NOT NULL REFERENCES publisher_keys(key_id),
    uploaded_by BIGINT NOT NULL REFERENCES users(id),
    created_at  TIMESTAMPTZ NOT NULL DEFAULT now(),
    UNIQUE (version_id, sha256)
);

-- The file `GET /api/v1/packages/{name}/{version}/attestations` serves (and
-- TUF signs as `attestations/<index path>/<version>.json`): no row, no
-- attestation.
CREATE TABLE attestation_files (
    version_id BIGINT PRIMARY KEY REFERENCES versions(id) ON DELETE CASCADE,
    bytes      BYTEA NOT NULL CHECK (octet_length(bytes) <= 8388608),
    sha256     BYTEA NOT NULL CHECK (octet_length(sha256) = 32),
    updated_at TIMESTAMPTZ NOT NULL DEFAULT now()
);
