//! Kernel verification attestations: what a publisher observed when one version
//! of a package was put through a kernel's verifier — per program, loader and
//! chain, per kernel. The predicate of an in-toto Statement v1 (the envelope and
//! its signature are `ebpkg-signing`'s), published beside the version and read by
//! `ebpkg install` before it builds anything.
//!
//! Field names are camelCase, as in-toto's own and SLSA's predicates are, so that
//! policy engines that read those read this one alike.

use std::fmt;

use schemars::JsonSchema;
use semver::Version;
use serde::{Deserialize, Serialize};

use crate::names::PackageName;
use crate::types::{Hook, Sha256Digest};

pub mod rebuild;

/// The predicate type: what `cosign verify-blob-attestation --type` names.
pub const PREDICATE_TYPE: &str = "https://ebpkg.dev/attestation/kernel-verification/v1";

/// Most kernels one attestation covers, items per kernel, and bytes of one
/// reason: an attestation is read by every install of its version, and a
/// hostile one must cost little.
pub const MAX_KERNELS: usize = 64;
pub const MAX_ITEMS: usize = 1024;
pub const MAX_TEXT: usize = 2048;
/// Text without control characters (Unicode `Cc`, what `char::is_control`
/// matches): what the schemas say of the text [`KernelVerification::check`]
/// checks.
pub const NO_CONTROL_PATTERN: &str = r"^[^\x00-\x1f\x7f-\x9f]*$";

/// The TUF target name of a version's attestation file (`ebpkg-tuf` signs it
/// like an index file), and its path in a directory registry: under the
/// package's normalized name, so that every spelling of it finds one file.
pub fn attestation_target(name: &PackageName, version: &Version) -> String {
    format!("attestations/{}/{version}.json", crate::index::index_path(&name.normalized()))
}

/// The name an archive goes by as the Statement's first subject.
pub fn archive_subject(name: &PackageName, version: &Version) -> String {
    format!("{name}-{version}.tar.gz")
}

/// The name a portable object goes by as a subject: the package, then the
/// object as `ebpkg build --out-dir` names it.
pub fn object_subject(name: &PackageName, version: &Version, object: &str, hook: Hook) -> String {
    format!("{name}@{version}/{}.{}.o", object.replace('/', "_"), hook.name())
}

/// A digest as in-toto writes one (`{"sha256": "…"}`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct Digests {
    pub sha256: Sha256Digest,
}

/// The predicate: one package version, observed on one or more kernels.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct KernelVerification {
    pub package: AttestedPackage,
    /// What made the observations.
    pub attester: Attester,
    pub kernels: Vec<KernelObservation>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct AttestedPackage {
    pub name: PackageName,
    #[schemars(with = "String")]
    pub version: Version,
    /// The archive the registry serves for this version.
    pub archive: Digests,
}

impl AttestedPackage {
    /// Whether a predicate names `name@version` with the archive `archive`;
    /// `did` is what the attester did to the archive ("observed", "rebuilt").
    pub(crate) fn is_about(
        &self,
        name: &PackageName,
        version: &Version,
        archive: &Sha256Digest,
        did: &str,
    ) -> Result<(), PredicateError> {
        if self.name.normalized() != name.normalized() || &self.version != version {
            return Err(PredicateError(format!("it is about {}@{}, not {name}@{version}", self.name, self.version)));
        }
        if &self.archive.sha256 != archive {
            return Err(PredicateError(format!(
                "it {did} the archive with SHA-256 {}, not this version's {archive}",
                self.archive.sha256
            )));
        }
        Ok(())
    }
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Attester {
    /// `ebpkg <version>`.
    #[schemars(regex(pattern = NO_CONTROL_PATTERN))]
    pub tool: String,
}

/// Everything observed on one kernel.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct KernelObservation {
    pub kernel: KernelIdentity,
    /// `uname -v`: which build of the release (distributions rebuild one release
    /// several times).
    #[serde(default)]
    #[schemars(regex(pattern = NO_CONTROL_PATTERN))]
    pub build: String,
    /// When, RFC 3339 (UTC).
    #[schemars(extend("format" = "date-time"))]
    pub observed_at: String,
    pub items: Vec<ItemObservation>,
}

