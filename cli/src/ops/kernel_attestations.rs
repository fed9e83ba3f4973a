//! What the kernel verification attestations of the packages about to be
//! installed say about this kernel, read before anything is built: a kernel on
//! which a trusted attestation saw a program refused is refused with that
//! reason; a kernel no trusted attestation observed is noted (or refused, when
//! the trust policy says `[kernels] unattested = "refuse"`).
//!
//! Only attestations that verify with a key the trust policy trusts for the
//! package (or the key that signed the version itself, which fetch accepted)
//! count, and only for the very archive installed; every other one is ignored,
//! saying why. This kernel is told apart from others by its release, machine
//! and the SHA-256 of its BTF.

use anyhow::Result;
use ebpkg_signing::{Decision, SignedAttestation, TrustPolicy, Unattested};
use ebpkg_sources::{Cache, Registry};
use ebpkg_spec::attestation::{
    AttestationFile, KernelIdentity, KernelObservation, KernelVerification, Outcome, PREDICATE_TYPE,
};
use ebpkg_spec::types::{KeyId, Sha256Digest};
use ebpkg_spec::{LockedPackage, PackageId, PackageName};
use serde::Serialize;

use crate::Ctx;
use crate::exit::{Failure, fail};
use crate::registries::Registries;

/// What one version's attestations say about this kernel.
#[derive(Debug, Clone, Serialize)]
pub struct Coverage {
    #[serde(serialize_with = "as_text")]
    pub package: PackageId,
    #[serde(flatten)]
    pub status: Status,
    /// Attestations left out, and why.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub ignored: Vec<String>,
}

fn as_text<S: serde::Serializer>(id: &PackageId, s: S) -> std::result::Result<S::Ok, S::Error> {
    s.collect_str(id)
}

#[derive(Debug, Clone, Serialize)]
#[serde(tag = "status", rename_all = "kebab-case")]
pub enum Status {
    /// A trusted attestation observed this kernel and everything verified.
    Verified {
        #[serde(serialize_with = "key_text")]
        key: KeyId,
        observed_at: String,
        items: usize,
        native: usize,
        tiered: usize,
    },
    /// A trusted attestation observed this kernel refuse `item`.
    Refused {
        #[serde(serialize_with = "key_text")]
        key: KeyId,
        observed_at: String,
        item: String,
        reason: String,
    },
    /// No trusted attestation observed this kernel; `kernels` are the releases
    /// they did observe.
    Unattested {
        kernels: Vec<String>,
        /// Set when one observed this kernel's release and machine with another
        /// BTF: another build of the release, which it does not cover.
        #[serde(skip_serializing_if = "Option::is_none")]
        same_release: Option<OtherBuild>,
    },
    /// The attestations could not be read (offline, the registry failed).
    Unread { why: String },
}

/// Attestations of this kernel's release and machine, whose BTF differs from
/// this kernel's: the kernel they observed was built from other sources or with
/// another configuration, so its verifier and types may differ.
#[derive(Debug, Clone, Serialize)]
pub struct OtherBuild {
    /// `uname -r` and `uname -m`, as this kernel has them.
    pub kernel: String,
    /// The SHA-256 of the BTF each attested build has.
    pub attested_btf: Vec<Sha256Digest>,
    /// The SHA-256 of this kernel's BTF.
    pub this_btf: Sha256Digest,
}

impl std::fmt::Display for OtherBuild {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let short = |d: &Sha256Digest| d.to_hex().chars().take(12).collect::<String>();
        let attested: Vec<String> = self.attested_btf.iter().map(short).collect();
        write!(
            f,
            "attested on {} with BTF sha256 {}…, but this kernel has the same release and machine with BTF sha256 \
             {}…: another build of that release, which those attestations do not cover",
            self.kernel,
            attested.join("…, "),
            short(&self.this_btf)
        )
    }
}

fn key_text<S: serde::Serializer>(key: &KeyId, s: S) -> std::result::Result<S::Ok, S::Error> {
    s.collect_str(key)
}

/// The attestations of `name@version` (its registry's, checked against TUF
/// there), each verified and judged, by `policy`, with keys from `cache`.
pub struct Judged {
    /// Trusted attestations: the key and what it states.
    pub trusted: Vec<(KeyId, KernelVerification)>,
    pub ignored: Vec<String>,
}

