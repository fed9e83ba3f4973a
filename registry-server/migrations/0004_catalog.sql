-- The web catalog (registry-server/src/catalog): what its pages show that the
-- index does not carry.

-- Close names for "no such package" pages (pg_trgm is a trusted extension: the
-- database's owner may create it).
CREATE EXTENSION IF NOT EXISTS pg_trgm;
CREATE INDEX packages_name_trgm ON packages USING GIN (normalized_name gin_trgm_ops);
CREATE INDEX packages_created ON packages (created_at DESC);

-- The manifest as published (its docs: arguments, return values, maps, loaders'
-- configuration) and each chain's source, by chain name. NULL for versions
-- published before this migration: their pages show what the index line holds.
ALTER TABLE versions
    ADD COLUMN manifest      TEXT CHECK (octet_length(manifest) <= 1048576),
    ADD COLUMN chain_sources JSONB CHECK (octet_length(chain_sources::text) <= 4194304);

-- The packages (normalized names, this registry's only) the described version
-- depends on, kept by the same refresh that rebuilds the index file: "dependents"
-- is then one indexed lookup.
ALTER TABLE packages ADD COLUMN depends_on TEXT[] NOT NULL DEFAULT '{}';
UPDATE packages p SET depends_on = coalesce((
    SELECT array_agg(DISTINCT lower(replace(d ->> 'name', '-', '_')))
    FROM versions v, jsonb_array_elements(v.index_line::jsonb -> 'deps') d
    WHERE v.package_id = p.id AND v.num = p.described_version AND d ->> 'registry' IS NULL), '{}');
CREATE INDEX packages_depends_on ON packages USING GIN (depends_on);
