//! `ebpkg attest`: a published version of a package put through this kernel's
//! verifier — every program and loader, each program's native tier (a chain
//! calling it compiled natively with its body), and the package's own chains
//! linked against its dependencies and moved to the native tier — recorded as a
//! kernel verification predicate (`ebpkg_spec::attestation`), and signed with
//! the publisher's key into an in-toto attestation (DSSE, Sigstore bundle) that
//! the registry serves beside the version.
//!
//! Observations of other kernels are made by `ebpkg attest --observe-only` on
//! them (a QEMU guest of `ci/test-kernels`, another machine) and joined here
//! with `--observations`, so one signature covers every kernel observed. The
//! archive is the registry's, bytes and digest: what is attested is exactly what
//! installs fetch.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::time::Instant;

use anyhow::{Context, Result};
use ebpkg_deploy::{PackageSource, PlannedObject, PlannedPackage, Tier as DeployTier};
use ebpkg_signing::{Statement, Subject};
use ebpkg_sources::RegistryId;
use ebpkg_spec::attestation::{
    AttestedPackage, Attester, Digests, ItemKind, ItemObservation, KernelObservation, KernelVerification, ObjectRef,
    PREDICATE_TYPE, Tier, Verdict, archive_subject, object_subject,
};
use ebpkg_spec::index::IndexEntry;
use ebpkg_spec::registry_api::AttestationAccepted;
use ebpkg_spec::types::{KeyId, Sha256Digest};
use ebpkg_spec::{Manifest, PackageName};
use hike_chainc::link::{Ids, ProgramRef, link_chain};
use hike_runtime::{ChainSpec, ProgramObject, Runtime, RuntimeError};
use semver::Version;

use crate::Ctx;
use crate::exit::{Failure, fail};
use crate::ops::build::{BuildInput, BuildOptions};
use crate::ops::keys::Passphrase;

/// What to attest and how.
pub struct AttestOptions<'a> {
    pub name: PackageName,
    /// The newest version that is not yanked when `None`.
    pub version: Option<Version>,
    /// Observe on this kernel (`--no-local`: only join `observations`).
    pub here: bool,
    /// Observations of other kernels (`--observe-only` files).
    pub observations: Vec<PathBuf>,
    /// Write this kernel's observation, unsigned, and stop.
    pub observe_only: bool,
    /// The signing key (a key name or a private key file); the default key otherwise.
    pub key: Option<String>,
    pub passphrase: Passphrase<'a>,
    /// Where to write the bundle (or, with `observe_only`, the observation).
    pub out: Option<PathBuf>,
    /// Attach the attestation to the version in its registry.
    pub publish: bool,
}

/// What `ebpkg attest` did.
pub struct Attested {
    pub predicate: KernelVerification,
    /// The file written: the bundle, or the observation.
    pub written: Option<PathBuf>,
    pub signed_by: Option<KeyId>,
    pub published: Option<(RegistryId, AttestationAccepted)>,
}

/// The version attested: its archive as the registry serves it, unpacked.
struct Attesting {
    entry: IndexEntry,
    manifest: Manifest,
    root: PathBuf,
    _scratch: tempfile::TempDir,
}

