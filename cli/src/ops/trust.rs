//! The trust policy applied to versions of packages: what `fetch` refuses, a
//! resolution leaves out beforehand, so that ebpkg.lock never pins a version the
//! next install would refuse (one hostile publish must not block every update).
//! And the policy files themselves: read, merged, written, and edited by
//! `ebpkg trust`.

use std::path::{Path, PathBuf};

use anyhow::{Context, Result};
use ebpkg_signing::{Decision, TrustPolicy};
use ebpkg_spec::PackageName;
use ebpkg_spec::names::PackageGlob;
use ebpkg_spec::types::KeyId;

use crate::Ctx;
use crate::ops::keys::key_id_named;

pub use crate::trust_files::{PROJECT_TRUST_FILE, read_policy};

/// What the policy says of one version, before anything of it is fetched.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Verdict {
    /// Unsigned, and a rule (`by`) allows it.
    UnsignedAllowed { by: PackageGlob },
    /// Signed by `key`, which is trusted for the package.
    Trusted { key: KeyId },
    /// Signed by `key`, trusted from now on (first use, --trust-new-keys).
    TrustedOnFirstUse { key: KeyId },
    /// Refused: `why` follows the version's `name@version`; `fix` says what
    /// the user can do.
    Refused { why: String, fix: String },
}

/// The trust policy in force for a command.
pub struct Trust {
    pub policy: TrustPolicy,
    /// --trust-new-keys: a key is trusted on its first use for a package.
    trust_new_keys: bool,
    /// The user's policy file, where first uses are recorded.
    pub user_path: std::path::PathBuf,
}

impl Trust {
    /// The user's policy merged with the project's (of the current directory),
    /// as the command read it ([`Ctx::trust_policy`]).
    pub fn load(ctx: &Ctx) -> Result<Trust> {
        Ok(Trust {
            policy: ctx.trust_policy()?,
            trust_new_keys: ctx.trust_new_keys,
            user_path: ctx.config.trust_path.clone(),
        })
    }

    /// What the policy says of a version of `name` signed by `signer`.
    pub fn judge(&self, name: &PackageName, signer: Option<&KeyId>) -> Verdict {
        match self.policy.decide(name.as_str(), signer) {
            Decision::UnsignedAllowed { by } => Verdict::UnsignedAllowed { by },
            Decision::Trusted { key, .. } => Verdict::Trusted { key },
            Decision::Untrusted { key, trusted } if trusted.is_empty() && self.trust_new_keys => {
                Verdict::TrustedOnFirstUse { key }
            }
            Decision::Unsigned => Verdict::Refused {
                why: "is not signed, and no trust policy allows it unsigned".into(),
                fix: format!(
                    "Ask its publisher to sign it, or allow it: `ebpkg trust allow-unsigned {name}` (add --project to \
                     record it in the project's ebpkg-trust.toml)"
                ),
            },
            Decision::Revoked { key, reason } => Verdict::Refused {
                why: format!("is signed only by key {key}, which the trust policy revokes ({reason})"),
                fix: "Use a version signed by another key".into(),
            },
            Decision::Untrusted { key, trusted } if trusted.is_empty() => Verdict::Refused {
                why: format!("is signed by key {key}, and the trust policy trusts no key for {name}"),
                fix: format!(
                    "Check with the publisher that the key is theirs, then `ebpkg trust add {name} {key}` (or install \
                     once with --trust-new-keys to trust it on first use)"
                ),
            },
            Decision::Untrusted { key, trusted } => {
                let trusted: Vec<String> = trusted.iter().map(ToString::to_string).collect();
                Verdict::Refused {
                    why: format!(
                        "is signed by key {key}, but the trust policy trusts only {} for {name}",
                        trusted.join(", ")
                    ),
                    fix: format!(
                        "If the publisher rotated keys, confirm it with them, then `ebpkg trust add {name} {key}`"
                    ),
                }
            }
        }
    }
}

pub fn write_policy(path: &Path, policy: &TrustPolicy) -> Result<()> {
    if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
        std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
    }
    ebpkg_fs::write_atomic(path, policy.to_toml_string().as_bytes(), 0o644)
        .with_context(|| format!("writing {}", path.display()))
}

