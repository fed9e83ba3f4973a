//! `ebpkg publish`: the project packed (with its portable objects, with
//! `--with-objects`), signed, its dependencies resolved, verified, and sent to the
//! default registry; the publisher's own key then trusted for it.

use std::path::{Path, PathBuf};

use anyhow::{Context, Result};
use ebpkg_resolver::UpdatePolicy;
use ebpkg_sources::{PublishAllowed, RegistryId, SignedWith};
use ebpkg_spec::index::IndexEntry;
use ebpkg_spec::types::{KeyId, Sha256Digest};
use ebpkg_spec::{Lockfile, Manifest, PackageId, PackageName};

use crate::Ctx;
use crate::exit::{Failure, fail};
use crate::ops::build::{BuildInput, BuildOptions, build_packages, verify_objects};
use crate::ops::keys::Passphrase;
use crate::ops::resolve::{Root, resolve};
use crate::project::Project;
use crate::registries::Registries;

/// How a publish is signed.
pub enum Signing {
    /// Not at all (`--no-sign`).
    Unsigned,
    /// With a Sigstore bundle made elsewhere (`--bundle`), which verifies with
    /// `public_key` (a PEM file or a key name).
    Bundle { bundle: PathBuf, public_key: String },
    /// Here, with the key `--key` names (a key name or a private key file), else
    /// with the default key when there is one.
    Key(Option<String>),
}

pub struct PublishOptions<'a> {
    /// Pack and verify only.
    pub dry_run: bool,
    /// Neither build the package nor have the kernel check it.
    pub no_verify: bool,
    pub signing: Signing,
    /// The passphrase of the key that signs, asked for only when one does.
    pub passphrase: Passphrase<'a>,
    /// Also write the archive here.
    pub out: Option<PathBuf>,
    /// Succeed without publishing when the registry has this version already.
    pub skip_existing: bool,
    /// Ship the package's portable objects.
    pub with_objects: bool,
}

/// What a publish did.
pub enum Published {
    /// `--skip-existing`, and the registry has this version already.
    AlreadyThere { id: PackageId, registry: RegistryId, how: Existing },
    /// `--dry-run`: packed, signed and verified; nothing was sent. A registry
    /// server said the token may publish it (`None` for a directory registry,
    /// which has no tokens).
    DryRun { id: PackageId, allowed: Option<(RegistryId, PublishAllowed)> },
    /// Sent to `registry`, which answered with its index entry.
    Sent {
        id: PackageId,
        registry: RegistryId,
        entry: Box<IndexEntry>,
        /// The publisher's own key recorded as trusted for the package, when it
        /// was signed with one (not with a bundle made elsewhere) that their
        /// policy did not decide on yet. Recording it comes after the upload,
        /// which it does not undo when it fails: that failure is kept here, to be
        /// said after what was published.
        own_key: Result<Option<TrustedOwnKey>>,
    },
}

/// How the registry has a version already.
pub enum Existing {
    /// With this archive's checksum.
    SameChecksum,
    /// Published before without its objects (with `--with-objects`): versions
    /// never change, so the next version ships them.
    WithoutObjects,
}

/// A key recorded in the publisher's own trust policy for a package.
pub struct TrustedOwnKey {
    pub key: KeyId,
    pub package: PackageName,
    /// The policy file it was recorded in.
    pub policy: PathBuf,
}

