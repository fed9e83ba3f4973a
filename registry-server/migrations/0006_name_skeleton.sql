-- What a package name looks like (manifest-spec's `names::skeleton`, the same
-- mapping): a new name whose skeleton an existing package has (`dd0s`, `dd_os`
-- beside `ddos`) is refused, so that one package cannot pass for another.
CREATE FUNCTION ebpkg_name_skeleton(name TEXT) RETURNS TEXT
    LANGUAGE SQL IMMUTABLE STRICT PARALLEL SAFE
    AS $$ SELECT translate(lower(name), '015i-_', 'olsl') $$;

ALTER TABLE packages ADD COLUMN name_skeleton TEXT GENERATED ALWAYS AS (ebpkg_name_skeleton(name)) STORED;
CREATE INDEX packages_name_skeleton ON packages (name_skeleton);
