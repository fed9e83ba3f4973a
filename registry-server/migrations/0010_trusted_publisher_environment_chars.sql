-- A trusted publisher's environment is 1 to 255 characters, as the API says
-- (`registry_api::limits::ENVIRONMENT_MAX`, stated in /api/openapi.json); the
-- CHECK counted bytes, so a name of 255 non-ASCII characters passed the
-- handler's check and failed here (a 500).
ALTER TABLE trusted_publishers DROP CONSTRAINT trusted_publishers_environment_check;
ALTER TABLE trusted_publishers
    ADD CONSTRAINT trusted_publishers_environment_check CHECK (char_length(environment) BETWEEN 1 AND 255);
