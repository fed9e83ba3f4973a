//! `ebpkg verify --rebuild`: every object a published version ships (SPEC.md
//! §4.7) rebuilt from the version's own source with the compiler the object
//! names, and compared byte for byte. The versions are fetched as an install
//! fetches them (archive checked against the index, signature and trust policy),
//! so what is checked is exactly what installs load.

use anyhow::Result;
use ebpkg_build::{RebuildOutcome, Rebuilt, ShippedObject};
use ebpkg_resolver::UpdatePolicy;
use ebpkg_spec::types::{Hook, RelPath, Sha256Digest};
use ebpkg_spec::{PackageId, PackageName};
use semver::Version;

use crate::Ctx;
use crate::exit::{Failure, fail};
use crate::ops::fetch::{Fetched, fetch_all};
use crate::ops::resolve::{Root, resolve, resolve_project};
use crate::ops::shipped::shipped_objects;

/// What to check.
pub enum VerifyTarget {
    /// One published version of the default registry.
    Version { name: PackageName, version: Version },
    /// Every package of the project's ebpkg.lock.
    Lockfile,
}

/// One shipped object and what rebuilding its source gave.
#[derive(Debug, Clone)]
pub struct ObjectCheck {
    pub package: PackageId,
    /// The package archive's SHA-256 (what installs verify and load from).
    pub archive: Sha256Digest,
    pub object: RelPath,
    /// The object's SHA-256, as its ebpkg.toml names it.
    pub sha256: Sha256Digest,
    pub hook: Hook,
    pub source: Option<RelPath>,
    /// The programs and loaders taken from it.
    pub items: Vec<String>,
    pub outcome: RebuildOutcome,
}

/// Every shipped object checked, and the packages looked at.
pub struct RebuildReport {
    pub packages: Vec<CheckedPackage>,
    pub objects: Vec<ObjectCheck>,
}

/// A version looked at.
pub struct CheckedPackage {
    pub id: PackageId,
    /// Its archive's SHA-256.
    pub archive: Sha256Digest,
    /// The registry it was fetched from (`ebpkg.lock`'s `source`).
    pub registry: ebpkg_spec::RegistryId,
}

impl RebuildReport {
    pub fn count(&self, name: &str) -> usize {
        self.objects.iter().filter(|o| o.outcome.name() == name).count()
    }

    /// The exit failure: a mismatch first (the worse news), then an object
    /// that could not be checked; `None` when every object matched.
    pub fn failure(&self) -> Option<(Failure, String)> {
        let (mismatch, cannot) = (self.count("mismatch"), self.count("cannot-rebuild"));
        let total = self.objects.len();
        if mismatch > 0 {
            Some((
                Failure::RebuildMismatch,
                format!("{mismatch} of {total} shipped object(s) are not what their source builds to"),
            ))
        } else if cannot > 0 {
            Some((
                Failure::RebuildUnavailable,
                format!("{cannot} of {total} shipped object(s) could not be rebuilt here"),
            ))
        } else {
            None
        }
    }
}

/// Fetches what `target` names and rebuilds every object it ships.
pub fn rebuild(ctx: &Ctx, target: &VerifyTarget) -> Result<RebuildReport> {
    let regs = ctx.registries()?;
    let fetched: Vec<Fetched> = match target {
        VerifyTarget::Version { name, version } => {
            let req = semver::VersionReq::parse(&format!("={version}"))
                .map_err(|e| fail(Failure::Usage, format!("`{version}`: {e}")))?;
            ctx.ui.status("Resolving", PackageId::new(name.clone(), version.clone()).to_string());
            let lock = resolve(ctx, Root::of_package(name.clone(), req)?, None, UpdatePolicy::Nothing, &regs)?;
            // Only the version's own package is fetched: its dependencies ship
            // objects of their own, checked when they are named.
            let only: Vec<_> = lock
                .packages()
                .iter()
                .filter(|p| p.name.normalized() == name.normalized() && p.version == *version)
                .cloned()
                .collect();
            fetch_all(ctx, &regs, &ebpkg_spec::Lockfile::new(only))?
        }
        VerifyTarget::Lockfile => {
            let project = ctx.project()?;
            let lock = resolve_project(ctx, project, &regs, UpdatePolicy::Nothing)?.lock;
            fetch_all(ctx, &regs, &lock)?
        }
    };
    let builder = crate::ops::build::builder(ctx, &crate::ops::build::BuildOptions::default())?;
    let mut report = RebuildReport { packages: Vec::new(), objects: Vec::new() };
    for f in &fetched {
        let id = f.manifest.id();
        report.packages.push(CheckedPackage {
            id: id.clone(),
            archive: f.locked.checksum,
            registry: f.locked.source.clone(),
        });
        for s in shipped_objects(&f.manifest) {
            ctx.ui.status("Rebuilding", format!("{} ({}) of {id}", s.object, s.hook.name()));
            let outcome = check_one(&builder, f, &s);
            report.objects.push(ObjectCheck {
                package: id.clone(),
                archive: f.locked.checksum,
                object: s.object,
                sha256: s.sha256,
                hook: s.hook,
                source: s.source,
                items: s.items,
                outcome,
            });
        }
    }
    Ok(report)
}