/// A published version whose attestations are judged.
pub struct Attested<'a> {
    pub name: &'a PackageName,
    pub version: &'a semver::Version,
    /// Its archive's digest.
    pub checksum: &'a Sha256Digest,
    /// The key that signed it, when the fetch verified and accepted it.
    pub signer: Option<KeyId>,
}

impl<'a> From<&'a LockedPackage> for Attested<'a> {
    fn from(p: &'a LockedPackage) -> Attested<'a> {
        Attested { name: &p.name, version: &p.version, checksum: &p.checksum, signer: p.signer }
    }
}

/// A version as its index line names it: the signer it names is not verified
/// here, so only keys the trust policy trusts count.
impl<'a> From<&'a ebpkg_spec::IndexEntry> for Attested<'a> {
    fn from(e: &'a ebpkg_spec::IndexEntry) -> Attested<'a> {
        Attested { name: &e.name, version: &e.vers, checksum: &e.cksum, signer: None }
    }
}

/// Reads and judges the kernel verification attestations of `p` in `registry`.
pub fn judge_version(
    cache: &Cache,
    registry: &dyn Registry,
    p: &Attested<'_>,
    policy: &TrustPolicy,
    offline: bool,
) -> Result<Judged, ebpkg_sources::Error> {
    let (signed, ignored) = trusted_attestations(cache, registry, p, policy, offline, PREDICATE_TYPE)?;
    let mut judged = Judged { trusted: Vec::new(), ignored };
    for (n, key, attestation) in signed {
        match attestation.kernel_verification(p.name, p.version, p.checksum) {
            Ok(stated) => judged.trusted.push((key, stated)),
            Err(e) => judged.ignored.push(format!("attestation {n}: {e}")),
        }
    }
    Ok(judged)
}

/// The attestations of `p` in `registry` of `predicate_type` (others are
/// skipped without a word: they are another kind's), each signed by a key
/// the policy accepts for that type and verified with it: `(number in the
/// file, key, attestation)`, and why each other one of that type was left out.
/// A kernel verification counts from the version's signer or a key trusted to
/// publish the package; a rebuild only from a listed rebuilder that did not
/// sign the version ([`TrustPolicy::judge_rebuilder`]).
#[allow(clippy::type_complexity)]
pub fn trusted_attestations(
    cache: &Cache,
    registry: &dyn Registry,
    p: &Attested<'_>,
    policy: &TrustPolicy,
    offline: bool,
    predicate_type: &str,
) -> Result<(Vec<(usize, KeyId, SignedAttestation)>, Vec<String>), ebpkg_sources::Error> {
    let (mut trusted, mut ignored) = (Vec::new(), Vec::new());
    let Some(bytes) = registry.attestations(p.name, p.version)? else { return Ok((trusted, ignored)) };
    let file = match AttestationFile::parse(&bytes) {
        Ok(file) => file,
        Err(e) => {
            ignored.push(format!("the registry's attestation file: {e}"));
            return Ok((trusted, ignored));
        }
    };
    for (n, bundle) in file.attestations.iter().enumerate() {
        let parsed = serde_json::to_vec(bundle)
            .map_err(|e| e.to_string())
            .and_then(|json| SignedAttestation::parse(&json).map_err(|e| e.to_string()));
        let attestation = match parsed {
            Ok(a) if a.statement().predicate_type != predicate_type => continue,
            Ok(a) => a,
            Err(why) => {
                ignored.push(format!("attestation {}: {why}", n + 1));
                continue;
            }
        };
        match judge_key(cache, registry, p, policy, offline, &attestation) {
            Ok(key) => trusted.push((n + 1, key, attestation)),
            Err(why) => ignored.push(format!("attestation {}: {why}", n + 1)),
        }
    }
    Ok((trusted, ignored))
}

