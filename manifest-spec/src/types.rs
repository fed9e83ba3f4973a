//! Small value types shared by the manifest, the lockfile and the index.

use std::fmt;

use schemars::JsonSchema;
use serde::{Deserialize, Deserializer, Serialize, Serializer};

pub use hike_bytecode::{EndsPacket, FieldType, Hook, IntType};

/// A kernel version `major.minor[.patch]`, compared numerically.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct KernelVersion {
    pub major: u16,
    pub minor: u16,
    pub patch: u16,
}

impl KernelVersion {
    /// Parses `5.15` or `6.1.12`. Anything after the numbers (`-rc1`, `-amd64`) is
    /// not part of the requirement syntax and is refused; see [`KernelVersion::from_uname`].
    pub fn parse(s: &str) -> Option<Self> {
        let mut parts = s.split('.');
        let major = parts.next()?.parse().ok()?;
        let minor = parts.next()?.parse().ok()?;
        let patch = match parts.next() {
            Some(p) => p.parse().ok()?,
            None => 0,
        };
        if parts.next().is_some() {
            return None;
        }
        Some(KernelVersion { major, minor, patch })
    }

    /// The version of a `uname -r` string such as `6.18.44-fc-v669`: the leading
    /// numbers, ignoring the distribution suffix.
    pub fn from_uname(release: &str) -> Option<Self> {
        let numeric: String = release.chars().take_while(|c| c.is_ascii_digit() || *c == '.').collect();
        KernelVersion::parse(numeric.trim_end_matches('.'))
    }
}

impl fmt::Display for KernelVersion {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.patch == 0 {
            write!(f, "{}.{}", self.major, self.minor)
        } else {
            write!(f, "{}.{}.{}", self.major, self.minor, self.patch)
        }
    }
}

impl Serialize for KernelVersion {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}

impl<'de> Deserialize<'de> for KernelVersion {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let s = String::deserialize(d)?;
        KernelVersion::parse(&s)
            .ok_or_else(|| serde::de::Error::custom(format!("`{s}` is not a kernel version like \"5.15\"")))
    }
}

impl JsonSchema for KernelVersion {
    fn schema_name() -> std::borrow::Cow<'static, str> {
        "KernelVersion".into()
    }
    fn json_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
        schemars::json_schema!({
            "type": "string",
            "description": "A kernel version `major.minor[.patch]`, e.g. \"5.15\".",
            "pattern": "^[0-9]+\\.[0-9]+(\\.[0-9]+)?$",
        })
    }
}

/// A SHA-256 digest, written as 64 lowercase hex digits.
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Sha256Digest(pub [u8; 32]);

impl Sha256Digest {
    /// Parses the canonical form, 64 lowercase hex digits, as index lines and
    /// lockfiles hold it (SPEC.md §5, §6): the text is then one-to-one with the
    /// digest, so comparing texts compares digests.
    pub fn from_canonical_hex(s: &str) -> Option<Self> {
        if s.bytes().any(|b| b.is_ascii_uppercase()) {
            return None;
        }
        Self::from_hex(s)
    }

    /// Parses 64 hex digits in either case, for what people type (`sha256sum`
    /// prints lowercase, other tools uppercase).
    pub fn from_hex(s: &str) -> Option<Self> {
        let mut out = [0u8; 32];
        hex::decode_to_slice(s, &mut out).ok()?;
        Some(Sha256Digest(out))
    }

    /// 64 lowercase hex digits.
    pub fn to_hex(&self) -> String {
        hex::encode(self.0)
    }
}

impl fmt::Display for Sha256Digest {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut hex = [0u8; 64];
        // 32 bytes always fit 64 digits, which are ASCII.
        match hex::encode_to_slice(self.0, &mut hex).ok().and_then(|()| std::str::from_utf8(&hex).ok()) {
            Some(text) => f.write_str(text),
            None => f.write_str(&self.to_hex()),
        }
    }
}

impl fmt::Debug for Sha256Digest {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Sha256Digest({})", self.to_hex())
    }
}

impl Serialize for Sha256Digest {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&self.to_hex())
    }
}