pub fn attest(ctx: &Ctx, opts: AttestOptions<'_>) -> Result<Attested> {
    if opts.observe_only && opts.publish {
        return Err(fail(Failure::Usage, "--observe-only writes an unsigned observation; it cannot be published"));
    }
    if !opts.here && opts.observations.is_empty() {
        return Err(fail(Failure::Usage, "--no-local needs --observations: there would be no kernel to attest"));
    }
    let regs = ctx.registries()?;
    let target = fetch_version(ctx, &regs, &opts.name, opts.version.as_ref())?;
    let id = target.entry.id();
    let package = AttestedPackage {
        name: target.entry.name.clone(),
        version: target.entry.vers.clone(),
        archive: Digests { sha256: target.entry.cksum },
    };
    let attester = Attester { tool: format!("ebpkg {}", env!("CARGO_PKG_VERSION")) };
    let mut kernels = Vec::new();
    if opts.here {
        kernels.push(observe_here(ctx, &regs, &target)?);
    }
    for path in &opts.observations {
        let observed = read_observation(path, &package)?;
        for k in observed.kernels {
            if kernels.iter().any(|have: &KernelObservation| have.kernel == k.kernel) {
                ctx.ui.warn(format!(
                    "{}: kernel {} is observed already; this observation is left out",
                    path.display(),
                    k.kernel
                ));
                continue;
            }
            kernels.push(k);
        }
    }
    let predicate = KernelVerification { package, attester, kernels };
    predicate.check().map_err(|e| fail(Failure::Input, format!("the attestation of {id}: {e}")))?;

    if opts.observe_only {
        let out = opts
            .out
            .clone()
            .unwrap_or_else(|| PathBuf::from(format!("{}-{}.observation.json", target.entry.name, target.entry.vers)));
        let mut json = serde_json::to_vec_pretty(&predicate)?;
        json.push(b'\n');
        ebpkg_fs::write_atomic(&out, &json, 0o644).with_context(|| format!("writing {}", out.display()))?;
        ctx.ui.status("Wrote", format!("the observation of {id} on {} to {}", kernel_list(&predicate), out.display()));
        return Ok(Attested { predicate, written: Some(out), signed_by: None, published: None });
    }

    let Some(key) = crate::ops::keys::signing_key(ctx, opts.key.as_deref(), opts.passphrase)? else {
        return Err(fail(
            Failure::Usage,
            "an attestation is signed with your publisher key, and you have none: create one with `ebpkg key generate` \
             (or name one with --key), or write an unsigned observation with --observe-only",
        ));
    };
    let statement = Statement::new(subjects(&predicate), PREDICATE_TYPE, serde_json::to_value(&predicate)?);
    let signed = ebpkg_signing::attest(&key, &statement)?;
    ctx.ui.status("Signed", format!("the attestation of {id} with key {}", key.public().id()));
    let out = match (&opts.out, opts.publish) {
        (Some(out), _) => Some(out.clone()),
        (None, true) => None,
        (None, false) => Some(PathBuf::from(format!("{}-{}.attestation.json", target.entry.name, target.entry.vers))),
    };
    if let Some(out) = &out {
        ebpkg_fs::write_atomic(out, signed.json().as_bytes(), 0o644)
            .with_context(|| format!("writing {}", out.display()))?;
        ctx.ui.status("Wrote", format!("the attestation of {id} to {}", out.display()));
    }
    let published = if opts.publish {
        let registry = regs.open_origin(&regs.default, None)?;
        let accepted = registry.add_attestation(&target.entry.name, &target.entry.vers, &signed)?;
        ctx.ui.status(
            if accepted.added { "Published" } else { "Unchanged" },
            format!(
                "the attestation of {id} to {} ({}; {} attestation(s) for this version)",
                regs.default,
                if accepted.added { "added" } else { "the registry had it already" },
                accepted.attestations
            ),
        );
        Some((regs.default.clone(), accepted))
    } else {
        None
    };
    Ok(Attested { predicate, written: out, signed_by: Some(*key.public().id()), published })
}

fn kernel_list(p: &KernelVerification) -> String {
    p.kernels.iter().map(|k| k.kernel.release.as_str()).collect::<Vec<_>>().join(", ")
}

/// The archive and each object loaded, once each, as the Statement's subjects.
fn subjects(p: &KernelVerification) -> Vec<Subject> {
    let mut out =
        vec![Subject::sha256(archive_subject(&p.package.name, &p.package.version), &p.package.archive.sha256)];
    let mut seen = BTreeSet::new();
    for o in p.kernels.iter().flat_map(|k| &k.items).filter_map(|i| i.object.as_ref()) {
        if seen.insert(o.digest.sha256) {
            out.push(Subject::sha256(
                object_subject(&p.package.name, &p.package.version, &o.source, o.hook),
                &o.digest.sha256,
            ));
        }
    }
    out
}

