-- Publisher keys and signed versions (docs/SECURITY.md, "Publisher signatures").
-- A key id is the SHA-256 of the key's SPKI DER; a key belongs to the one user
-- who proved holding it when registering it. Revocation is permanent: a revoked
-- key id cannot be registered again, by anyone.

CREATE TABLE publisher_keys (
    key_id     BYTEA PRIMARY KEY CHECK (octet_length(key_id) = 32),
    user_id    BIGINT NOT NULL REFERENCES users(id) ON DELETE RESTRICT,
    spki_der   BYTEA NOT NULL CHECK (octet_length(spki_der) BETWEEN 1 AND 1024),
    created_at TIMESTAMPTZ NOT NULL DEFAULT now(),
    revoked_at TIMESTAMPTZ
);
CREATE INDEX publisher_keys_user ON publisher_keys (user_id);

-- The key a version was signed with and its Sigstore bundle, as published; NULL
-- for versions published unsigned (where the registry allows it).
ALTER TABLE versions
    ADD COLUMN signed_by BYTEA REFERENCES publisher_keys(key_id),
    ADD COLUMN bundle    TEXT CHECK (octet_length(bundle) <= 65536),
    ADD CONSTRAINT versions_signed_with_bundle CHECK ((signed_by IS NULL) = (bundle IS NULL));