/// The key that signed `attestation`, when the policy accepts it for the
/// package and the attestation's type and the signature verifies with it.
fn judge_key(
    cache: &Cache,
    registry: &dyn Registry,
    p: &Attested<'_>,
    policy: &TrustPolicy,
    offline: bool,
    attestation: &SignedAttestation,
) -> std::result::Result<KeyId, String> {
    let Some(key_id) = attestation.key_hint().copied() else {
        return Err("it names no key (publicKey.hint)".into());
    };
    if attestation.statement().predicate_type == ebpkg_spec::attestation::rebuild::REBUILD_PREDICATE_TYPE {
        // A publisher vouching for its own objects proves nothing: only an
        // independent rebuilder the policy names counts.
        policy.judge_rebuilder(&key_id, p.signer.as_ref())?;
    } else {
        // The key that signed the version itself was accepted by the fetch.
        let trusted = p.signer == Some(key_id)
            || matches!(policy.decide(p.name.as_str(), Some(&key_id)), Decision::Trusted { .. });
        if !trusted {
            return Err(format!("signed by key {key_id}, which the trust policy does not trust for {}", p.name));
        }
        if let Decision::Revoked { reason, .. } = policy.decide(p.name.as_str(), Some(&key_id)) {
            return Err(format!("signed by key {key_id}, which the trust policy revokes ({reason})"));
        }
    }
    let found = cache.publisher_key(registry, &key_id, offline).map_err(|problem| match problem {
        ebpkg_sources::KeyProblem::Offline => format!("key {key_id} is not cached and this run is offline"),
        ebpkg_sources::KeyProblem::Unavailable(what) => what,
        ebpkg_sources::KeyProblem::Io(e) => e.to_string(),
    })?;
    if let Some(at) = &found.revoked_at {
        return Err(format!("signed by key {key_id}, which its owner revoked on {at}"));
    }
    attestation.verify(&found.key).map_err(|e| e.to_string())?;
    Ok(key_id)
}

/// The newest of several observations.
fn newest<'a>(obs: Vec<(&'a KeyId, &'a KernelObservation)>) -> Option<(&'a KeyId, &'a KernelObservation)> {
    obs.into_iter().max_by(|a, b| a.1.observed_at.cmp(&b.1.observed_at))
}

/// What the trusted attestations say about `kernel`.
fn status_on(trusted: &[(KeyId, KernelVerification)], kernel: &KernelIdentity) -> Status {
    let here: Vec<(&KeyId, &KernelObservation)> = trusted
        .iter()
        .flat_map(|(key, v)| v.kernels.iter().map(move |k| (key, k)))
        .filter(|(_, k)| &k.kernel == kernel)
        .collect();
    // A refusal anywhere is what matters: the newest observation of one.
    let refusals: Vec<_> = here.iter().copied().filter(|(_, k)| k.refused().next().is_some()).collect();
    if let Some((key, k)) = newest(refusals)
        && let Outcome::Refused { item } = k.outcome()
    {
        return Status::Refused {
            key: *key,
            observed_at: k.observed_at.clone(),
            item: format!("{} `{}`", item.kind.name(), item.name),
            reason: item.reason.clone().unwrap_or_else(|| "the verifier said no more".into()),
        };
    }
    if let Some((key, k)) = newest(here)
        && let Outcome::Verified { items, native, tiered } = k.outcome()
    {
        return Status::Verified { key: *key, observed_at: k.observed_at.clone(), items, native, tiered };
    }
    let observed = || trusted.iter().flat_map(|(_, v)| v.kernels.iter().map(|k| &k.kernel));
    let mut kernels: Vec<String> = observed().map(|k| k.release.clone()).collect();
    kernels.sort();
    kernels.dedup();
    // A kernel is its release, machine and BTF: say which of them differ when
    // only the BTF does, or "attested on <this release>" reads as a contradiction.
    let mut attested_btf: Vec<Sha256Digest> = observed()
        .filter(|k| k.release == kernel.release && k.architecture == kernel.architecture)
        .map(|k| k.btf.sha256)
        .collect();
    attested_btf.sort();
    attested_btf.dedup();
    let same_release = (!attested_btf.is_empty()).then(|| OtherBuild {
        kernel: kernel.to_string(),
        attested_btf,
        this_btf: kernel.btf.sha256,
    });
    Status::Unattested { kernels, same_release }
}

