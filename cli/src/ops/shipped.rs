//! Shipped objects (SPEC.md §4.7) and their sources. A package may ship the
//! portable object of a program or loader beside its C source; the interpreter
//! then runs the shipped object, while a native chain is compiled from the
//! source. The two are the same code only when the source, rebuilt with the
//! compiler the object names, gives the object byte for byte: the native tier
//! is used for a shipped object only then (`ebpkg_build::Builder::rebuild_shipped`).

use ebpkg_build::{Builder, RebuildOutcome, ShippedObject};
use ebpkg_deploy::PlannedPackage;
use ebpkg_spec::Manifest;
use ebpkg_spec::types::{Hook, RelPath, Sha256Digest};

/// One shipped object of a manifest, with the source its items name.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Shipped {
    /// The object's package path (`prebuilt/xdp/src/flow.bpf.c.o`).
    pub object: RelPath,
    pub sha256: Sha256Digest,
    pub hook: Hook,
    /// The source it says it was built from (`None`: it ships no source).
    pub source: Option<RelPath>,
    /// The programs and loaders taken from it (`program flow_count`).
    pub items: Vec<String>,
}

/// Every shipped object `m` names, once per (object, hook, source), in manifest order.
pub fn shipped_objects(m: &Manifest) -> Vec<Shipped> {
    let programs = m.programs.iter().map(|p| ("program", &p.name, &p.source, &p.prebuilt, p.hook));
    let loaders = m.loaders.iter().map(|l| ("loader", &l.name, &l.source, &l.prebuilt, l.hook));
    let mut out: Vec<Shipped> = Vec::new();
    for (kind, name, source, prebuilt, hook) in programs.chain(loaders) {
        let Some(pb) = prebuilt else { continue };
        let item = format!("{kind} {name}");
        match out.iter_mut().find(|s| s.object == pb.object && s.hook == hook && s.source == *source) {
            Some(s) => s.items.push(item),
            None => out.push(Shipped {
                object: pb.object.clone(),
                sha256: pb.sha256,
                hook,
                source: source.clone(),
                items: vec![item],
            }),
        }
    }
    out
}

/// Whether a native chain may run `program` (at `hook`) of `pkg` compiled from
/// its source: yes unless the object the interpreter loads for it is one the
/// package shipped and that source was not rebuilt here into the same bytes.
/// `Err` says why not, naming the package, the object and the reason.
pub fn native_may_use_source(
    builder: &Builder,
    pkg: &PlannedPackage,
    program: &str,
    hook: Hook,
) -> std::result::Result<(), String> {
    let Some(item) = pkg.manifest.programs.iter().find(|p| p.name.as_str() == program && p.hook == hook) else {
        return Ok(());
    };
    let (Some(pb), Some(source)) = (&item.prebuilt, &item.source) else { return Ok(()) };
    let Some(loaded) = pkg.objects.iter().find(|o| o.hook == hook && o.programs.iter().any(|p| p == program)) else {
        return Ok(());
    };
    // The digest the build checked says which object the interpreter loads:
    // a shipped object that did not match its digest was ignored and the
    // source compiled here instead, so both tiers run the source.
    if loaded.sha256 != Some(pb.sha256) {
        return Ok(());
    }
    // Read through the plan, which refuses bytes other than those checked.
    let bytes = loaded.read().map_err(|e| format!("cannot read the object of {} {program}: {e}", pkg.id))?;
    let shipped = ShippedObject {
        package: pkg.id.clone(),
        package_digest: pkg.checksum,
        root: &pkg.root,
        kernel: pkg.manifest.package.kernel.build,
        hook,
        source,
        object: &bytes,
    };
    let outcome = builder.rebuild_shipped(&shipped, true);
    match outcome {
        RebuildOutcome::Match { .. } => Ok(()),
        RebuildOutcome::Mismatch { .. } => Err(format!(
            "{} ships {} for {program}, but its source {source} is other code ({outcome}); a native chain would \
             run the source, so the chain stays on the VM, which runs the shipped object (`ebpkg verify --rebuild \
             {}` checks every shipped object of the version)",
            pkg.id, pb.object, pkg.id
        )),
        RebuildOutcome::CannotRebuild { .. } => Err(format!(
            "{} ships {} for {program}, and its source {source} could not be rebuilt here to check that it is the \
             same code ({outcome}); a native chain would run the source, so the chain stays on the VM, which runs \
             the shipped object",
            pkg.id, pb.object
        )),
    }
}