fn check_one(builder: &ebpkg_build::Builder, f: &Fetched, s: &crate::ops::shipped::Shipped) -> RebuildOutcome {
    let Some(source) = &s.source else {
        return RebuildOutcome::CannotRebuild {
            compiler: None,
            reason: format!("the package ships no source for {}", s.items.join(", ")),
        };
    };
    let bytes = match ebpkg_fs::read(&f.root.join(s.object.as_str()), ebpkg_spec::MAX_OBJECT_BYTES) {
        Ok(b) => b,
        Err(e) => return RebuildOutcome::CannotRebuild { compiler: None, reason: format!("cannot read it: {e}") },
    };
    let actual = Sha256Digest::of(&bytes);
    if actual != s.sha256 {
        return RebuildOutcome::CannotRebuild {
            compiler: ebpkg_build::compiler_of(&bytes),
            reason: format!(
                "the file is not the object ebpkg.toml names (sha256 {actual}, not {}); installs ignore it and \
                 compile {source}",
                s.sha256
            ),
        };
    }
    let shipped = ShippedObject {
        package: f.manifest.id(),
        package_digest: f.locked.checksum,
        root: &f.root,
        kernel: f.manifest.package.kernel.build,
        hook: s.hook,
        source,
        object: &bytes,
    };
    // A check asked for by name is done again, not taken from a kept verdict.
    builder.rebuild_shipped(&shipped, false)
}

/// The SHA-256 an outcome's rebuild gave, when it gave an object.
pub fn rebuilt_sha256(o: &ObjectCheck) -> Option<Sha256Digest> {
    match &o.outcome {
        RebuildOutcome::Match { .. } => Some(o.sha256),
        RebuildOutcome::Mismatch { rebuilt: Rebuilt::Object(sha), .. } => Some(*sha),
        _ => None,
    }
}

/// How to sign a report (`--sign`).
pub struct SignOptions<'a> {
    /// A key name or private key file; the default key when `None`.
    pub key: Option<String>,
    pub passphrase: crate::ops::keys::Passphrase<'a>,
    /// Where to write the attestation (one version only).
    pub out: Option<std::path::PathBuf>,
    /// Attach it to the version in its registry.
    pub publish: bool,
}

/// One version's signed rebuild attestation.
pub struct SignedRebuild {
    pub package: PackageId,
    pub predicate: ebpkg_spec::attestation::rebuild::Rebuild,
    pub written: Option<std::path::PathBuf>,
    pub signed_by: ebpkg_spec::types::KeyId,
    pub published: Option<ebpkg_spec::registry_api::AttestationAccepted>,
}

/// The rebuild predicate of one version of the report.
pub fn predicate(report: &RebuildReport, p: &CheckedPackage) -> ebpkg_spec::attestation::rebuild::Rebuild {
    use ebpkg_spec::attestation::rebuild::{Rebuild, RebuildResult, RebuiltObject};
    use ebpkg_spec::attestation::{AttestedPackage, Attester, Digests};
    let objects = report
        .objects
        .iter()
        .filter(|o| o.package == p.id && o.archive == p.archive)
        .map(|o| RebuiltObject {
            object: o.object.to_string(),
            hook: o.hook,
            source: o.source.as_ref().map(ToString::to_string),
            digest: Digests { sha256: o.sha256 },
            compiler: o.outcome.compiler().map(str::to_owned),
            result: match o.outcome {
                RebuildOutcome::Match { .. } => RebuildResult::Match,
                RebuildOutcome::Mismatch { .. } => RebuildResult::Mismatch,
                RebuildOutcome::CannotRebuild { .. } => RebuildResult::CannotRebuild,
            },
            rebuilt: rebuilt_sha256(o).map(|sha256| Digests { sha256 }),
            reason: match &o.outcome {
                RebuildOutcome::Match { .. } => None,
                other => Some(one_line(&other.to_string())),
            },
        })
        .collect();
    Rebuild {
        package: AttestedPackage {
            name: p.id.name.clone(),
            version: p.id.version.clone(),
            archive: Digests { sha256: p.archive },
        },
        attester: Attester { tool: format!("ebpkg {}", env!("CARGO_PKG_VERSION")) },
        rebuilt_at: jiff::Timestamp::now()
            .round(jiff::Unit::Second)
            .unwrap_or_else(|_| jiff::Timestamp::now())
            .to_string(),
        objects,
    }
}