/// An observation file, checked to be of this very version and archive.
fn read_observation(path: &Path, package: &AttestedPackage) -> Result<KernelVerification> {
    let bytes = ebpkg_fs::read(path, ebpkg_spec::attestation::MAX_ATTESTATION_FILE_BYTES)?;
    let value: serde_json::Value = serde_json::from_slice(&bytes)
        .map_err(|e| fail(Failure::Input, format!("{}: not an observation (JSON): {e}", path.display())))?;
    KernelVerification::from_value(&value, &package.name, &package.version, &package.archive.sha256)
        .map_err(|e| fail(Failure::Input, format!("{}: {e}", path.display())))
}

/// The version's index entry and archive from the default registry, the archive
/// checked against the entry's checksum and unpacked.
fn fetch_version(
    ctx: &Ctx,
    regs: &crate::registries::Registries<'_>,
    name: &PackageName,
    version: Option<&Version>,
) -> Result<Attesting> {
    let entries = regs.index(&regs.default, name)?.ok_or_else(|| {
        ebpkg_sources::Error::from(ebpkg_sources::ErrorKind::NoSuchPackage {
            name: name.clone(),
            url: regs.default.clone(),
        })
    })?;
    let entry = match version {
        Some(v) => entries.iter().find(|e| &e.vers == v),
        None => entries.iter().filter(|e| !e.yanked).max_by(|a, b| a.vers.cmp(&b.vers)),
    };
    let Some(entry) = entry.cloned() else {
        return Err(fail(
            Failure::Registry,
            format!(
                "{name}{} is not in {}: attest a published version (it has {})",
                version.map(|v| format!("@{v}")).unwrap_or_else(|| " (a version that is not yanked)".into()),
                regs.default,
                entries.iter().map(|e| e.vers.to_string()).collect::<Vec<_>>().join(", ")
            ),
        ));
    };
    ctx.ui.status("Fetching", format!("{} from {}", entry.id(), regs.default));
    let bytes = regs.open(&regs.default)?.download(&entry)?;
    let actual = Sha256Digest::of(&bytes);
    if actual != entry.cksum {
        return Err(ebpkg_sources::Error::from(ebpkg_sources::ErrorKind::ChecksumMismatch {
            package: entry.name.clone(),
            version: entry.vers.clone(),
            expected: entry.cksum,
            actual,
            registry: regs.default.clone(),
        })
        .into());
    }
    let scratch = tempfile::Builder::new().prefix("ebpkg-attest-").tempdir().context("a scratch directory")?;
    let root = scratch.path().join("package");
    let unpacked =
        ebpkg_archive::unpack(&bytes, &entry.cksum, &entry.name, &entry.vers, &root, &ebpkg_archive::Limits::default())
            .map_err(|e| fail(Failure::Input, format!("{}: {e}", entry.id())))?;
    Ok(Attesting { entry, manifest: unpacked.manifest, root, _scratch: scratch })
}