/// What tells one kernel from another for an attestation: its release, its
/// machine, and the digest of its BTF (`/sys/kernel/btf/vmlinux`), which is what
/// CO-RE relocates against and changes with any change of its types.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct KernelIdentity {
    /// `uname -r`.
    #[schemars(length(min = 1), regex(pattern = NO_CONTROL_PATTERN))]
    pub release: String,
    /// `uname -m`.
    #[schemars(length(min = 1), regex(pattern = NO_CONTROL_PATTERN))]
    pub architecture: String,
    pub btf: Digests,
}

impl PartialOrd for Digests {
    fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}
impl Ord for Digests {
    fn cmp(&self, other: &Self) -> std::cmp::Ordering {
        self.sha256.cmp(&other.sha256)
    }
}
impl std::hash::Hash for Digests {
    fn hash<H: std::hash::Hasher>(&self, state: &mut H) {
        self.sha256.hash(state);
    }
}

impl fmt::Display for KernelIdentity {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} ({})", self.release, self.architecture)
    }
}

/// One program, loader or chain of the package on one kernel.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ItemObservation {
    pub kind: ItemKind,
    #[schemars(regex(pattern = NO_CONTROL_PATTERN))]
    pub name: String,
    /// The object it was loaded from (none for a chain's interpreted tier).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub object: Option<ObjectRef>,
    pub verdict: Verdict,
    /// The verifier's count (`processed N insns`), when it verified.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub insns_processed: Option<u64>,
    /// How long the verifier took, microseconds.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub verification_micros: Option<u64>,
    /// For programs and chains: the tier a chain calling it reached here.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tier: Option<Tier>,
    /// Why it was refused, or why its tier is not native: one line.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(regex(pattern = NO_CONTROL_PATTERN))]
    pub reason: Option<String>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "kebab-case")]
pub enum ItemKind {
    Program,
    Loader,
    Chain,
}

impl ItemKind {
    pub fn name(self) -> &'static str {
        match self {
            ItemKind::Program => "program",
            ItemKind::Loader => "loader",
            ItemKind::Chain => "chain",
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "kebab-case")]
pub enum Verdict {
    /// The kernel verified and loaded it.
    Verified,
    /// The kernel refused it.
    Refused,
}

/// How chains run it: compiled natively into one program with the chain, or
/// interpreted by the HIKe VM (hike-sdk/docs/NATIVE.md).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "kebab-case")]
pub enum Tier {
    Native,
    Interpreted,
}

/// A portable object, as loaded.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ObjectRef {
    /// The object's source, as the manifest names it (`src/x.bpf.c`); for an
    /// item shipped without a source, the shipped object's path. (Attestations
    /// made before `shipped` existed name the shipped object's path here; they
    /// are read as they were signed.)
    #[schemars(regex(pattern = NO_CONTROL_PATTERN))]
    pub source: String,
    /// For an object the package ships (`prebuilt`), its path in the package
    /// (`prebuilt/xdp/src/x.bpf.c.o`); absent for one built from `source`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(regex(pattern = NO_CONTROL_PATTERN))]
    pub shipped: Option<String>,
    pub hook: Hook,
    pub digest: Digests,
    /// The compiler that made it, as it says in the object (`.comment`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(regex(pattern = NO_CONTROL_PATTERN))]
    pub compiler: Option<String>,
}

/// Why a predicate was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct PredicateError(pub String);

impl KernelVerification {
    /// Reads a predicate and checks it is within bounds and about `name@version`
    /// with the archive `archive`.
    pub fn from_value(
        value: &serde_json::Value,
        name: &PackageName,
        version: &Version,
        archive: &Sha256Digest,
    ) -> Result<KernelVerification, PredicateError> {
        let p = KernelVerification::deserialize(value).map_err(|e| PredicateError(format!("its predicate: {e}")))?;
        p.check()?;
        p.package.is_about(name, version, archive, "observed")?;
        Ok(p)
    }