/// `manifest` with the shipped objects of its items that have a source left
/// out (`[objects] prebuilt = "never"`: they are compiled here instead). An
/// item that ships only an object is refused, naming it.
pub fn without_shipped(manifest: &Manifest) -> anyhow::Result<Manifest> {
    let mut m = manifest.clone();
    let id = m.id();
    let mut only_object = Vec::new();
    for (kind, name, source, prebuilt) in m
        .programs
        .iter_mut()
        .map(|p| ("program", &p.name, &p.source, &mut p.prebuilt))
        .chain(m.loaders.iter_mut().map(|l| ("loader", &l.name, &l.source, &mut l.prebuilt)))
    {
        match (source, &prebuilt) {
            (Some(_), Some(_)) => *prebuilt = None,
            (None, Some(pb)) => only_object.push(format!("{kind} {name} ({})", pb.object)),
            _ => {}
        }
    }
    if !only_object.is_empty() {
        return Err(crate::exit::fail(
            crate::exit::Failure::Trust,
            format!(
                "{id} ships only a prebuilt object for {}, with no source to compile here, and the trust policy never \
                 loads shipped objects ([objects] prebuilt = \"never\"; `ebpkg trust prebuilt-objects signer` takes it \
                 back); nothing was built or installed",
                only_object.join(", ")
            ),
        ));
    }
    Ok(m)
}

/// A package about to be installed, with the objects its build gave.
pub struct Built<'a> {
    pub id: ebpkg_spec::PackageId,
    pub checksum: Sha256Digest,
    pub root: &'a std::path::Path,
    pub manifest: &'a Manifest,
    pub objects: &'a [ebpkg_deploy::PlannedObject],
}

