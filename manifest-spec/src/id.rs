//! The identity of one version of one package.

use std::fmt;

use semver::Version;
use serde::{Deserialize, Serialize};

use crate::PackageName;

/// `name@version`: what every stage after resolution calls a package by — build
/// units, deployment plans and records, events and messages.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub struct PackageId {
    pub name: PackageName,
    pub version: Version,
}

impl PackageId {
    pub fn new(name: PackageName, version: Version) -> PackageId {
        PackageId { name, version }
    }
}

impl fmt::Display for PackageId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}@{}", self.name, self.version)
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn shown_and_stored_as_before() {
        let id = PackageId::new(PackageName::new("meter").unwrap(), Version::new(1, 2, 0));
        assert_eq!(id.to_string(), "meter@1.2.0");
        let json = serde_json::to_string(&id).unwrap();
        assert_eq!(json, r#"{"name":"meter","version":"1.2.0"}"#);
        assert_eq!(serde_json::from_str::<PackageId>(&json).unwrap(), id);
        assert!(serde_json::from_str::<PackageId>(r#"{"name":"Bad Name","version":"1.0.0"}"#).is_err());
    }
}