pub fn publish(ctx: &Ctx, opts: PublishOptions<'_>) -> Result<Published> {
    let project = ctx.project()?;
    // A version published before without its objects stays so (versions never
    // change): with --skip-existing, the source-only archive counts as the same.
    let source_only = if opts.with_objects && opts.skip_existing { Some(pack(&project.dir)?.sha256) } else { None };
    // With --with-objects, a copy of the package holding its objects is what is
    // packed, verified and published.
    let staged = if opts.with_objects { Some(crate::ops::ship_objects::stage(ctx, project)?) } else { None };
    let project = staged.as_ref().map_or(project, |s| &s.project);
    let m = &project.manifest;
    let id = m.package.id();
    // Its objects hold what the manifest declares and nothing more, as the registry and
    // every install check: said here, before anything is packed or sent.
    ebpkg_spec::object_items::check_prebuilt(m, &project.dir)
        .map_err(|e| fail(Failure::Input, format!("{id}: {e}")))?;
    let packed = pack_reporting(ctx, &id, &project.dir)?;
    if let Some(out) = &opts.out {
        write_archive(ctx, &id, out, &packed.bytes)?;
    }
    let regs = ctx.registries()?;
    if !opts.dry_run {
        require_token(ctx, &regs)?;
    }
    if opts.skip_existing
        && let Some(how) = already_published(&regs, m, &packed.sha256, source_only)?
    {
        return Ok(Published::AlreadyThere { id, registry: regs.default.clone(), how });
    }
    // Signed first: a key that does not open (a wrong passphrase) is said before
    // the build and the kernel's verification, not after them; --dry-run too.
    let signature = publish_signature(ctx, &opts, &id, &packed)?;
    // A dry run asks the server what the publish would answer before the archive
    // (the token's scopes and package globs, the owners, the name, the signing
    // key), before the dependencies are resolved: a first publish's may not be
    // there yet.
    let allowed = if opts.dry_run {
        let signed = match (&signature, &opts.out) {
            (Some(s), _) => SignedWith::Key(s.key.id()),
            (None, Some(_)) => SignedWith::Elsewhere,
            (None, None) => SignedWith::Unsigned,
        };
        ask_before_publishing(ctx, &regs, &id, m, signed)?
    } else {
        None
    };
    // Every dependency must be available to whoever installs the package.
    ctx.ui.status("Resolving", format!("dependencies of {id}"));
    let lock = resolve(ctx, Root::of_manifest(m, &regs), None, UpdatePolicy::Nothing, &regs)?;
    if opts.no_verify {
        ctx.ui.status("Skipped", format!("verifying {id} (--no-verify): not built, not checked by the kernel"));
    } else {
        ctx.ui.status("Verifying", &id);
        verify_package(ctx, project, packed.sha256, &regs, &lock)?;
    }
    if opts.dry_run {
        return Ok(Published::DryRun { id, allowed });
    }
    // Over HTTP the upload shows as a bar on a terminal.
    let registry = regs.open_origin(&regs.default, ctx.ui.upload_bar("Uploading"))?;
    // With the digest packing computed: the archive is not hashed again to send it.
    let entry = Box::new(registry.publish(&packed.archive(), m, signature.as_ref())?);
    let own_key = match (&opts.signing, &signature) {
        (Signing::Key(_), Some(signature)) => trust_own_key(ctx, &m.package.name, signature.key.id()),
        _ => Ok(None),
    };
    Ok(Published::Sent { id, registry: regs.default.clone(), entry, own_key })
}

/// The package's archive, as it is published.
fn pack(dir: &Path) -> Result<ebpkg_archive::Packed> {
    ebpkg_archive::pack(dir).map_err(|e| fail(Failure::Input, e.render().trim_end()))
}

/// [`pack`], saying what it packed.
fn pack_reporting(ctx: &Ctx, id: &PackageId, dir: &Path) -> Result<ebpkg_archive::Packed> {
    ctx.ui.status("Packing", id);
    let packed = pack(dir)?;
    let size: u64 = packed.files.iter().map(|f| f.size).sum();
    let (files, compressed, sha256) = (packed.files.len(), packed.bytes.len(), packed.sha256);
    ctx.ui.status("Packed", format!("{files} file(s), {size} bytes ({compressed} compressed), sha256 {sha256}"));
    Ok(packed)
}

/// `--out`: the archive, to sign elsewhere.
fn write_archive(ctx: &Ctx, id: &PackageId, out: &Path, archive: &[u8]) -> Result<()> {
    ebpkg_fs::write_atomic(out, archive, 0o644).with_context(|| format!("writing the archive to {}", out.display()))?;
    ctx.ui.status("Wrote", format!("{id}'s archive to {}", out.display()));
    Ok(())
}