/// The coverage of every package in `packages` (registry packages: path
/// dependencies and the project have no attestations) on the running kernel.
pub fn check(
    ctx: &Ctx,
    regs: &Registries<'_>,
    packages: &[&LockedPackage],
    kernel: &crate::ops::kernel_fit::RunningKernel,
) -> Result<Vec<Coverage>> {
    let policy = ctx.trust_policy()?;
    let cache = ctx.cache()?;
    let mut identity = None;
    let mut out = Vec::new();
    for p in packages {
        let registry = regs.open(&p.source)?;
        let coverage = match judge_version(&cache, registry.as_ref(), &Attested::from(*p), &policy, ctx.offline) {
            // The BTF is read and hashed only when there is an attestation to match.
            Ok(j) if j.trusted.is_empty() => {
                let status = Status::Unattested { kernels: Vec::new(), same_release: None };
                Coverage { package: p.id(), status, ignored: j.ignored }
            }
            Ok(j) => {
                let identity = match &identity {
                    Some(identity) => identity,
                    None => identity.insert(kernel.identity()?),
                };
                Coverage { package: p.id(), status: status_on(&j.trusted, identity), ignored: j.ignored }
            }
            // A file the signed metadata does not vouch for is a registry lying,
            // not one that could not be reached.
            Err(e) if matches!(e.kind(), ebpkg_sources::ErrorKind::Tuf { .. }) => return Err(e.into()),
            Err(e) => Coverage { package: p.id(), status: Status::Unread { why: e.to_string() }, ignored: Vec::new() },
        };
        out.push(coverage);
    }
    Ok(out)
}

/// Says what the coverage is, and refuses before any build: exit 5 for a
/// package whose trusted attestation saw this kernel refuse it; exit 10 for
/// unattested (or unread) packages when the policy refuses those.
pub fn enforce(ctx: &Ctx, coverage: &[Coverage], kernel: &crate::ops::kernel_fit::RunningKernel) -> Result<()> {
    let kernel = kernel.name();
    let policy = ctx.trust_policy()?;
    for c in coverage {
        for why in &c.ignored {
            ctx.ui.warn(format!("{}: ignored {why}", c.package));
        }
    }
    let refused: Vec<String> = coverage
        .iter()
        .filter_map(|c| match &c.status {
            Status::Refused { key, observed_at, item, reason } => Some(format!(
                "{} was refused by this kernel's verifier: {item}: {reason} (attested by key {key}, {observed_at})",
                c.package
            )),
            _ => None,
        })
        .collect();
    if !refused.is_empty() {
        return Err(fail(
            Failure::Kernel,
            format!(
                "{}; this kernel is {kernel}, nothing was built or installed. Use another version (`ebpkg info \
                 PACKAGE` shows the kernels each is attested on) or another kernel",
                refused.join("; ")
            ),
        ));
    }
    for c in coverage {
        if let Status::Verified { key, items, native, tiered, .. } = &c.status {
            let tiers = if *tiered > 0 { format!(", native tier {native} of {tiered}") } else { String::new() };
            ctx.ui.status(
                "Attested",
                format!("{} on this kernel: {items} item(s) verified{tiers} (key {key})", c.package),
            );
        }
    }
    let unattested: Vec<String> = coverage
        .iter()
        .filter_map(|c| match &c.status {
            Status::Unattested { same_release: Some(other), .. } => Some(format!("{} ({other})", c.package)),
            Status::Unattested { kernels, .. } if kernels.is_empty() => Some(c.package.to_string()),
            Status::Unattested { kernels, .. } => Some(format!("{} (attested on {})", c.package, kernels.join(", "))),
            Status::Unread { why } => Some(format!("{} (its attestations could not be read: {why})", c.package)),
            _ => None,
        })
        .collect();
    if unattested.is_empty() {
        return Ok(());
    }
    if policy.unattested() == Unattested::Refuse {
        return Err(fail(
            Failure::Trust,
            format!(
                "no trusted attestation covers this kernel, {kernel}, for {}, and the trust policy refuses unattested \
                 kernels ([kernels] unattested = \"refuse\"; `ebpkg trust unattested-kernels note` takes it back); nothing \
                 was built or installed. Ask the publisher to \
                 attest this kernel (`ebpkg attest`), or attest it yourself and trust your key for the package",
                unattested.join(", ")
            ),
        ));
    }
    ctx.ui.note(format!("no trusted attestation covers this kernel, {kernel}, for {}", unattested.join(", ")));
    Ok(())
}
