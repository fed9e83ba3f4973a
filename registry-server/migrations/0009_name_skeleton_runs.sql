-- The name skeleton also makes `3` one with `e`, and `m`, `w` and `d` one with
-- `rn`, `vv` and `cl`, decomposing the letters (manifest-spec's
-- `names::skeleton`, the same mapping): `rneter` and `rn3ter` look like `meter`.
-- No replacement holds what a later one replaces, so the result is that of
-- replacing each character on its own (`vvv`, `vw` and `wv` are one). The column is dropped and
-- added again so that every existing row's skeleton is computed anew.
--
-- Not a unique index: a publisher may hold look-alikes of their own packages
-- (the publish route refuses a look-alike only of someone else's package).
ALTER TABLE packages DROP COLUMN name_skeleton;

CREATE OR REPLACE FUNCTION ebpkg_name_skeleton(name TEXT) RETURNS TEXT
    LANGUAGE SQL IMMUTABLE STRICT PARALLEL SAFE
    AS $$ SELECT replace(replace(replace(translate(lower(name), '01i53-_', 'ollse'), 'm', 'rn'), 'w', 'vv'), 'd', 'cl') $$;

ALTER TABLE packages ADD COLUMN name_skeleton TEXT GENERATED ALWAYS AS (ebpkg_name_skeleton(name)) STORED;
CREATE INDEX packages_name_skeleton ON packages (name_skeleton);
