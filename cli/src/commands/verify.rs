//! `ebpkg verify`.

use std::process::ExitCode;

use anyhow::Result;
use clap::Args;
use ebpkg_build::{RebuildOutcome, Rebuilt};
use ebpkg_spec::PackageName;

use ebpkg::Ctx;
use ebpkg::exit::{Failure, fail};
use ebpkg::ops::verify::{RebuildReport, SignOptions, SignedRebuild, VerifyTarget, rebuilt_sha256};

#[derive(Args)]
#[command(after_help = "A version's shipped objects (`prebuilt` in its ebpkg.toml, as `ebpkg publish --with-objects` \
writes them) are what installs load; its C sources are what native chains are compiled from. --rebuild fetches the \
version as an install does (archive checked against the index, signature and trust policy), compiles each shipped \
object's source again as publish does (reproducibly) with the very compiler the object names (its DWARF producer; \
`clang-N` or `clang` on PATH), and compares the bytes.\n\n\
Each object is reported as `match`, `mismatch` (the object is not what its source builds to), or `cannot-rebuild` \
(and why: which compiler is missing). Exit status: 0 when every object matched, 11 when one mismatched, 12 when none \
mismatched but one could not be rebuilt.\n\n\
Examples:\n  ebpkg verify --rebuild meter@1.0.0     one published version\n  \
ebpkg verify --rebuild                 every package of the project's ebpkg.lock")]
pub struct VerifyArgs {
    /// Rebuild every shipped object from its source and compare the bytes.
    #[arg(long, required = true)]
    rebuild: bool,
    /// The published version, `name@version`; without it, every package of the
    /// project's ebpkg.lock.
    #[arg(value_name = "NAME@VERSION")]
    package: Option<String>,
    /// Sign the result as an in-toto rebuild attestation (predicate
    /// https://ebpkg.dev/attestation/rebuild/v1), with this key (a key name or
    /// a private key file; without a value, the key named `default`).
    #[arg(long, value_name = "NAME|FILE", num_args = 0..=1)]
    sign: Option<Option<String>>,
    /// Write the attestation here. Default: NAME-VERSION.rebuild.json, unless --publish.
    #[arg(long, value_name = "FILE", requires = "sign")]
    out: Option<std::path::PathBuf>,
    /// Attach the attestation to the version in its registry (the key must be
    /// registered there). A publisher's own rebuild attestation is
    /// informational: installs under `prebuilt-objects rebuilt` count only
    /// rebuilders their trust policy lists (`ebpkg trust rebuilder add`), never
    /// the key that signed the version.
    #[arg(long, requires = "sign")]
    publish: bool,
}

pub fn run(ctx: &Ctx, args: VerifyArgs) -> Result<ExitCode> {
    let target = match &args.package {
        None => VerifyTarget::Lockfile,
        Some(spec) => {
            let Some((name, version)) = spec.split_once('@') else {
                return Err(fail(
                    Failure::Usage,
                    format!("`{spec}`: name the version, as `{spec}@VERSION` (`ebpkg info {spec}` lists them)"),
                ));
            };
            let version = semver::Version::parse(version)
                .map_err(|e| fail(Failure::Usage, format!("`{version}` is not a version: {e}")))?;
            let name = PackageName::new(name).map_err(|e| ebpkg::exit::bad_name(name, &e))?;
            VerifyTarget::Version { name, version }
        }
    };
    let report = ebpkg::ops::verify::rebuild(ctx, &target)?;
    let signed = match args.sign {
        Some(key) => ebpkg::ops::verify::sign(
            ctx,
            &report,
            SignOptions {
                key,
                passphrase: &|| crate::commands::keys::passphrase(false),
                out: args.out,
                publish: args.publish,
            },
        )?,
        None => Vec::new(),
    };
    print(ctx, &report, &signed)?;
    match report.failure() {
        None => Ok(ExitCode::SUCCESS),
        Some((failure, message)) => Err(fail(failure, message)),
    }
}

fn print(ctx: &Ctx, r: &RebuildReport, signed: &[SignedRebuild]) -> Result<()> {
    if ctx.ui.json {
        let objects: Vec<serde_json::Value> = r
            .objects
            .iter()
            .map(|o| {
                let reason = match &o.outcome {
                    RebuildOutcome::Match { .. } => None,
                    RebuildOutcome::Mismatch { rebuilt: Rebuilt::Failed(why), .. } => Some(why.clone()),
                    RebuildOutcome::Mismatch { .. } => None,
                    RebuildOutcome::CannotRebuild { reason, .. } => Some(reason.clone()),
                };
                serde_json::json!({
                    "package": o.package.name.as_str(),
                    "version": o.package.version.to_string(),
                    "archive_sha256": o.archive.to_string(),
                    "object": o.object.as_str(),
                    "hook": o.hook.name(),
                    "source": o.source.as_ref().map(|s| s.as_str()),
                    "items": o.items,
                    "sha256": o.sha256.to_string(),
                    "compiler": o.outcome.compiler(),
                    "outcome": o.outcome.name(),
                    "rebuilt_sha256": rebuilt_sha256(o).map(|s| s.to_string()),
                    "reason": reason,
                })
            })
            .collect();
        let packages: Vec<serde_json::Value> = r
            .packages
            .iter()
            .map(|p| {
                let signed = signed.iter().find(|s| s.package == p.id);
                serde_json::json!({
                    "name": p.id.name.as_str(),
                    "version": p.id.version.to_string(),
                    "archive_sha256": p.archive.to_string(),
                    "attestation": signed.map(|s| serde_json::json!({
                        "signed_by": s.signed_by.to_string(),
                        "written": s.written,
                        "published": s.published.as_ref().map(|a| serde_json::json!({
                            "accepted": a,
                        })),
                        "predicate": s.predicate,
                    })),
                })
            })
            .collect();
        return ctx.ui.json(&serde_json::json!({
            "packages": packages,
            "objects": objects,
            "match": r.count("match"),
            "mismatch": r.count("mismatch"),
            "cannot_rebuild": r.count("cannot-rebuild"),
        }));
    }
    for o in &r.objects {
        let from = o.source.as_ref().map(|s| format!(" from {s}")).unwrap_or_default();
        ctx.ui.out(format!(
            "{:<14} {} {} ({}){from}: {}",
            o.outcome.name(),
            o.package,
            o.object,
            o.hook.name(),
            o.outcome
        ));
    }
    ctx.ui.status(
        "Verified",
        format!(
            "{} shipped object(s) of {} package(s): {} match, {} mismatch, {} cannot be rebuilt",
            r.objects.len(),
            r.packages.len(),
            r.count("match"),
            r.count("mismatch"),
            r.count("cannot-rebuild")
        ),
    );
    Ok(())
}
