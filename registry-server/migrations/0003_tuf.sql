-- TUF metadata (docs/SECURITY.md, "Registry metadata"): one row per file. A
-- publish or yank rewrites the changed index file's bin, the snapshot and the
-- timestamp in its own transaction, so the metadata always signs exactly the
-- index files served. No rows: the registry has no TUF metadata.
CREATE TABLE tuf_files (
    name       TEXT PRIMARY KEY CHECK (name ~ '^[0-9a-z.-]+\.json$'),
    bytes      BYTEA NOT NULL CHECK (octet_length(bytes) <= 16777216),
    updated_at TIMESTAMPTZ NOT NULL DEFAULT now()
);
