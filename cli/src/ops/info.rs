//! `ebpkg info`: what the default registry says of a package.

use std::sync::Arc;

use anyhow::Result;
use ebpkg_spec::PackageName;
use ebpkg_spec::attestation::KernelIdentity;
use ebpkg_spec::index::IndexEntry;
use ebpkg_spec::types::KeyId;

use crate::Ctx;
use crate::exit::{Failure, fail};

/// A package's versions, and the one a requirement picks.
pub struct PackageInfo {
    /// The newest version the requirement matches, preferring versions not yanked.
    pub chosen: IndexEntry,
    /// Every version, yanked ones too, in the index's order.
    pub versions: Arc<Vec<IndexEntry>>,
    /// What the chosen version's kernel verification attestations observed, by
    /// keys the trust policy trusts for it, and which were left out and why.
    pub kernels: Vec<AttestedKernel>,
    pub ignored: Vec<String>,
    /// This machine's kernel, when it could be told (to mark its row).
    pub this_kernel: Option<KernelIdentity>,
    /// Why the attestations could not be read (offline, the server down).
    pub unread: Option<String>,
}

/// One kernel one trusted attestation observed.
#[derive(Debug, Clone, serde::Serialize)]
pub struct AttestedKernel {
    pub kernel: KernelIdentity,
    pub outcome: String,
    pub refused: bool,
    pub observed_at: String,
    #[serde(serialize_with = "key_text")]
    pub key: KeyId,
}

fn key_text<S: serde::Serializer>(key: &KeyId, s: S) -> std::result::Result<S::Ok, S::Error> {
    s.collect_str(key)
}

pub fn info(ctx: &Ctx, name: &PackageName, req: &semver::VersionReq) -> Result<PackageInfo> {
    let regs = ctx.registries()?;
    let url = &regs.default;
    let versions = regs.index(url, name)?.ok_or_else(|| regs.not_found(url, name))?;
    let chosen = versions
        .iter()
        .filter(|e| req.matches(&e.vers))
        .max_by(|a, b| (!a.yanked, &a.vers).cmp(&(!b.yanked, &b.vers)))
        .ok_or_else(|| fail(Failure::Registry, format!("no version of {name} matches {req}")))?
        .clone();
    let policy = ctx.trust_policy()?;
    let registry = regs.open(url)?;
    // What cannot be read (offline, a server down) is said, not a failure: the
    // rest of what info shows came from the cache.
    let judged = match crate::ops::kernel_attestations::judge_version(
        &ctx.cache()?,
        registry.as_ref(),
        &(&chosen).into(),
        &policy,
        ctx.offline,
    ) {
        Ok(judged) => judged,
        Err(e) if matches!(e.kind(), ebpkg_sources::ErrorKind::Tuf { .. }) => return Err(e.into()),
        Err(e) => {
            let this_kernel = None;
            return Ok(PackageInfo {
                chosen,
                versions,
                kernels: Vec::new(),
                ignored: Vec::new(),
                this_kernel,
                unread: Some(e.to_string()),
            });
        }
    };
    let mut kernels: Vec<AttestedKernel> = judged
        .trusted
        .iter()
        .flat_map(|(key, stated)| {
            stated.kernels.iter().map(|k| {
                let outcome = k.outcome();
                AttestedKernel {
                    kernel: k.kernel.clone(),
                    refused: matches!(outcome, ebpkg_spec::attestation::Outcome::Refused { .. }),
                    outcome: outcome.to_string(),
                    observed_at: k.observed_at.clone(),
                    key: *key,
                }
            })
        })
        .collect();
    kernels.sort_by(|a, b| (&a.kernel.release, &a.observed_at).cmp(&(&b.kernel.release, &b.observed_at)));
    let this_kernel = crate::ops::kernel_fit::RunningKernel::current().identity().ok();
    Ok(PackageInfo { chosen, versions, kernels, ignored: judged.ignored, this_kernel, unread: None })
}
