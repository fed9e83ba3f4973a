//! Trust policy: which keys may sign which packages, which packages may be
//! unsigned, and which keys are revoked.
//!
//! ```toml
//! # Keys trusted to sign packages: a package name or glob, and key ids.
//! [keys]
//! "hike-*" = ["gdKhOLs6Ofuuavi6eEZKBIxDfaw72MmqQbHxAnqyCEQ="]
//!
//! # Packages that may be installed without a signature.
//! [unsigned]
//! allow = ["local-*"]
//!
//! # Keys trusted no more, and why: what they signed is refused.
//! [revoked]
//! "gdKhOLs6Ofuuavi6eEZKBIxDfaw72MmqQbHxAnqyCEQ=" = "the laptop holding it was stolen"
//!
//! # A kernel no trusted attestation of a package observed: "note" it (the
//! # default) or "refuse" to install there.
//! [kernels]
//! unattested = "refuse"
//!
//! # Objects a package ships prebuilt: load them on the publisher's signature
//! # ("signer", the default), only once rebuilt from their source into the
//! # same bytes ("rebuilt"), or never (always build locally). Under "rebuilt",
//! a rebuild attestation vouches for an object only when signed by one of the
//! `rebuilders` (and never by the key that signed the version itself).
//! [objects]
//! prebuilt = "rebuilt"
//! rebuilders = ["q0sUq9bnRJdt5FkNvtKAu7gqVwRyxOjAFPhQJ2RdXvo="]
//! ```
//!
//! A user's policy (`~/.config/ebpkg/trust.toml`) and a project's
//! (`ebpkg-trust.toml` beside `ebpkg.toml`) are merged: a key trusted (or
//! listed as a rebuilder) by either is trusted, a key revoked by either is
//! revoked, and the stricter of the two rules applies.

use std::collections::BTreeMap;
use std::fmt::Write as _;

use ebpkg_spec::names::PackageGlob;
use ebpkg_spec::registry_api::limits;
use ebpkg_spec::types::KeyId;
use schemars::JsonSchema;
use serde::Deserialize;

/// Largest trust policy read.
pub const MAX_POLICY_BYTES: u64 = 1024 * 1024;

/// A trust policy, as read from one file or merged from several.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct TrustPolicy {
    keys: BTreeMap<PackageGlob, Vec<KeyId>>,
    unsigned: Vec<PackageGlob>,
    revoked: BTreeMap<KeyId, String>,
    unattested: Unattested,
    prebuilt: PrebuiltObjects,
    rebuilders: Vec<KeyId>,
}

/// When an install loads an object a package ships prebuilt (SPEC.md §4.7).
/// Ordered from the most to the least trusting: merged policies keep the
/// stricter.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, PartialOrd, Ord, Deserialize, JsonSchema)]
#[serde(rename_all = "kebab-case")]
pub enum PrebuiltObjects {
    /// On the publisher's signature over the archive.
    #[default]
    Signer,
    /// Only once its source was rebuilt into the same bytes: here, or by a
    /// key the policy lists as a rebuilder (never the version's own signer),
    /// in a rebuild attestation.
    Rebuilt,
    /// Never: its source is compiled here instead.
    Never,
}

impl PrebuiltObjects {
    pub fn as_str(self) -> &'static str {
        match self {
            PrebuiltObjects::Signer => "signer",
            PrebuiltObjects::Rebuilt => "rebuilt",
            PrebuiltObjects::Never => "never",
        }
    }
}

/// What an install does on a kernel that no trusted attestation of a package
/// it installs observed.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, PartialOrd, Ord, Deserialize, JsonSchema)]
#[serde(rename_all = "kebab-case")]
pub enum Unattested {
    /// Say so, and go on.
    #[default]
    Note,
    /// Refuse, before anything is built.
    Refuse,
}

impl Unattested {
    pub fn as_str(self) -> &'static str {
        match self {
            Unattested::Note => "note",
            Unattested::Refuse => "refuse",
        }
    }
}