    /// Bounds and printable text: everything here is shown to people (a terminal,
    /// the catalog), so nothing may carry control characters.
    pub fn check(&self) -> Result<(), PredicateError> {
        if self.kernels.is_empty() {
            return Err(PredicateError("it observed no kernel".into()));
        }
        if self.kernels.len() > MAX_KERNELS {
            return Err(PredicateError(format!("it covers {} kernels, more than {MAX_KERNELS}", self.kernels.len())));
        }
        text("attester.tool", &self.attester.tool)?;
        let mut seen = std::collections::BTreeSet::new();
        for k in &self.kernels {
            text("kernel.release", &k.kernel.release)?;
            text("kernel.architecture", &k.kernel.architecture)?;
            text("build", &k.build)?;
            date_time("observedAt", &k.observed_at)?;
            if k.kernel.release.is_empty() || k.kernel.architecture.is_empty() {
                return Err(PredicateError("a kernel has no release or architecture".into()));
            }
            if !seen.insert(&k.kernel) {
                return Err(PredicateError(format!("kernel {} is observed twice", k.kernel)));
            }
            if k.items.len() > MAX_ITEMS {
                return Err(PredicateError(format!("{} items on {}, more than {MAX_ITEMS}", k.items.len(), k.kernel)));
            }
            for i in &k.items {
                text("item name", &i.name)?;
                if let Some(r) = &i.reason {
                    text("reason", r)?;
                }
                if let Some(o) = &i.object {
                    text("object source", &o.source)?;
                    if let Some(s) = &o.shipped {
                        text("object shipped", s)?;
                    }
                    if let Some(c) = &o.compiler {
                        text("compiler", c)?;
                    }
                }
            }
        }
        Ok(())
    }
}

fn text(what: &str, s: &str) -> Result<(), PredicateError> {
    if s.len() > MAX_TEXT {
        return Err(PredicateError(format!("its {what} is {} bytes, more than {MAX_TEXT}", s.len())));
    }
    if s.chars().any(char::is_control) {
        return Err(PredicateError(format!("its {what} holds a control character")));
    }
    Ok(())
}

/// An RFC 3339 time with its offset (`2026-12-01T00:00:00Z`), as the schemas'
/// `format: date-time` says.
pub(crate) fn date_time(what: &str, s: &str) -> Result<(), PredicateError> {
    text(what, s)?;
    s.parse::<jiff::Timestamp>()
        .map(drop)
        .map_err(|_| PredicateError(format!("its {what} `{s}` is not a time like 2026-12-01T00:00:00Z (RFC 3339)")))
}

/// What one kernel's observation comes to, for a person deciding.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Outcome<'a> {
    /// Every item verified; `native` of `programs` (programs and chains) reached
    /// the native tier.
    Verified { items: usize, native: usize, tiered: usize },
    /// The first item the kernel refused, and why.
    Refused { item: &'a ItemObservation },
}

impl KernelObservation {
    pub fn outcome(&self) -> Outcome<'_> {
        if let Some(item) = self.items.iter().find(|i| i.verdict == Verdict::Refused) {
            return Outcome::Refused { item };
        }
        let tiered = self.items.iter().filter(|i| i.tier.is_some()).count();
        let native = self.items.iter().filter(|i| i.tier == Some(Tier::Native)).count();
        Outcome::Verified { items: self.items.len(), native, tiered }
    }

    /// Every refused item.
    pub fn refused(&self) -> impl Iterator<Item = &ItemObservation> {
        self.items.iter().filter(|i| i.verdict == Verdict::Refused)
    }
}

impl fmt::Display for Outcome<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Outcome::Verified { items, native, tiered } if *tiered > 0 => {
                write!(f, "verified ({items} {}; native tier {native} of {tiered})", plural(*items, "item"))
            }
            Outcome::Verified { items, .. } => write!(f, "verified ({items} {})", plural(*items, "item")),
            Outcome::Refused { item } => write!(
                f,
                "refused: {} `{}`: {}",
                item.kind.name(),
                item.name,
                item.reason.as_deref().unwrap_or("the verifier said no more")
            ),
        }
    }
}

fn plural(n: usize, word: &str) -> String {
    if n == 1 { word.to_owned() } else { format!("{word}s") }
}

/// The attestation file a registry serves for a version: every attestation
/// accepted for it (Sigstore bundles, JSON), oldest first. Its bytes are a TUF
/// target ([`attestation_target`]).
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize, JsonSchema)]
pub struct AttestationFile {
    #[schemars(with = "Vec<serde_json::Map<String, serde_json::Value>>")]
    pub attestations: Vec<serde_json::Value>,
}

