//! Rebuild attestations: what someone found when they rebuilt every object a
//! version ships (SPEC.md §4.7) from the version's own sources, with the
//! compiler each object names, and compared the bytes (`ebpkg verify --rebuild
//! --sign`). The predicate of an in-toto Statement v1 whose subjects are the
//! archive and each object, published beside the version like a kernel
//! verification; an install whose trust policy says `[objects] prebuilt =
//! "rebuilt"` accepts a shipped object a trusted one says matched.

use schemars::JsonSchema;
use semver::Version;
use serde::{Deserialize, Serialize};

use super::{AttestedPackage, Attester, Digests, MAX_ITEMS, PredicateError, date_time, text};
use crate::names::PackageName;
use crate::types::{Hook, Sha256Digest};

/// The predicate type: what `cosign verify-blob-attestation --type` names.
pub const REBUILD_PREDICATE_TYPE: &str = "https://ebpkg.dev/attestation/rebuild/v1";

/// The predicate: one version's shipped objects, each rebuilt and compared.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Rebuild {
    pub package: AttestedPackage,
    /// What rebuilt them.
    pub attester: Attester,
    /// When, RFC 3339 (UTC).
    #[schemars(extend("format" = "date-time"))]
    pub rebuilt_at: String,
    pub objects: Vec<RebuiltObject>,
}

/// One shipped object and what its source rebuilt to.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct RebuiltObject {
    /// The object's path in the package, as its ebpkg.toml names it.
    pub object: String,
    pub hook: Hook,
    /// The source it was rebuilt from, as the manifest names it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub source: Option<String>,
    /// The shipped object.
    pub digest: Digests,
    /// The compiler the object names (its DWARF producer), which rebuilt it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub compiler: Option<String>,
    pub result: RebuildResult,
    /// What the rebuild gave, when it gave an object.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rebuilt: Option<Digests>,
    /// Why it did not match, or could not be rebuilt.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
}

/// What comparing the bytes found.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "kebab-case")]
pub enum RebuildResult {
    /// The same bytes.
    Match,
    /// Other bytes (or the source did not compile with that compiler).
    Mismatch,
    /// It could not be rebuilt (the compiler it names was missing).
    CannotRebuild,
}

impl RebuildResult {
    pub fn name(self) -> &'static str {
        match self {
            RebuildResult::Match => "match",
            RebuildResult::Mismatch => "mismatch",
            RebuildResult::CannotRebuild => "cannot-rebuild",
        }
    }
}

impl Rebuild {
    /// Reads a predicate and checks it is within bounds and about `name@version`
    /// with the archive `archive`.
    pub fn from_value(
        value: &serde_json::Value,
        name: &PackageName,
        version: &Version,
        archive: &Sha256Digest,
    ) -> Result<Rebuild, PredicateError> {
        let p = Rebuild::deserialize(value).map_err(|e| PredicateError(format!("its predicate: {e}")))?;
        p.check()?;
        p.package.is_about(name, version, archive, "rebuilt")?;
        Ok(p)
    }

    /// Bounds and printable text, as for kernel verifications; a match names
    /// the shipped digest as what was rebuilt.
    pub fn check(&self) -> Result<(), PredicateError> {
        if self.objects.len() > MAX_ITEMS {
            return Err(PredicateError(format!("{} objects, more than {MAX_ITEMS}", self.objects.len())));
        }
        text("attester.tool", &self.attester.tool)?;
        date_time("rebuiltAt", &self.rebuilt_at)?;
        for o in &self.objects {
            text("object", &o.object)?;
            for (what, s) in [("source", &o.source), ("compiler", &o.compiler), ("reason", &o.reason)] {
                if let Some(s) = s {
                    text(what, s)?;
                }
            }
            if o.result == RebuildResult::Match && o.rebuilt.is_some_and(|r| r.sha256 != o.digest.sha256) {
                return Err(PredicateError(format!("{} is called a match of another object", o.object)));
            }
        }
        Ok(())
    }

    /// Whether it says the shipped object with `digest` matched its source.
    pub fn matched(&self, digest: &Sha256Digest) -> bool {
        self.objects.iter().any(|o| o.result == RebuildResult::Match && &o.digest.sha256 == digest)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample() -> Rebuild {
        Rebuild {
            package: AttestedPackage {
                name: PackageName::new("flow").unwrap(),
                version: Version::new(1, 0, 0),
                archive: Digests { sha256: Sha256Digest([7; 32]) },
            },
            attester: Attester { tool: "ebpkg 0.1.0".into() },
            rebuilt_at: "2026-12-01T00:00:00Z".into(),
            objects: vec![RebuiltObject {
                object: "prebuilt/xdp/src/flow.bpf.c.o".into(),
                hook: Hook::Xdp,
                source: Some("src/flow.bpf.c".into()),
                digest: Digests { sha256: Sha256Digest([1; 32]) },
                compiler: Some("Debian clang version 14.0.6".into()),
                result: RebuildResult::Match,
                rebuilt: Some(Digests { sha256: Sha256Digest([1; 32]) }),
                reason: None,
            }],
        }
    }

    #[test]
    fn a_rebuild_reads_back_and_is_checked_against_the_version() {
        let p = sample();
        let value = serde_json::to_value(&p).unwrap();
        assert_eq!(value["objects"][0]["result"], "match");
        let name = PackageName::new("flow").unwrap();
        let v = Version::new(1, 0, 0);
        assert_eq!(Rebuild::from_value(&value, &name, &v, &Sha256Digest([7; 32])), Ok(p.clone()));
        assert!(Rebuild::from_value(&value, &name, &v, &Sha256Digest([8; 32])).is_err());
        assert!(Rebuild::from_value(&value, &name, &Version::new(1, 0, 1), &Sha256Digest([7; 32])).is_err());
        assert!(p.matched(&Sha256Digest([1; 32])));
        assert!(!p.matched(&Sha256Digest([2; 32])));
        let mut lying = p.clone();
        lying.objects[0].rebuilt = Some(Digests { sha256: Sha256Digest([3; 32]) });
        assert!(lying.check().is_err());
        let mut hostile = p;
        hostile.objects[0].reason = Some("\u{1b}[2J".into());
        assert!(hostile.check().is_err_and(|e| e.0.contains("control character")));
    }
}