/// What a policy says about one version of a package.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Decision {
    /// Signed by a key the policy trusts for the package.
    Trusted { key: KeyId, by: PackageGlob },
    /// Unsigned, and the policy allows that for the package.
    UnsignedAllowed { by: PackageGlob },
    /// Unsigned, and no rule allows it.
    Unsigned,
    /// Signed by a revoked key.
    Revoked { key: KeyId, reason: String },
    /// Signed by a key the policy does not trust for the package; `trusted`
    /// lists the keys it does trust for it (empty: none yet, a first use).
    Untrusted { key: KeyId, trusted: Vec<KeyId> },
}

/// Why a policy file was refused.
#[derive(Debug, thiserror::Error)]
#[error("{message}")]
pub struct PolicyError {
    pub message: String,
}

/// An ebpkg trust policy (`trust.toml`, beside `config.toml`): the keys
/// trusted to sign each package, the packages allowed unsigned, revoked keys,
/// and what an install does about unattested kernels and shipped objects.
#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
#[schemars(title = "ebpkg trust policy (trust.toml)")]
struct RawPolicy {
    /// Keys trusted to sign packages: a package name or glob (`*` matches any
    /// run of characters), and key ids.
    #[serde(default)]
    #[schemars(extend("propertyNames" = {"pattern": limits::PACKAGE_GLOB_PATTERN}))]
    keys: BTreeMap<String, Vec<KeyId>>,
    /// Packages that may be installed without a signature.
    #[serde(default)]
    unsigned: RawUnsigned,
    /// Keys trusted no more, and why: what they signed is refused.
    #[serde(default)]
    revoked: BTreeMap<KeyId, String>,
    #[serde(default)]
    kernels: RawKernels,
    #[serde(default)]
    objects: RawObjects,
}

#[derive(Deserialize, Default, JsonSchema)]
#[serde(deny_unknown_fields)]
#[schemars(rename = "Objects")]
struct RawObjects {
    #[serde(default)]
    prebuilt: PrebuiltObjects,
    #[serde(default)]
    rebuilders: Vec<KeyId>,
}

#[derive(Deserialize, Default, JsonSchema)]
#[serde(deny_unknown_fields)]
#[schemars(rename = "Kernels")]
struct RawKernels {
    #[serde(default)]
    unattested: Unattested,
}

#[derive(Deserialize, Default, JsonSchema)]
#[serde(deny_unknown_fields)]
#[schemars(rename = "Unsigned")]
struct RawUnsigned {
    /// Package names or globs.
    #[serde(default)]
    #[schemars(inner(regex(pattern = limits::PACKAGE_GLOB_PATTERN)))]
    allow: Vec<String>,
}

/// The JSON Schema of `trust.toml` (checked in as
/// `manifest-spec/schemas/trust.toml.schema.json`).
pub fn schema() -> String {
    ebpkg_spec::schema::render_toml::<RawPolicy>()
}

fn glob(text: &str) -> Result<PackageGlob, PolicyError> {
    PackageGlob::new(text).map_err(|e| PolicyError {
        message: format!("`{text}` is not a package name or glob (`*` matches any run of characters): {e}"),
    })
}

impl TrustPolicy {
    /// Reads a policy file's text.
    pub fn parse(text: &str) -> Result<TrustPolicy, PolicyError> {
        let raw: RawPolicy = toml::from_str(text).map_err(|e| PolicyError { message: e.to_string() })?;
        let mut policy = TrustPolicy::default();
        for (pattern, keys) in raw.keys {
            let slot = policy.keys.entry(glob(&pattern)?).or_default();
            for key in keys {
                if !slot.contains(&key) {
                    slot.push(key);
                }
            }
        }
        for pattern in raw.unsigned.allow {
            let pattern = glob(&pattern)?;
            if !policy.unsigned.contains(&pattern) {
                policy.unsigned.push(pattern);
            }
        }
        policy.revoked = raw.revoked;
        policy.unattested = raw.kernels.unattested;
        policy.prebuilt = raw.objects.prebuilt;
        for key in raw.objects.rebuilders {
            policy.add_rebuilder(key);
        }
        Ok(policy)
    }

