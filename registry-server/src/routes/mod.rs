//! The HTTP routes, one module per resource. Each handler carries its OpenAPI
//! description (`utoipa::path`), from which `/api/openapi.json` is generated.

pub mod attestations;
pub mod index;
pub mod keys;
pub mod ops;
pub mod owners;
pub mod packages;
pub mod publish;
pub mod tokens;
pub mod trusted_publishing;

use ebpkg_spec::PackageName;
use semver::Version;

use crate::error::{ApiError, ApiResult};

/// A package name from a URL path, checked as a name.
pub fn path_name(name: &str) -> ApiResult<PackageName> {
    PackageName::new(name).map_err(|e| ApiError::not_found(format!("`{name}` is not a package name: {e}")))
}

/// A version from a URL path.
pub fn path_version(version: &str) -> ApiResult<Version> {
    Version::parse(version).map_err(|e| ApiError::not_found(format!("`{version}` is not a version: {e}")))
}