/// `[objects] prebuilt = "rebuilt"`: every shipped object the build took is
/// loaded only when `attested` (the trusted rebuild attestations' matches, by
/// archive and object digest) vouches for it or its source rebuilds here into
/// the same bytes; otherwise the install is refused, naming the package, the
/// object and why (exit 11 for an object other than its source, 12 for one
/// that could not be checked). Gives the digests of the shipped objects it
/// vouched for, whose origin the plan then records as rebuilt and matched.
pub fn require_rebuilt(
    ctx: &crate::Ctx,
    builder: &Builder,
    packages: &[Built<'_>],
    attested: &dyn Fn(&Sha256Digest, &Sha256Digest) -> Option<String>,
) -> anyhow::Result<std::collections::BTreeSet<Sha256Digest>> {
    use crate::exit::{Failure, fail};
    let mut matched = std::collections::BTreeSet::new();
    for p in packages {
        for s in shipped_objects(p.manifest) {
            // Not taken: the build compiled the source instead. The build
            // checked each object's digest; the bytes are read (and checked
            // again) only for an object that has to be rebuilt here.
            let Some(taken) = p.objects.iter().find(|o| o.hook == s.hook && o.sha256 == Some(s.sha256)) else {
                continue;
            };
            if let Some(by) = attested(&p.checksum, &s.sha256) {
                ctx.ui.status("Rebuilt", format!("{} of {} matches its source ({by})", s.object, p.id));
                matched.insert(s.sha256);
                continue;
            }
            let bytes = taken.read()?;
            let Some(source) = &s.source else {
                return Err(fail(
                    Failure::RebuildUnavailable,
                    format!(
                        "{} ships {} with no source to rebuild it from, no trusted rebuild attestation vouches for \
                         it, and the trust policy loads shipped objects only once rebuilt ([objects] prebuilt = \
                         \"rebuilt\"); nothing was installed",
                        p.id, s.object
                    ),
                ));
            };
            let shipped = ShippedObject {
                package: p.id.clone(),
                package_digest: p.checksum,
                root: p.root,
                kernel: p.manifest.package.kernel.build,
                hook: s.hook,
                source,
                object: &bytes,
            };
            let outcome = builder.rebuild_shipped(&shipped, true);
            let (failure, what) = match &outcome {
                RebuildOutcome::Match { .. } => {
                    ctx.ui.status("Rebuilt", format!("{} of {} from {source}: {outcome}", s.object, p.id));
                    matched.insert(s.sha256);
                    continue;
                }
                RebuildOutcome::Mismatch { .. } => (Failure::RebuildMismatch, "is not what its source builds to"),
                RebuildOutcome::CannotRebuild { .. } => (Failure::RebuildUnavailable, "could not be rebuilt here"),
            };
            return Err(fail(
                failure,
                format!(
                    "{} ships {}, which {what} ({source}: {outcome}); the trust policy loads shipped objects only once \
                     rebuilt into the same bytes ([objects] prebuilt = \"rebuilt\"), and no trusted rebuild \
                     attestation vouches for it; nothing was installed. `ebpkg verify --rebuild {}` says more",
                    p.id, s.object, p.id
                ),
            ));
        }
    }
    Ok(matched)
}

/// The shipped objects that trusted rebuild attestations of `packages` say
/// matched their source: `(archive, object)` digests → who said so. Read only
/// under `[objects] prebuilt = "rebuilt"`; attestations left out are warned of.
pub fn attested_matches(
    ctx: &crate::Ctx,
    regs: &crate::registries::Registries<'_>,
    packages: &[&ebpkg_spec::LockedPackage],
) -> anyhow::Result<std::collections::BTreeMap<(Sha256Digest, Sha256Digest), String>> {
    use crate::ops::kernel_attestations::{Attested, trusted_attestations};
    use ebpkg_spec::attestation::rebuild::REBUILD_PREDICATE_TYPE;
    let policy = ctx.trust_policy()?;
    let cache = ctx.cache()?;
    let mut out = std::collections::BTreeMap::new();
    for p in packages {
        let registry = regs.open(&p.source)?;
        let found = trusted_attestations(
            &cache,
            registry.as_ref(),
            &Attested::from(*p),
            &policy,
            ctx.offline,
            REBUILD_PREDICATE_TYPE,
        );
        let (signed, ignored) = match found {
            Ok(found) => found,
            Err(e) if matches!(e.kind(), ebpkg_sources::ErrorKind::Tuf { .. }) => return Err(e.into()),
            Err(e) => {
                ctx.ui.warn(format!("{}: its rebuild attestations could not be read: {e}", p.id()));
                continue;
            }
        };
        for why in ignored {
            ctx.ui.warn(format!("{}: ignored rebuild {why}", p.id()));
        }
        for (n, key, attestation) in signed {
            match attestation.rebuild(&p.name, &p.version, &p.checksum) {
                Ok(rebuild) => {
                    for o in rebuild.objects.iter().filter(|o| rebuild.matched(&o.digest.sha256)) {
                        out.insert((p.checksum, o.digest.sha256), format!("rebuild attestation by key {key}"));
                    }
                }
                Err(e) => ctx.ui.warn(format!("{}: ignored rebuild attestation {n}: {e}", p.id())),
            }
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    const SHA: &str = "abababababababababababababababababababababababababababababababab";

    fn manifest(extra: &str) -> Manifest {
        let text = format!(
            "[package]\nname = \"p\"\nversion = \"1.0.0\"\n\n\
             [[program]]\nname = \"a\"\nsource = \"src/a.bpf.c\"\nhook = \"xdp\"\n\
             prebuilt = {{ object = \"prebuilt/a.o\", sha256 = \"{SHA}\" }}\n\n\
             [[program]]\nname = \"b\"\nsource = \"src/a.bpf.c\"\nhook = \"xdp\"\n\
             prebuilt = {{ object = \"prebuilt/a.o\", sha256 = \"{SHA}\" }}\n\n\
             [[program]]\nname = \"c\"\nsource = \"src/c.bpf.c\"\nhook = \"xdp\"\n{extra}"
        );
        Manifest::parse(&text, "ebpkg.toml").unwrap()
    }

    #[test]
    fn shipped_objects_are_listed_once_with_their_items() {
        let m = manifest("");
        let shipped = shipped_objects(&m);
        assert_eq!(shipped.len(), 1, "{shipped:?}");
        assert_eq!(shipped[0].object.as_str(), "prebuilt/a.o");
        assert_eq!(shipped[0].source.as_ref().map(|s| s.as_str()), Some("src/a.bpf.c"));
        assert_eq!(shipped[0].items, ["program a", "program b"]);
        assert!(shipped_objects(&without_shipped(&m).unwrap()).is_empty());
    }

    #[test]
    fn never_loading_shipped_objects_refuses_an_item_with_no_source() {
        let m = manifest(&format!(
            "\n[[program]]\nname = \"d\"\nhook = \"xdp\"\nprebuilt = {{ object = \"prebuilt/d.o\", sha256 = \"{SHA}\" }}\n"
        ));
        let e = without_shipped(&m).unwrap_err().to_string();
        assert!(e.contains("p@1.0.0 ships only a prebuilt object for program d (prebuilt/d.o)"), "{e}");
        assert_eq!(crate::exit::failure_of(&without_shipped(&m).unwrap_err()), crate::exit::Failure::Trust);
    }
}