/// A dry run's question to the registry: may this token publish `id`? Not asked
/// (and said so) without a token or online access, so that a dry run that only
/// packs (`--out`, to sign with cosign elsewhere) works on the key holder's
/// machine.
fn ask_before_publishing(
    ctx: &Ctx,
    regs: &Registries<'_>,
    id: &PackageId,
    m: &Manifest,
    signed: SignedWith<'_>,
) -> Result<Option<(RegistryId, PublishAllowed)>> {
    if regs.default.kind() == ebpkg_sources::RegistryKind::Http {
        let why = if ctx.offline {
            Some("--offline")
        } else if ctx.config.token_for(&regs.default).is_none() {
            Some("no token for it; `ebpkg login` to be told")
        } else {
            None
        };
        if let Some(why) = why {
            ctx.ui.status("Not asked", format!("{} whether {id} may be published ({why})", regs.default));
            return Ok(None);
        }
    }
    if signed == SignedWith::Elsewhere {
        ctx.ui.status("Not checked", format!("{id}'s signing key: the archive is signed elsewhere"));
    }
    let registry = regs.open_origin(&regs.default, None)?;
    Ok(registry.may_publish(&m.package.name, &m.package.version, signed)?.map(|a| (regs.default.clone(), a)))
}

/// A server refuses a publish without a token: said before verifying.
fn require_token(ctx: &Ctx, regs: &Registries<'_>) -> Result<()> {
    if regs.default.kind() == ebpkg_sources::RegistryKind::Http && ctx.config.token_for(&regs.default).is_none() {
        return Err(ebpkg_sources::Error::from(ebpkg_sources::ErrorKind::NeedsToken {
            what: "publishing",
            url: regs.default.clone(),
        })
        .into());
    }
    Ok(())
}

/// The publisher trusts their own key they just published `name` with, for `name`
/// (in their own trust policy): their next install of it, or of a package
/// depending on it, needs no `ebpkg trust add`. Nothing else is widened, so trust
/// on first use and others' pins work as before.
fn trust_own_key(ctx: &Ctx, name: &PackageName, key: &KeyId) -> Result<Option<TrustedOwnKey>> {
    let path = &ctx.config.trust_path;
    // Already trusted (by any rule), or revoked (then the publisher's own decision stands).
    if !crate::ops::trust::record_trust(path, name, *key)? {
        return Ok(None);
    }
    Ok(Some(TrustedOwnKey { key: *key, package: name.clone(), policy: path.clone() }))
}

/// How the registry has this version already: with the same checksum (then
/// there is nothing to do), or with `source_only`'s (published before without its
/// objects); `None` when it does not have it; an error when it has it with
/// another checksum.
fn already_published(
    regs: &Registries<'_>,
    m: &Manifest,
    sha256: &Sha256Digest,
    source_only: Option<Sha256Digest>,
) -> Result<Option<Existing>> {
    let id = m.package.id();
    let registry = regs.open_origin(&regs.default, None)?;
    let entries = match registry.index(&m.package.name) {
        Ok(entries) => entries.unwrap_or_default(),
        // A directory registry that does not exist yet has nothing; publishing creates it.
        Err(e) if matches!(e.kind(), ebpkg_sources::ErrorKind::NoRegistry { .. }) => Vec::new(),
        Err(e) => return Err(e.into()),
    };
    let Some(existing) = entries.iter().find(|e| e.vers.cmp_precedence(&m.package.version).is_eq()) else {
        return Ok(None);
    };
    if existing.cksum == *sha256 {
        return Ok(Some(Existing::SameChecksum));
    }
    if source_only == Some(existing.cksum) {
        return Ok(Some(Existing::WithoutObjects));
    }
    Err(fail(
        Failure::Input,
        format!(
            "{id} is already in {} with checksum {}, but this package packs to {sha256}: its files changed without a \
             version bump. Bump `version` in ebpkg.toml (published versions never change)",
            regs.default, existing.cksum
        ),
    ))
}

/// The signature a publish sends: a bundle given with --bundle (checked here
/// first, so a wrong one is said before the upload), or one made with --key or the
/// default key; none with --no-sign or when there is no key at all.
fn publish_signature(
    ctx: &Ctx,
    opts: &PublishOptions<'_>,
    id: &PackageId,
    packed: &ebpkg_archive::Packed,
) -> Result<Option<ebpkg_sources::PublishSignature>> {
    match &opts.signing {
        Signing::Unsigned => {
            ctx.ui
                .warn(format!("{id} is published unsigned (--no-sign): installs need a trust policy exception for it"));
            Ok(None)
        }
        Signing::Bundle { bundle, public_key } => {
            bundle_signature(ctx, id, bundle, public_key, &packed.sha256).map(Some)
        }
        Signing::Key(named) => key_signature(ctx, id, named.as_deref(), opts.passphrase, &packed.bytes),
    }
}