/// Everything observed on the running kernel.
fn observe_here(ctx: &Ctx, regs: &crate::registries::Registries<'_>, target: &Attesting) -> Result<KernelObservation> {
    crate::ops::require_privileges("attest")?;
    let kernel = crate::ops::kernel_fit::RunningKernel::current();
    let identity = kernel.identity()?;
    let id = target.entry.id();
    ctx.ui.status("Attesting", format!("{id} on {identity}"));
    let m = &target.manifest;
    let builder = crate::ops::build::builder(ctx, &BuildOptions::default())?;
    // The dependencies are needed only to link the package's own chains.
    let deps = if m.chains.is_empty() { Vec::new() } else { dependencies(ctx, regs, m)? };
    let mut inputs = vec![BuildInput { root: &target.root, digest: target.entry.cksum, manifest: m }];
    inputs.extend(deps.iter().map(|f| BuildInput { root: &f.root, digest: f.locked.checksum, manifest: &f.manifest }));
    let mut built = crate::ops::build::build_with(ctx, &builder, &inputs)?.into_iter();
    let objects = built.next().unwrap_or_default();
    let compiler = crate::ops::native::ClangCompiler::new(builder);
    let planned = PlannedPackage {
        id: m.id(),
        source: PackageSource::Registry(regs.default.clone()),
        checksum: target.entry.cksum,
        root: target.root.clone(),
        manifest: m.clone(),
        objects: objects.clone(),
        signer: target.entry.signed_by,
    };

    // One HIKe root for the whole observation (each costs a load of the VM, slow
    // under emulation); each object's programs leave it before the next comes, so
    // the ids each gets, and with them the native objects' cache keys, are those
    // of an empty root whatever loaded before.
    let root = crate::ops::TempRoot::create(ctx, "attest")?;
    let rt = &root.root.rt;
    let mut items = Vec::new();
    for object in &objects {
        items.extend(observe_object(rt, &planned, object, &compiler)?);
    }
    if !m.chains.is_empty() {
        let deps: Vec<PlannedPackage> = deps
            .iter()
            .zip(built)
            .map(|(f, objects)| PlannedPackage {
                id: f.manifest.id(),
                source: PackageSource::Registry(f.locked.source.clone()),
                checksum: f.locked.checksum,
                root: f.root.clone(),
                manifest: f.manifest.clone(),
                objects,
                signer: f.locked.signer,
            })
            .collect();
        items.extend(observe_chains(ctx, rt, &planned, &deps, &compiler)?);
    }
    let refused = items.iter().filter(|i| i.verdict == Verdict::Refused).count();
    if refused > 0 {
        ctx.ui.warn(format!(
            "{id}: this kernel refused {refused} of {} item(s); the attestation says which and why",
            items.len()
        ));
    }
    Ok(KernelObservation {
        kernel: identity,
        build: kernel.build(),
        observed_at: jiff::Timestamp::now()
            .round(jiff::Unit::Second)
            .unwrap_or_else(|_| jiff::Timestamp::now())
            .to_string(),
        items,
    })
}

/// The package's dependencies, resolved and fetched as an install would.
fn dependencies(
    ctx: &Ctx,
    regs: &crate::registries::Registries<'_>,
    m: &Manifest,
) -> Result<Vec<crate::ops::fetch::Fetched>> {
    let root = crate::ops::resolve::Root::of_manifest(m, regs);
    let lock = crate::ops::resolve::resolve(ctx, root, None, ebpkg_resolver::UpdatePolicy::Nothing, regs)?;
    let mut fetched = crate::ops::fetch::fetch_all(ctx, regs, &lock)?;
    fetched.retain(|f| f.manifest.package.name != m.package.name);
    Ok(fetched)
}

/// How an attestation names an object: by the source the manifest names for it
/// (`src/x.bpf.c`) and, for an object the package ships, by the shipped file's
/// own path as well (`prebuilt/xdp/src/x.bpf.c.o`, what the build loaded).
fn object_names(m: &Manifest, object: &PlannedObject) -> (String, Option<String>) {
    let shipped_by = m
        .programs
        .iter()
        .map(|p| (&p.source, &p.prebuilt, p.hook))
        .chain(m.loaders.iter().map(|l| (&l.source, &l.prebuilt, l.hook)))
        .find_map(|(source, prebuilt, hook)| {
            let shipped = prebuilt.as_ref()?;
            (hook == object.hook && shipped.object.as_str() == object.object_name).then_some(source)
        });
    match shipped_by {
        Some(source) => {
            let shipped = object.object_name.clone();
            (source.as_ref().map_or_else(|| shipped.clone(), ToString::to_string), Some(shipped))
        }
        None => (object.object_name.clone(), None),
    }
}