impl<'de> Deserialize<'de> for Sha256Digest {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let s = String::deserialize(d)?;
        Sha256Digest::from_canonical_hex(&s)
            .ok_or_else(|| serde::de::Error::custom(format!("`{s}` is not a SHA-256 digest (64 lowercase hex digits)")))
    }
}

impl JsonSchema for Sha256Digest {
    fn schema_name() -> std::borrow::Cow<'static, str> {
        "Sha256Digest".into()
    }
    fn json_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
        schemars::json_schema!({
            "type": "string",
            "description": "A SHA-256 digest as 64 lowercase hexadecimal digits.",
            "pattern": "^[0-9a-f]{64}$",
        })
    }
}

/// A publisher key's identity: the SHA-256 of its SubjectPublicKeyInfo DER,
/// written as standard padded base64, exactly as cosign writes a bundle's
/// `publicKey.hint`, so the id an index line, a lockfile and a trust policy name
/// is the one `cosign` shows for the same key.
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct KeyId(pub [u8; 32]);

impl KeyId {
    /// Parses 44 characters of standard base64 holding 32 bytes.
    pub fn parse(s: &str) -> Option<KeyId> {
        use base64::Engine;
        if s.len() != 44 {
            return None;
        }
        let bytes = base64::engine::general_purpose::STANDARD.decode(s).ok()?;
        Some(KeyId(bytes.try_into().ok()?))
    }

    /// The id as 64 lowercase hex digits: its form in URL paths and file names,
    /// where base64's `/` and `+` do not belong.
    pub fn to_hex(&self) -> String {
        hex::encode(self.0)
    }

    /// Parses [`to_hex`](Self::to_hex)'s form (either case).
    pub fn from_hex(s: &str) -> Option<KeyId> {
        if s.len() != 64 {
            return None;
        }
        let mut out = [0u8; 32];
        hex::decode_to_slice(s, &mut out).ok()?;
        Some(KeyId(out))
    }
}

impl fmt::Display for KeyId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        use base64::Engine;
        f.write_str(&base64::engine::general_purpose::STANDARD.encode(self.0))
    }
}

impl fmt::Debug for KeyId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "KeyId({self})")
    }
}

impl Serialize for KeyId {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}

impl<'de> Deserialize<'de> for KeyId {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let s = String::deserialize(d)?;
        KeyId::parse(&s).ok_or_else(|| {
            serde::de::Error::custom(format!("`{s}` is not a key id (base64 of a 32-byte SHA-256, 44 characters)"))
        })
    }
}

impl JsonSchema for KeyId {
    fn schema_name() -> std::borrow::Cow<'static, str> {
        "KeyId".into()
    }
    fn json_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
        schemars::json_schema!({
            "type": "string",
            "description": "A publisher key id: standard base64 of the SHA-256 of the key's SubjectPublicKeyInfo DER (cosign's `publicKey.hint`).",
            "pattern": "^[A-Za-z0-9+/]{43}=$",
        })
    }
}

/// A path inside a package: relative, `/`-separated, with no `.` or `..`
/// components, so it can never name a file outside the package directory.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct RelPath(String);

/// Why a package path was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PathError {
    #[error("path is empty")]
    Empty,
    #[error("path `{0}` is absolute; paths in a package are relative to the directory holding ebpkg.toml")]
    Absolute(String),
    #[error("path `{0}` leaves the package directory through `..`")]
    ParentDir(String),
    #[error("path `{0}` contains a backslash; separate directories with `/`")]
    Backslash(String),
    #[error("path `{0}` contains a control character")]
    Control(String),
    #[error("path `{0}` is longer than 255 bytes")]
    TooLong(String),
}

impl RelPath {
    /// Checks and normalizes `s` (`./src//a.c` becomes `src/a.c`).
    pub fn new(s: &str) -> Result<Self, PathError> {
        if s.is_empty() {
            return Err(PathError::Empty);
        }
        if s.len() > 255 {
            return Err(PathError::TooLong(s.to_owned()));
        }
        if s.chars().any(char::is_control) {
            return Err(PathError::Control(s.escape_debug().to_string()));
        }
        if s.contains('\\') {
            return Err(PathError::Backslash(s.to_owned()));
        }
        let looks_like_drive = s.len() >= 2 && s.as_bytes()[1] == b':' && s.as_bytes()[0].is_ascii_alphabetic();
        if s.starts_with('/') || s.starts_with('~') || looks_like_drive {
            return Err(PathError::Absolute(s.to_owned()));
        }
        let mut parts = Vec::new();
        for part in s.split('/') {
            match part {
                "" | "." => {}
                ".." => return Err(PathError::ParentDir(s.to_owned())),
                p => parts.push(p),
            }
        }
        if parts.is_empty() {
            return Err(PathError::Empty);
        }
        Ok(RelPath(parts.join("/")))
    }