/// The bundle at `path`, checked to sign the archive (whose digest packing
/// computed is `digest`) with `public_key`.
fn bundle_signature(
    ctx: &Ctx,
    id: &PackageId,
    path: &Path,
    public_key: &str,
    digest: &Sha256Digest,
) -> Result<ebpkg_sources::PublishSignature> {
    let key = crate::ops::keys::public_key_named(ctx, public_key)?;
    let bytes = ebpkg_fs::read(path, ebpkg_signing::MAX_BUNDLE_BYTES as u64)?;
    let bundle = ebpkg_signing::SignedBundle::parse(&bytes)
        .map_err(|e| fail(Failure::Input, format!("{}: {e}", path.display())))?;
    bundle.verify_digest(&key, digest).map_err(|e| {
        fail(Failure::Trust, format!("{}: {e}; the bundle must sign this archive (sha256 {digest})", path.display()))
    })?;
    ctx.ui.status("Signed", format!("{id} by key {} (bundle {})", key.id(), path.display()));
    Ok(ebpkg_sources::PublishSignature { bundle, key })
}

/// `archive` signed here with the key `named` names, or the default key; none
/// when there is no key at all.
fn key_signature(
    ctx: &Ctx,
    id: &PackageId,
    named: Option<&str>,
    passphrase: Passphrase<'_>,
    archive: &[u8],
) -> Result<Option<ebpkg_sources::PublishSignature>> {
    let Some(key) = crate::ops::keys::signing_key(ctx, named, passphrase)? else {
        ctx.ui.warn(format!(
            "{id} is published unsigned: you have no signing key. Create one with `ebpkg key generate` (and register \
             it with `ebpkg owner key add` on a registry server); installs need a trust policy exception for unsigned packages"
        ));
        return Ok(None);
    };
    let bundle = ebpkg_signing::sign(&key, archive)?;
    ctx.ui.status("Signed", format!("{id} with key {}", key.public().id()));
    Ok(Some(ebpkg_sources::PublishSignature { bundle, key: key.public().clone() }))
}

/// Builds the package, compiles its chains against its dependencies, and, when this
/// machine can load programs (root, bpffs), has the kernel verify every program and
/// loader. Says which of these was done.
fn verify_package(
    ctx: &Ctx,
    project: &Project,
    digest: Sha256Digest,
    regs: &Registries<'_>,
    lock: &Lockfile,
) -> Result<()> {
    let m = &project.manifest;
    let id = m.package.id();
    let fetched = crate::ops::fetch::fetch_all(ctx, regs, lock)?;
    let objects =
        build_packages(ctx, &[BuildInput { root: &project.dir, digest, manifest: m }], &BuildOptions::default())?
            .pop()
            .unwrap_or_default();
    let deps: Vec<&Manifest> = fetched.iter().map(|f| &f.manifest).collect();
    let chains = crate::ops::chains::compile_chains(ctx, m, &project.dir, &deps)?;
    let programs: usize = objects.iter().map(|o| o.programs.len() + o.loaders.len()).sum();
    let compiled = format!("{} object(s) and {} chain script(s) compiled", objects.len(), chains.len());
    if programs == 0 {
        ctx.ui.status("Verified", format!("{id}: {compiled}; no programs for the kernel to check"));
    } else if let Err(why) = crate::ops::require_privileges("publish") {
        tracing::debug!("no kernel verification: {why:#}");
        ctx.ui.warn(format!(
            "{id}: {compiled}, but the kernel did not check its programs: that needs root (CAP_BPF and \
             CAP_NET_ADMIN) and bpffs; publish as root to have them verified"
        ));
    } else {
        verify_objects(ctx, &id, &objects)?;
        ctx.ui.status("Verified", format!("{id}: {compiled}; the kernel verified {programs} program(s)"));
    }
    Ok(())
}