/// One object in `rt`, which it leaves as it found it (no program of its own):
/// each program and loader through the verifier, then each program's native tier.
fn observe_object(
    rt: &Runtime,
    pkg: &PlannedPackage,
    object: &PlannedObject,
    compiler: &crate::ops::native::ClangCompiler,
) -> Result<Vec<ItemObservation>> {
    let elf = object.read()?;
    let (source, shipped) = object_names(&pkg.manifest, object);
    let reference = ObjectRef {
        source,
        shipped,
        hook: object.hook,
        digest: Digests { sha256: Sha256Digest::of(&elf) },
        compiler: ebpkg_build::compiler_of(&elf),
    };
    let label = format!("{} ({})", pkg.id, object.object_name);
    let names: Vec<String> = object.programs.iter().chain(&object.loaders).cloned().collect();
    let verdicts = verify_each(rt, &label, &elf, names)?;
    let mut items: Vec<ItemObservation> = Vec::new();
    for (name, verdict) in &verdicts {
        let kind = if object.loaders.contains(name) { ItemKind::Loader } else { ItemKind::Program };
        let mut item = ItemObservation {
            kind,
            name: name.clone(),
            object: Some(reference.clone()),
            verdict: Verdict::Verified,
            insns_processed: None,
            verification_micros: None,
            tier: None,
            reason: None,
        };
        match verdict {
            Ok(stats) => {
                item.insns_processed = Some(stats.insns_processed);
                item.verification_micros = Some(stats.verification_us);
            }
            Err(reason) => {
                item.verdict = Verdict::Refused;
                item.reason = Some(reason.clone());
            }
        }
        items.push(item);
    }
    if object.programs.is_empty() {
        return Ok(items);
    }
    // The native tier: a chain calling the program, compiled with its body.
    let refused: Vec<&str> = verdicts.iter().filter(|(_, v)| v.is_err()).map(|(n, _)| n.as_str()).collect();
    let registered = if refused.is_empty() {
        let program_object = ProgramObject {
            package: pkg.id.name.as_str(),
            version: &pkg.id.version.to_string(),
            object_name: &object.object_name,
            elf: &elf,
            hook: object.hook,
        };
        rt.register_object(&program_object).map_err(|e| e.to_string())
    } else {
        Err(format!("not tried: this kernel refused {} of the same object", refused.join(", ")))
    };
    for item in items.iter_mut().filter(|i| i.kind == ItemKind::Program && i.verdict == Verdict::Verified) {
        let tier = match &registered {
            Ok(regs) => match regs.iter().find(|r| r.name == item.name) {
                Some(r) => one_call_tier(rt, compiler, pkg, &item.name, r.id, object.hook),
                None => Err(format!("it was not registered from {}", object.object_name)),
            },
            Err(why) => Err(why.clone()),
        };
        match tier {
            Ok(()) => item.tier = Some(Tier::Native),
            Err(reason) => {
                item.tier = Some(Tier::Interpreted);
                item.reason = Some(one_line(&reason));
            }
        }
    }
    if let Ok(regs) = &registered {
        let ids: Vec<_> = regs.iter().map(|r| r.id).collect();
        rt.unregister_programs(&ids)
            .map_err(|e| anyhow::Error::new(e).context(format!("removing the programs of {label}")))?;
    }
    Ok(items)
}

/// A chain calling program `id` once (its arguments zero), moved to the native
/// tier: `Err` says why it stays interpreted.
fn one_call_tier(
    rt: &Runtime,
    compiler: &crate::ops::native::ClangCompiler,
    pkg: &PlannedPackage,
    program: &str,
    id: hike_runtime::ProgId,
    hook: hike_bytecode::Hook,
) -> std::result::Result<(), String> {
    let nargs = pkg.manifest.programs.iter().find(|p| p.name.as_str() == program).map_or(0, |p| p.args.len());
    let mut asm = String::new();
    for i in 1..=nargs {
        asm.push_str(&format!("r{i} = 0\n"));
    }
    asm.push_str(&format!("call prog {}, {nargs}\nexit\n", id.0));
    let insns = hike_bytecode::asm::assemble(&asm).map_err(|e| format!("the test chain: {e}"))?;
    let chain = rt
        .install_chain(&ChainSpec { name: "ebpkg_attest", owner: "ebpkg attest", hook, insns: &insns, nargs: 0 })
        .map_err(|e| e.to_string())?;
    let chains = [(chain.0, insns)].into_iter().collect();
    let programs = [(id.0, (pkg, program))].into_iter().collect();
    let request =
        ebpkg_deploy::NativeRequest { hook, chain, name: "ebpkg_attest", chains: &chains, programs: &programs };
    let tier = ebpkg_deploy::tier_up(rt, compiler, &request);
    let removed = rt.remove_chain(chain).map_err(|e| e.to_string());
    match tier {
        Ok(DeployTier::Native { .. }) => removed,
        Ok(DeployTier::Interpreted { reason }) => Err(reason.unwrap_or_else(|| "interpreted".into())),
        Err(reason) => Err(reason),
    }
}