/// Most attestations one version keeps, and the largest file of them.
pub const MAX_ATTESTATIONS: usize = 32;
pub const MAX_ATTESTATION_FILE_BYTES: u64 = 8 << 20;

impl AttestationFile {
    /// Reads a file (bounded by the caller's read).
    pub fn parse(bytes: &[u8]) -> Result<AttestationFile, PredicateError> {
        let file: AttestationFile =
            serde_json::from_slice(bytes).map_err(|e| PredicateError(format!("not an attestation file: {e}")))?;
        if file.attestations.len() > MAX_ATTESTATIONS {
            return Err(PredicateError(format!(
                "{} attestations, more than the {MAX_ATTESTATIONS} a version may have",
                file.attestations.len()
            )));
        }
        Ok(file)
    }

    /// The file's bytes: the same list is always the same bytes.
    pub fn to_bytes(&self) -> Vec<u8> {
        // Values that were parsed from JSON always serialize.
        let mut out = serde_json::to_vec(self).unwrap_or_default();
        out.push(b'\n');
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample() -> KernelVerification {
        KernelVerification {
            package: AttestedPackage {
                name: PackageName::new("meter").unwrap(),
                version: Version::new(1, 0, 0),
                archive: Digests { sha256: Sha256Digest([7; 32]) },
            },
            attester: Attester { tool: "ebpkg 0.1.0".into() },
            kernels: vec![KernelObservation {
                kernel: KernelIdentity {
                    release: "5.10.0-46-amd64".into(),
                    architecture: "x86_64".into(),
                    btf: Digests { sha256: Sha256Digest([1; 32]) },
                },
                build: "#1 SMP Debian 5.10.262-1".into(),
                observed_at: "2026-12-01T00:00:00Z".into(),
                items: vec![ItemObservation {
                    kind: ItemKind::Program,
                    name: "ip6_dst_tbmon".into(),
                    object: None,
                    verdict: Verdict::Refused,
                    insns_processed: None,
                    verification_micros: None,
                    tier: None,
                    reason: Some("BPF_STX uses reserved fields".into()),
                }],
            }],
        }
    }

    #[test]
    fn a_predicate_reads_back_and_is_checked_against_the_version() {
        let p = sample();
        let value = serde_json::to_value(&p).unwrap();
        let name = PackageName::new("meter").unwrap();
        let v = Version::new(1, 0, 0);
        assert_eq!(KernelVerification::from_value(&value, &name, &v, &Sha256Digest([7; 32])), Ok(p.clone()));
        let other = KernelVerification::from_value(&value, &name, &v, &Sha256Digest([8; 32]));
        assert!(other.is_err_and(|e| e.0.contains("not this version's")));
        let newer = KernelVerification::from_value(&value, &name, &Version::new(1, 0, 1), &Sha256Digest([7; 32]));
        assert!(newer.is_err_and(|e| e.0.contains("not meter@1.0.1")));
        assert_eq!(
            p.kernels[0].outcome().to_string(),
            "refused: program `ip6_dst_tbmon`: BPF_STX uses reserved fields"
        );
    }

    #[test]
    fn control_characters_and_duplicates_are_refused() {
        let mut p = sample();
        p.kernels[0].items[0].reason = Some("ok\u{1b}[2J".into());
        assert!(p.check().is_err_and(|e| e.0.contains("control character")));
        let mut p = sample();
        p.kernels.push(p.kernels[0].clone());
        assert!(p.check().is_err_and(|e| e.0.contains("observed twice")));
    }

    #[test]
    fn targets_follow_the_index_layout() {
        let name = |n: &str| PackageName::new(n).unwrap();
        assert_eq!(attestation_target(&name("meter"), &Version::new(1, 0, 0)), "attestations/me/te/meter/1.0.0.json");
        assert_eq!(attestation_target(&name("a"), &Version::new(0, 1, 0)), "attestations/1/a/0.1.0.json");
        assert_eq!(
            attestation_target(&name("my-pkg"), &Version::new(1, 0, 0)),
            attestation_target(&name("my_pkg"), &Version::new(1, 0, 0))
        );
    }
}
