//! The search's query parameters (`?q=&page=&per_page=`): the API's search
//! (`routes::packages::search`) and the catalog's search page take the same ones,
//! checked against the same limits.

use ebpkg_spec::registry_api::limits;
use serde::Deserialize;

#[derive(Debug, Deserialize, utoipa::IntoParams)]
pub struct SearchParams {
    /// Matched against names, keywords, program names and descriptions; empty:
    /// every package. At most 256 characters, no control character.
    #[serde(default)]
    #[param(schema_with = search_query_schema)]
    pub q: String,
    /// From 1 to 10000 [default: 1].
    #[serde(default)]
    #[param(schema_with = page_schema)]
    pub page: Option<u32>,
    /// From 1 to 100 [default: 20].
    #[serde(default)]
    #[param(schema_with = per_page_schema)]
    pub per_page: Option<u32>,
}

fn search_query_schema() -> utoipa::openapi::schema::Object {
    utoipa::openapi::schema::ObjectBuilder::new()
        .schema_type(utoipa::openapi::schema::Type::String)
        .max_length(Some(limits::SEARCH_QUERY_MAX))
        .pattern(Some(limits::SEARCH_QUERY_PATTERN))
        .build()
}

fn page_number(max: u32) -> utoipa::openapi::schema::Object {
    utoipa::openapi::schema::ObjectBuilder::new()
        .schema_type(utoipa::openapi::schema::Type::Integer)
        .minimum(Some(1))
        .maximum(Some(max))
        .build()
}

fn page_schema() -> utoipa::openapi::schema::Object {
    page_number(limits::MAX_PAGE)
}

fn per_page_schema() -> utoipa::openapi::schema::Object {
    page_number(limits::MAX_PER_PAGE)
}