/// Records in the policy file at `path` that `key` is trusted for exactly
/// `name`, unless that file already decides otherwise (trusts it by some rule,
/// or revokes it: then its owner's decision stands). Says whether it changed.
pub fn record_trust(path: &Path, name: &PackageName, key: KeyId) -> Result<bool> {
    let mut policy = read_policy(path)?;
    let exact = PackageGlob::new(name.as_str()).map_err(|e| anyhow::anyhow!("{e}"))?;
    if !matches!(policy.decide(name.as_str(), Some(&key)), Decision::Untrusted { .. }) || !policy.trust(exact, key) {
        return Ok(false);
    }
    write_policy(path, &policy)?;
    Ok(true)
}

/// Which policy file `ebpkg trust` reads or edits.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PolicyScope {
    /// The user's trust.toml.
    User,
    /// The project's ebpkg-trust.toml (`--project`).
    Project,
}

/// A change `ebpkg trust` makes to a policy file. A key is named as on the
/// command line: a key id, a public key file, or one of the user's key names.
pub enum TrustChange {
    /// Trust `key` to sign the packages `packages` covers.
    Add {
        packages: PackageGlob,
        key: String,
    },
    /// Stop trusting `key` (or every key) for `packages`.
    Remove {
        packages: PackageGlob,
        key: Option<String>,
    },
    AllowUnsigned {
        packages: PackageGlob,
    },
    DisallowUnsigned {
        packages: PackageGlob,
    },
    /// Revoke `key`: everything it signed is refused.
    Revoke {
        key: String,
        reason: String,
    },
    /// What an install does on a kernel no trusted attestation observed.
    Unattested(ebpkg_signing::Unattested),
    /// When an install loads an object a package ships prebuilt.
    Prebuilt(ebpkg_signing::PrebuiltObjects),
    /// List `key` as a rebuilder, whose rebuild attestations vouch for shipped objects.
    AddRebuilder {
        key: String,
    },
    /// Take `key` off the rebuilders.
    RemoveRebuilder {
        key: String,
    },
}

/// What a change did to its policy file.
pub struct PolicyEdit {
    pub path: PathBuf,
    /// False when the file already said so (and was left as it was).
    pub changed: bool,
}

/// The policy `ebpkg trust list` shows: the one in force (the user's merged with
/// the project's, when there is one), or the project's file alone.
pub fn listed_policy(ctx: &Ctx, scope: PolicyScope) -> Result<TrustPolicy> {
    match scope {
        PolicyScope::User => ctx.trust_policy(),
        PolicyScope::Project => read_policy(&policy_path(ctx, scope)?),
    }
}

/// Makes `change` in the policy file, written only when it changed.
pub fn edit_policy(ctx: &Ctx, scope: PolicyScope, change: TrustChange) -> Result<PolicyEdit> {
    let path = policy_path(ctx, scope)?;
    let mut policy = read_policy(&path)?;
    let changed = apply(ctx, &mut policy, change)?;
    if changed {
        write_policy(&path, &policy)?;
    }
    Ok(PolicyEdit { path, changed })
}

fn policy_path(ctx: &Ctx, scope: PolicyScope) -> Result<PathBuf> {
    Ok(match scope {
        PolicyScope::User => ctx.config.trust_path.clone(),
        PolicyScope::Project => ctx.project()?.dir.join(PROJECT_TRUST_FILE),
    })
}

/// Applies `change` to `policy`; says whether it changed.
fn apply(ctx: &Ctx, policy: &mut TrustPolicy, change: TrustChange) -> Result<bool> {
    Ok(match change {
        TrustChange::Add { packages, key } => policy.trust(packages, key_id_named(ctx, &key)?),
        TrustChange::Remove { packages, key } => {
            let key = key.map(|k| key_id_named(ctx, &k)).transpose()?;
            policy.untrust(&packages, key.as_ref())
        }
        TrustChange::AllowUnsigned { packages } => policy.allow_unsigned(packages),
        TrustChange::DisallowUnsigned { packages } => policy.disallow_unsigned(&packages),
        TrustChange::Revoke { key, reason } => policy.revoke(key_id_named(ctx, &key)?, reason),
        TrustChange::Unattested(rule) => policy.set_unattested(rule),
        TrustChange::Prebuilt(rule) => policy.set_prebuilt(rule),
        TrustChange::AddRebuilder { key } => policy.add_rebuilder(key_id_named(ctx, &key)?),
        TrustChange::RemoveRebuilder { key } => policy.remove_rebuilder(&key_id_named(ctx, &key)?),
    })
}