/// Loads the object with `names` through the verifier, leaving out each program
/// the kernel refuses until the rest load: each name's statistics, or why it was
/// refused.
fn verify_each(
    rt: &Runtime,
    label: &str,
    elf: &[u8],
    names: Vec<String>,
) -> Result<Vec<(String, std::result::Result<hike_runtime::VerifierStats, String>)>> {
    let mut left = names;
    let mut out = Vec::new();
    while !left.is_empty() {
        match rt.verify_object(label, elf, &left) {
            Ok(stats) => {
                out.extend(stats.into_iter().map(|s| (s.program.clone(), Ok(s))));
                break;
            }
            Err(RuntimeError::Verifier(f)) if left.contains(&f.program) => {
                let mut reason = f.reason.clone().unwrap_or_else(|| f.error.clone());
                if let Some(s) = &f.source {
                    reason.push_str(&format!(" (at {}:{})", s.file, s.line));
                }
                left.retain(|p| p != &f.program);
                out.push((f.program.clone(), Err(one_line(&reason))));
            }
            // Not attributed to a program: each on its own, then.
            Err(e @ RuntimeError::Kernel { .. }) if e.is_kernel_refusal() => {
                if left.len() == 1 {
                    out.push((left.remove(0), Err(one_line(&e.to_string()))));
                } else {
                    for name in std::mem::take(&mut left) {
                        out.extend(verify_each(rt, label, elf, vec![name])?);
                    }
                }
            }
            Err(e) => return Err(anyhow::Error::new(e).context(format!("loading {label}"))),
        }
    }
    out.sort_by(|a, b| a.0.cmp(&b.0));
    Ok(out)
}

fn one_line(text: &str) -> String {
    let line: String = text.split_whitespace().collect::<Vec<_>>().join(" ");
    line.chars().take(ebpkg_spec::attestation::MAX_TEXT / 2).collect()
}