    /// The policy as a file, in a canonical form.
    pub fn to_toml_string(&self) -> String {
        let quote = |s: &str| toml::Value::String(s.to_owned()).to_string();
        let mut out = String::from(
            "# ebpkg trust policy: edit with `ebpkg trust add|remove|revoke|allow-unsigned`.\n\n\
             # Keys trusted to sign packages: a package name or glob, and key ids.\n[keys]\n",
        );
        for (pattern, keys) in &self.keys {
            let keys: Vec<String> = keys.iter().map(|k| quote(&k.to_string())).collect();
            let _ = writeln!(out, "{} = [{}]", quote(pattern.as_str()), keys.join(", "));
        }
        out.push_str("\n# Packages that may be installed without a signature.\n[unsigned]\n");
        let allow: Vec<String> = self.unsigned.iter().map(|p| quote(p.as_str())).collect();
        let _ = writeln!(out, "allow = [{}]", allow.join(", "));
        out.push_str("\n# Keys trusted no more, and why: what they signed is refused.\n[revoked]\n");
        for (key, reason) in &self.revoked {
            let _ = writeln!(out, "{} = {}", quote(&key.to_string()), quote(reason));
        }
        if self.unattested != Unattested::default() {
            out.push_str(
                "\n# A kernel no trusted attestation of a package observed: \"note\" or \"refuse\".\n[kernels]\n",
            );
            let _ = writeln!(out, "unattested = {}", quote(self.unattested.as_str()));
        }
        if self.prebuilt != PrebuiltObjects::default() || !self.rebuilders.is_empty() {
            out.push_str(
                "\n# Objects packages ship prebuilt: load on the \"signer\"'s word, once \"rebuilt\" into the same \
                 bytes, or \"never\".\n# Rebuilders: keys whose rebuild attestations vouch for them (never a \
                 version's own signer).\n[objects]\n",
            );
            let _ = writeln!(out, "prebuilt = {}", quote(self.prebuilt.as_str()));
            let rebuilders: Vec<String> = self.rebuilders.iter().map(|k| quote(&k.to_string())).collect();
            let _ = writeln!(out, "rebuilders = [{}]", rebuilders.join(", "));
        }
        out
    }

    /// Adds what `other` trusts, allows and revokes.
    pub fn merge(&mut self, other: &TrustPolicy) {
        for (pattern, keys) in &other.keys {
            for key in keys {
                self.trust(pattern.clone(), *key);
            }
        }
        for pattern in &other.unsigned {
            self.allow_unsigned(pattern.clone());
        }
        for (key, reason) in &other.revoked {
            self.revoked.entry(*key).or_insert_with(|| reason.clone());
        }
        // Like trusted keys: listed by either (a revocation by either still wins).
        for key in &other.rebuilders {
            self.add_rebuilder(*key);
        }
        // The stricter of the two.
        self.unattested = self.unattested.max(other.unattested);
        self.prebuilt = self.prebuilt.max(other.prebuilt);
    }

    /// When an install loads an object a package ships prebuilt.
    pub fn prebuilt(&self) -> PrebuiltObjects {
        self.prebuilt
    }

    /// Sets [`prebuilt`](Self::prebuilt); false if it already was so.
    pub fn set_prebuilt(&mut self, rule: PrebuiltObjects) -> bool {
        std::mem::replace(&mut self.prebuilt, rule) != rule
    }

    /// The keys whose rebuild attestations vouch for shipped objects.
    pub fn rebuilders(&self) -> &[KeyId] {
        &self.rebuilders
    }

    /// Lists `key` as a rebuilder; false if it already was.
    pub fn add_rebuilder(&mut self, key: KeyId) -> bool {
        push_new(&mut self.rebuilders, key)
    }

    /// Takes `key` off the rebuilders; false if it was not one.
    pub fn remove_rebuilder(&mut self, key: &KeyId) -> bool {
        remove_all(&mut self.rebuilders, key)
    }

    /// Whether a rebuild attestation signed by `key` vouches for the shipped
    /// objects of a version signed by `signer`: `Err` says why not. The
    /// version's own signer never does (it cannot vouch for its own objects),
    /// nor a revoked key, nor one not listed as a rebuilder.
    pub fn judge_rebuilder(&self, key: &KeyId, signer: Option<&KeyId>) -> Result<(), String> {
        if signer == Some(key) {
            return Err(format!(
                "signed by key {key}, which signed the version itself: a publisher's own rebuild attestation is \
                 informational, and only an independent rebuilder's vouches for its objects"
            ));
        }
        if let Some(reason) = self.revoked.get(key) {
            return Err(format!("signed by key {key}, which the trust policy revokes ({reason})"));
        }
        if !self.rebuilders.contains(key) {
            return Err(format!(
                "signed by key {key}, which the trust policy does not list as a rebuilder (`ebpkg trust rebuilder \
                 add {key}` lists it)"
            ));
        }
        Ok(())
    }