fn one_line(text: &str) -> String {
    let line: String = text.split_whitespace().collect::<Vec<_>>().join(" ");
    line.chars().take(ebpkg_spec::attestation::MAX_TEXT / 2).collect()
}

/// Signs, for each version of the report that ships objects, its rebuild as an
/// in-toto attestation (subjects: the archive and each object), writes it
/// and/or attaches it to the version in its registry.
pub fn sign(ctx: &Ctx, report: &RebuildReport, opts: SignOptions<'_>) -> Result<Vec<SignedRebuild>> {
    use ebpkg_signing::{Statement, Subject};
    use ebpkg_spec::attestation::rebuild::REBUILD_PREDICATE_TYPE;
    use ebpkg_spec::attestation::{archive_subject, object_subject};
    let shipping: Vec<&CheckedPackage> =
        report.packages.iter().filter(|p| report.objects.iter().any(|o| o.package == p.id)).collect();
    if shipping.is_empty() {
        ctx.ui.warn("nothing was signed: no version checked ships an object");
        return Ok(Vec::new());
    }
    if opts.out.is_some() && shipping.len() > 1 {
        return Err(fail(
            Failure::Usage,
            format!(
                "--out names one file, and {} versions ship objects: name one version, or leave --out out",
                shipping.len()
            ),
        ));
    }
    let Some(key) = crate::ops::keys::signing_key(ctx, opts.key.as_deref(), opts.passphrase)? else {
        return Err(fail(
            Failure::Usage,
            "a rebuild attestation is signed with your key, and you have none: create one with `ebpkg key generate` \
             (or name one with --sign KEY)",
        ));
    };
    let regs = if opts.publish { Some(ctx.registries()?) } else { None };
    let mut out = Vec::new();
    for p in shipping {
        let predicate = predicate(report, p);
        predicate.check().map_err(|e| fail(Failure::Input, format!("the rebuild attestation of {}: {e}", p.id)))?;
        let mut subjects = vec![Subject::sha256(archive_subject(&p.id.name, &p.id.version), &p.archive)];
        for o in &predicate.objects {
            subjects
                .push(Subject::sha256(object_subject(&p.id.name, &p.id.version, &o.object, o.hook), &o.digest.sha256));
        }
        let statement = Statement::new(subjects, REBUILD_PREDICATE_TYPE, serde_json::to_value(&predicate)?);
        let signed = ebpkg_signing::attest(&key, &statement)?;
        ctx.ui.status("Signed", format!("the rebuild attestation of {} with key {}", p.id, key.public().id()));
        let written = match (&opts.out, opts.publish) {
            (Some(out), _) => Some(out.clone()),
            (None, true) => None,
            (None, false) => Some(std::path::PathBuf::from(format!("{}-{}.rebuild.json", p.id.name, p.id.version))),
        };
        if let Some(path) = &written {
            ebpkg_fs::write_atomic(path, signed.json().as_bytes(), 0o644)
                .map_err(|e| anyhow::anyhow!("writing {}: {e}", path.display()))?;
            ctx.ui.status("Wrote", format!("the rebuild attestation of {} to {}", p.id, path.display()));
        }
        let published = match &regs {
            Some(regs) => {
                let url = &p.registry;
                let registry = regs.open_origin(url, None)?;
                let accepted = registry.add_attestation(&p.id.name, &p.id.version, &signed)?;
                ctx.ui.status(
                    if accepted.added { "Published" } else { "Unchanged" },
                    format!(
                        "the rebuild attestation of {} to {url} ({}; {} attestation(s) for this version)",
                        p.id,
                        if accepted.added { "added" } else { "the registry had it already" },
                        accepted.attestations
                    ),
                );
                Some(accepted)
            }
            None => None,
        };
        out.push(SignedRebuild { package: p.id.clone(), predicate, written, signed_by: *key.public().id(), published });
    }
    Ok(out)
}