/// The package's own chains, linked against its dependencies' programs (all
/// registered in one root, as an install would), each chain a loader starts (or
/// every chain, when none is started) moved to the native tier.
fn observe_chains(
    ctx: &Ctx,
    rt: &Runtime,
    pkg: &PlannedPackage,
    deps: &[PlannedPackage],
    compiler: &crate::ops::native::ClangCompiler,
) -> Result<Vec<ItemObservation>> {
    let manifests: Vec<&Manifest> = deps.iter().map(|d| &d.manifest).collect();
    let scripts = crate::ops::chains::compile_chains(ctx, &pkg.manifest, &pkg.root, &manifests)?;
    let mut ids = Ids::default();
    let mut providers: BTreeMap<u32, (&PlannedPackage, String)> = BTreeMap::new();
    // Why each program this kernel would not load is missing.
    let mut refused: BTreeMap<ProgramRef, String> = BTreeMap::new();
    for p in std::iter::once(pkg).chain(deps) {
        for object in p.objects.iter().filter(|o| !o.programs.is_empty()) {
            let elf = object.read()?;
            let version = p.id.version.to_string();
            let registered = rt.register_object(&ProgramObject {
                package: p.id.name.as_str(),
                version: &version,
                object_name: &object.object_name,
                elf: &elf,
                hook: object.hook,
            });
            match registered {
                Ok(regs) => {
                    for r in regs {
                        ids.programs.insert(ProgramRef::new(p.id.name.as_str(), r.name.as_str()), r.id);
                        providers.insert(r.id.0, (p, r.name.clone()));
                    }
                }
                Err(e) if e.is_kernel_refusal() => {
                    let why = match &e {
                        RuntimeError::Verifier(f) => f.reason.clone().unwrap_or_else(|| f.error.clone()),
                        other => other.to_string(),
                    };
                    for program in &object.programs {
                        refused.insert(
                            ProgramRef::new(p.id.name.as_str(), program.as_str()),
                            format!("{} ({}): {}", p.id, object.object_name, one_line(&why)),
                        );
                    }
                }
                Err(e) => return Err(anyhow::Error::new(e).context(format!("registering the programs of {}", p.id))),
            }
        }
    }
    let mut items = Vec::new();
    for script in &scripts {
        let started: BTreeSet<&str> = script
            .artifact
            .loader_configs
            .iter()
            .flat_map(|c| c.entries.iter().flat_map(|e| &e.value))
            .filter_map(|v| match v {
                hike_chainc::artifact::FieldValue::Chain(name) => Some(name.as_str()),
                _ => None,
            })
            .collect();
        let mut sids = Ids { programs: ids.programs.clone(), chains: Default::default() };
        let mut linked: BTreeMap<u32, Vec<hike_bytecode::Insn>> = BTreeMap::new();
        let mut installed = Vec::new();
        for c in &script.artifact.chains {
            let item = |verdict, tier, reason: Option<String>| ItemObservation {
                kind: ItemKind::Chain,
                name: format!("{}:{}", script.file, c.name),
                object: None,
                verdict,
                insns_processed: None,
                verification_micros: None,
                tier,
                reason,
            };
            let insns = match link_chain(c, &sids) {
                Ok(insns) => insns,
                Err(e) => {
                    let why = match &e {
                        hike_chainc::link::LinkError::NoProgram { package, name, .. } => {
                            match refused.get(&ProgramRef::new(package.as_str(), name.as_str())) {
                                Some(why) => format!("it calls {package}::{name}, which this kernel refused: {why}"),
                                None => e.to_string(),
                            }
                        }
                        _ => e.to_string(),
                    };
                    items.push(item(Verdict::Refused, None, Some(one_line(&why))));
                    continue;
                }
            };
            let spec = ChainSpec {
                name: &c.name,
                owner: "ebpkg attest",
                hook: script.artifact.hook,
                insns: &insns,
                nargs: c.nargs,
            };
            match rt.install_chain(&spec) {
                Ok(chain) => {
                    sids.chains.insert(c.name.clone(), chain);
                    linked.insert(chain.0, insns);
                    installed.push((c, chain));
                }
                Err(e) => items.push(item(Verdict::Refused, None, Some(one_line(&e.to_string())))),
            }
        }
        let refs: BTreeMap<u32, (&PlannedPackage, &str)> =
            providers.iter().map(|(id, (p, name))| (*id, (*p, name.as_str()))).collect();
        for (c, chain) in installed {
            let mut observed = ItemObservation {
                kind: ItemKind::Chain,
                name: format!("{}:{}", script.file, c.name),
                object: None,
                verdict: Verdict::Verified,
                insns_processed: None,
                verification_micros: None,
                tier: None,
                reason: None,
            };
            if started.is_empty() || started.contains(c.name.as_str()) {
                let request = ebpkg_deploy::NativeRequest {
                    hook: script.artifact.hook,
                    chain,
                    name: &c.name,
                    chains: &linked,
                    programs: &refs,
                };
                let begun = Instant::now();
                match ebpkg_deploy::tier_up(rt, compiler, &request) {
                    Ok(DeployTier::Native { verified_insns, load_ms, .. }) => {
                        observed.tier = Some(Tier::Native);
                        observed.insns_processed = Some(verified_insns);
                        observed.verification_micros = Some(load_ms.saturating_mul(1000));
                    }
                    Ok(DeployTier::Interpreted { reason }) => {
                        observed.tier = Some(Tier::Interpreted);
                        observed.reason = reason.map(|r| one_line(&r));
                    }
                    Err(reason) => {
                        observed.tier = Some(Tier::Interpreted);
                        observed.reason = Some(one_line(&reason));
                    }
                }
                tracing::debug!(chain = %c.name, ms = begun.elapsed().as_millis() as u64, "native tier tried");
            }
            items.push(observed);
        }
    }
    Ok(items)
}