    /// What an install does on a kernel no trusted attestation observed.
    pub fn unattested(&self) -> Unattested {
        self.unattested
    }

    /// Sets [`unattested`](Self::unattested); false if it already was so.
    pub fn set_unattested(&mut self, rule: Unattested) -> bool {
        std::mem::replace(&mut self.unattested, rule) != rule
    }

    /// Trusts `key` for the packages `pattern` covers; false if it already was.
    pub fn trust(&mut self, pattern: PackageGlob, key: KeyId) -> bool {
        let keys = self.keys.entry(pattern).or_default();
        if keys.contains(&key) {
            return false;
        }
        keys.push(key);
        true
    }

    /// Stops trusting `key` for `pattern` (every key when `None`); false if
    /// nothing changed.
    pub fn untrust(&mut self, pattern: &PackageGlob, key: Option<&KeyId>) -> bool {
        let Some(keys) = self.keys.get_mut(pattern) else { return false };
        let before = keys.len();
        match key {
            Some(key) => keys.retain(|k| k != key),
            None => keys.clear(),
        }
        let changed = keys.len() != before;
        if keys.is_empty() {
            self.keys.remove(pattern);
        }
        changed
    }

    /// Lets the packages `pattern` covers install unsigned; false if they could.
    pub fn allow_unsigned(&mut self, pattern: PackageGlob) -> bool {
        push_new(&mut self.unsigned, pattern)
    }

    /// Takes back an [`allow_unsigned`](Self::allow_unsigned); false if absent.
    pub fn disallow_unsigned(&mut self, pattern: &PackageGlob) -> bool {
        remove_all(&mut self.unsigned, pattern)
    }

    /// Revokes `key`; false if it already was.
    pub fn revoke(&mut self, key: KeyId, reason: String) -> bool {
        self.revoked.insert(key, reason).is_none()
    }

    pub fn keys(&self) -> &BTreeMap<PackageGlob, Vec<KeyId>> {
        &self.keys
    }

    pub fn unsigned(&self) -> &[PackageGlob] {
        &self.unsigned
    }

    pub fn revoked(&self) -> &BTreeMap<KeyId, String> {
        &self.revoked
    }

    /// The keys trusted for `package`, from every rule that covers it.
    pub fn trusted_for(&self, package: &str) -> Vec<KeyId> {
        let mut out: Vec<KeyId> =
            self.keys.iter().filter(|(p, _)| p.matches(package)).flat_map(|(_, k)| k.iter().copied()).collect();
        out.sort();
        out.dedup();
        out
    }

    /// What the policy says about a version of `package` signed by `signed_by`
    /// (`None`: unsigned). Revocation wins over trust.
    pub fn decide(&self, package: &str, signed_by: Option<&KeyId>) -> Decision {
        let Some(key) = signed_by else {
            return match self.unsigned.iter().find(|p| p.matches(package)) {
                Some(by) => Decision::UnsignedAllowed { by: by.clone() },
                None => Decision::Unsigned,
            };
        };
        if let Some(reason) = self.revoked.get(key) {
            return Decision::Revoked { key: *key, reason: reason.clone() };
        }
        match self.keys.iter().find(|(p, keys)| p.matches(package) && keys.contains(key)) {
            Some((by, _)) => Decision::Trusted { key: *key, by: by.clone() },
            None => Decision::Untrusted { key: *key, trusted: self.trusted_for(package) },
        }
    }
}

/// Adds `item` to a policy list that holds each entry once; false if it was there.
fn push_new<T: PartialEq>(list: &mut Vec<T>, item: T) -> bool {
    if list.contains(&item) {
        return false;
    }
    list.push(item);
    true
}

/// Takes `item` off a policy list; false if it was not there.
fn remove_all<T: PartialEq>(list: &mut Vec<T>, item: &T) -> bool {
    let before = list.len();
    list.retain(|x| x != item);
    before != list.len()
}