    /// The normalized path.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl fmt::Display for RelPath {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl Serialize for RelPath {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&self.0)
    }
}

impl<'de> Deserialize<'de> for RelPath {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let s = String::deserialize(d)?;
        RelPath::new(&s).map_err(serde::de::Error::custom)
    }
}

impl JsonSchema for RelPath {
    fn schema_name() -> std::borrow::Cow<'static, str> {
        "RelPath".into()
    }
    fn json_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
        schemars::json_schema!({
            "type": "string",
            "description": "A `/`-separated path relative to the package directory, without `..` components.",
            "minLength": 1,
            "maxLength": 255,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kernel_versions() {
        assert_eq!(KernelVersion::parse("5.15"), Some(KernelVersion { major: 5, minor: 15, patch: 0 }));
        assert_eq!(KernelVersion::parse("6.1.12").map(|v| v.to_string()).as_deref(), Some("6.1.12"));
        assert!(KernelVersion::parse("5").is_none());
        assert!(KernelVersion::parse("5.15-rc1").is_none());
        assert!(KernelVersion::parse("5.15.1.2").is_none());
        assert_eq!(
            KernelVersion::from_uname("6.18.44-fc-v669"),
            Some(KernelVersion { major: 6, minor: 18, patch: 44 })
        );
        assert!(KernelVersion::parse("5.10") < KernelVersion::parse("5.15"));
    }

    #[test]
    fn rel_paths_stay_inside() {
        assert_eq!(RelPath::new("./src//a.bpf.c").unwrap().as_str(), "src/a.bpf.c");
        for bad in ["../../etc/passwd", "/etc/passwd", "src/../../x", "a\\b", "C:/x", "~/x", "", ".", "a\0b"] {
            assert!(RelPath::new(bad).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn digests_are_hex() {
        let hex = "ab".repeat(32);
        assert_eq!(Sha256Digest::from_hex(&hex).unwrap().to_hex(), hex);
        assert!(Sha256Digest::from_hex("abc").is_none());
        let upper = hex.to_ascii_uppercase();
        assert!(Sha256Digest::from_hex(&upper).is_some());
        assert!(Sha256Digest::from_canonical_hex(&upper).is_none());
        assert!(serde_json::from_str::<Sha256Digest>(&format!("\"{upper}\"")).is_err());
    }

    #[test]
    fn field_type_sizes_and_names() {
        for t in FieldType::ALL {
            let json = serde_json::to_string(&t).unwrap();
            assert_eq!(json, format!("\"{}\"", t.name()));
            assert!(t.size() > 0);
        }
        assert_eq!(FieldType::Ipv6Prefix.size(), 20);
    }
}

/// Where an object that reaches the kernel came from, as the deployment record
/// and `ebpkg status` say. One definition: the build decides it (ebpkg-build's
/// `BuiltObject`), the plan carries it (ebpkg-deploy's `PlannedObject`) into the
/// record.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum ObjectOrigin {
    /// clang compiled it on this machine for this command.
    BuiltHere,
    /// The build cache had it (built here earlier, checked against its digest record).
    BuildCache,
    /// The package's prebuilt object, matching the sha256 its manifest names.
    ShippedByPublisher,
    /// The package's prebuilt object, rebuilt here from its source byte for byte.
    RebuiltAndMatched,
}

impl ObjectOrigin {
    /// How `ebpkg status` says it.
    pub fn describe(self) -> &'static str {
        match self {
            ObjectOrigin::BuiltHere => "built here",
            ObjectOrigin::BuildCache => "build cache",
            ObjectOrigin::ShippedByPublisher => "shipped by the publisher",
            ObjectOrigin::RebuiltAndMatched => "rebuilt and matched",
        }
    }
}

impl fmt::Display for ObjectOrigin {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.describe())
    }
}
