//! Where a deployed package came from, as plans and records name it.

use std::path::PathBuf;

use ebpkg_spec::RegistryId;
use serde::{Deserialize, Serialize};

/// Where a deployed package came from: a registry, or the project's own directory.
/// Written as it always was: the registry's URL, or `path+file://` and the directory.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum PackageSource {
    Registry(RegistryId),
    /// The project being installed, from its directory (canonical).
    Path(PathBuf),
}

/// How a project's directory is written (cargo's path sources are `path+file://`).
const PATH_PREFIX: &str = "path+file://";

impl PackageSource {
    /// The registry it came from, if it came from one.
    pub fn registry(&self) -> Option<&RegistryId> {
        match self {
            PackageSource::Registry(id) => Some(id),
            PackageSource::Path(_) => None,
        }
    }
}

impl std::fmt::Display for PackageSource {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            PackageSource::Registry(id) => write!(f, "{id}"),
            PackageSource::Path(dir) => write!(f, "{PATH_PREFIX}{}", dir.display()),
        }
    }
}

impl Serialize for PackageSource {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> std::result::Result<S::Ok, S::Error> {
        serializer.collect_str(self)
    }
}

/// A registry's URL is read by its rules (`RegistryId`'s); a record naming one that
/// breaks them is damaged, and says where.
impl<'de> Deserialize<'de> for PackageSource {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> std::result::Result<Self, D::Error> {
        let text = std::borrow::Cow::<str>::deserialize(deserializer)?;
        match text.strip_prefix(PATH_PREFIX) {
            Some(dir) => Ok(PackageSource::Path(PathBuf::from(dir))),
            None => RegistryId::parse_url(&text).map(PackageSource::Registry).map_err(serde::de::Error::custom),
        }
    }
}
