//! Commands that talk to a registry: `publish`, `yank`, `search`, `info`, `mirror`.

use ebpkg_spec::PackageId;
use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::{Context, Result};
use clap::Args;
use ebpkg_resolver::UpdatePolicy;
use ebpkg_sources::RegistryUrl;
use ebpkg_spec::PackageName;
use ebpkg_spec::index::IndexEntry;

use crate::Ctx;
use crate::commands::install::parse_package_spec;
use crate::exit::{Failure, fail};
use crate::ops::build::{BuildInput, BuildOptions, build_packages, verify_objects};
use crate::ops::resolve::{Root, resolve};

#[derive(Args)]
#[command(
    after_help = "Examples:\n  ebpkg publish --registry file:///srv/ebpkg\n  ebpkg login --registry https://ebpkg.corp.example/ && ebpkg publish --registry https://ebpkg.corp.example/\n  ebpkg publish --dry-run       pack and verify, publish nothing\n  ebpkg publish --with-objects  ship the portable objects too: installs need no clang\n  ebpkg publish --dry-run --out pkg.tar.gz     the archive, to sign elsewhere (cosign sign-blob)\n  ebpkg publish --bundle b.json --public-key cosign.pub"
)]
pub struct PublishArgs {
    /// Pack and verify only.
    #[arg(long)]
    dry_run: bool,
    /// Skip the verification: building the package, compiling its chains and
    /// having the kernel load its programs. (Its dependencies are always checked.)
    #[arg(long)]
    no_verify: bool,
    /// Sign with this key: a key name (`ebpkg key list`) or a private key file
    /// (ebpkg's or cosign's). Default: the key named `default`, if there is one.
    #[arg(long, value_name = "NAME|FILE")]
    key: Option<String>,
    /// Send this Sigstore bundle (e.g. from `cosign sign-blob --bundle`) instead of
    /// signing here; --public-key names the key it verifies with.
    #[arg(long, value_name = "FILE", requires = "public_key")]
    bundle: Option<PathBuf>,
    /// The public key (PEM file or key name) that --bundle verifies with.
    #[arg(long, value_name = "FILE|NAME")]
    public_key: Option<String>,
    /// Publish unsigned even when a default key exists.
    #[arg(long, conflicts_with_all = ["key", "bundle"])]
    no_sign: bool,
    /// Also write the archive to FILE. Packing is reproducible, so with --dry-run
    /// this is the exact archive a later publish sends: a pipeline can sign it
    /// with its own tools (`cosign sign-blob --bundle B FILE`) and publish with
    /// `--bundle B --public-key P`.
    #[arg(long, value_name = "FILE")]
    out: Option<PathBuf>,
    /// Succeed without publishing when the registry has this version with the
    /// same checksum already (and fail, saying so, when its checksum differs):
    /// what makes a pipeline's publish step safe to run again.
    #[arg(long)]
    skip_existing: bool,
    /// Ship the package's portable objects: build them and publish a copy of the
    /// package with each in `prebuilt/` and named in its ebpkg.toml (`prebuilt =
    /// { object, sha256 }`, SPEC.md §4.7), covered by the archive's digest and
    /// signature, so nodes without clang can install it. `source` stays: a node
    /// whose object does not match compiles it. Not for `build = "local"` packages.
    #[arg(long)]
    with_objects: bool,
}

#[derive(Args)]
#[command(after_help = "Examples:\n  ebpkg yank meter@1.2.0\n  ebpkg yank meter@1.2.0 --undo")]
pub struct YankArgs {
    /// `name@version`.
    package: String,
    /// Un-yank.
    #[arg(long)]
    undo: bool,
}

#[derive(Args)]
#[command(after_help = "Examples:\n  ebpkg search meter\n  ebpkg search ''        every package")]
pub struct SearchArgs {
    /// Matched against names, keywords, program names and descriptions.
    query: String,
    /// At most this many results.
    #[arg(long, default_value_t = 20)]
    limit: usize,
}

#[derive(Args)]
#[command(after_help = "Examples:\n  ebpkg info net\n  ebpkg info net@^1.0")]
pub struct InfoArgs {
    /// `name` or `name@requirement`.
    package: String,
}

#[derive(Args)]
#[command(
    after_help = "Example:\n  ebpkg mirror /media/usb/ebpkg-mirror\n  # on the air-gapped host:\n  EBPKG_MIRROR=file:///media/usb/ebpkg-mirror ebpkg install --frozen"
)]
pub struct MirrorArgs {
    /// The directory to write the file:// registry into (created or extended).
    dir: PathBuf,
}

pub fn publish(ctx: &Ctx, args: PublishArgs) -> Result<ExitCode> {
    let project = ctx.project()?;
    // A version published before without its objects stays so (versions never
    // change): with --skip-existing, the source-only archive counts as the same.
    let source_only = if args.with_objects && args.skip_existing {
        Some(ebpkg_archive::pack(&project.dir).map_err(|e| fail(Failure::Input, e.render().trim_end()))?.sha256)
    } else {
        None
    };
    // With --with-objects, a copy of the package holding its objects is what is
    // packed, verified and published.
    let staged = if args.with_objects { Some(crate::ops::ship_objects::stage(ctx, &project)?) } else { None };
    let project = staged.as_ref().map_or(&project, |s| &s.project);
    let m = &project.manifest;
    let id = m.package.id();
    ctx.ui.status("Packing", &id);
    let packed = ebpkg_archive::pack(&project.dir).map_err(|e| fail(Failure::Input, e.render().trim_end()))?;
    let size: u64 = packed.files.iter().map(|f| f.size).sum();
    ctx.ui.status(
        "Packed",
        format!(
            "{} file(s), {size} bytes ({} compressed), sha256 {}",
            packed.files.len(),
            packed.bytes.len(),
            packed.sha256
        ),
    );
    if let Some(out) = &args.out {
        ebpkg_fs::write_atomic(out, &packed.bytes, 0o644)
            .with_context(|| format!("writing the archive to {}", out.display()))?;
        ctx.ui.status("Wrote", format!("{id}'s archive to {}", out.display()));
    }
    let regs = ctx.registries()?;
    // A server refuses a publish without a token: say so before verifying.
    if !args.dry_run
        && regs.default.kind() == ebpkg_sources::RegistryKind::Http
        && ctx.config.token_for(&regs.default).is_none()
    {
        return Err(ebpkg_sources::Error::from(ebpkg_sources::ErrorKind::NeedsToken {
            what: "publishing",
            url: regs.default.clone(),
        })
        .into());
    }
    if args.skip_existing && already_published(ctx, &regs, m, &packed.sha256, source_only)? {
        return Ok(ExitCode::SUCCESS);
    }
    // Signed first: a key that does not open (a wrong passphrase) is said before
    // the build and the kernel's verification, not after them; --dry-run too.
    let signature = publish_signature(ctx, &args, &id, &packed.bytes)?;
    // Every dependency must be available to whoever installs the package.
    ctx.ui.status("Resolving", format!("dependencies of {id}"));
    let lock = resolve(ctx, Root::of_manifest(m, &regs)?, None, UpdatePolicy::Nothing, &regs)?;
    if args.no_verify {
        ctx.ui.status("Skipped", format!("verifying {id} (--no-verify): not built, not checked by the kernel"));
    } else {
        ctx.ui.status("Verifying", &id);
        verify_package(ctx, project, packed.sha256, &regs, &lock)?;
    }
    if args.dry_run {
        ctx.ui.status("Skipped", format!("publishing {id} (--dry-run)"));
        return Ok(ExitCode::SUCCESS);
    }
    // Over HTTP the upload shows as a bar on a terminal.
    let registry = regs.open_origin(&regs.default, ctx.ui.upload_bar("Uploading"))?;
    let entry = registry.publish(&packed.bytes, m, signature.as_ref())?;
    if ctx.ui.json {
        ctx.ui.json(&entry)?;
    } else {
        ctx.ui.status("Published", format!("{id} to {}", regs.default));
    }
    // Signed with one of the publisher's own keys (not a bundle made elsewhere).
    if let Some(signature) = signature.as_ref().filter(|_| args.bundle.is_none()) {
        trust_own_publish(ctx, &m.package.name, signature.key.id())?;
    }
    Ok(ExitCode::SUCCESS)
}

/// The publisher trusts their own key they just published `name` with, for `name`
/// (in their own trust policy): their next install of it, or of a package
/// depending on it, needs no `ebpkg trust add`. Nothing else is widened, so trust
/// on first use and others' pins work as before.
fn trust_own_publish(ctx: &Ctx, name: &PackageName, key: &ebpkg_spec::types::KeyId) -> Result<()> {
    let path = &ctx.config.trust_path;
    // Already trusted (by any rule), or revoked (then the publisher's own decision stands).
    if !crate::ops::trust::record_trust(path, name, *key)? {
        return Ok(());
    }
    ctx.ui.status("Trusted", format!("your key {key} for {name} (recorded in {})", path.display()));
    Ok(())
}

/// Whether the registry has this version already with the same checksum (then
/// there is nothing to do), or with `source_only`'s (published before without its
/// objects); an error when it has it with another checksum.
fn already_published(
    ctx: &Ctx,
    regs: &crate::registries::Registries<'_>,
    m: &ebpkg_spec::Manifest,
    sha256: &ebpkg_spec::types::Sha256Digest,
    source_only: Option<ebpkg_spec::types::Sha256Digest>,
) -> Result<bool> {
    let id = m.package.id();
    let registry = regs.open_origin(&regs.default, None)?;
    let entries = match registry.index(&m.package.name) {
        Ok(entries) => entries.unwrap_or_default(),
        // A directory registry that does not exist yet has nothing; publishing creates it.
        Err(e) if matches!(e.kind(), ebpkg_sources::ErrorKind::NoRegistry { .. }) => Vec::new(),
        Err(e) => return Err(e.into()),
    };
    let Some(existing) = entries.iter().find(|e| e.vers.cmp_precedence(&m.package.version).is_eq()) else {
        return Ok(false);
    };
    if existing.cksum == *sha256 {
        ctx.ui.status("Skipped", format!("{id}: {} has it already, with the same checksum", regs.default));
        return Ok(true);
    }
    if source_only == Some(existing.cksum) {
        ctx.ui.status(
            "Skipped",
            format!(
                "{id}: {} has it already, published without its objects (the next version ships them)",
                regs.default
            ),
        );
        return Ok(true);
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
    args: &PublishArgs,
    id: &PackageId,
    archive: &[u8],
) -> Result<Option<ebpkg_sources::PublishSignature>> {
    if args.no_sign {
        ctx.ui.warn(format!("{id} is published unsigned (--no-sign): installs need a trust policy exception for it"));
        return Ok(None);
    }
    if let (Some(path), Some(public)) = (&args.bundle, &args.public_key) {
        let key = crate::ops::keys::public_key_named(ctx, public)?;
        let bytes = ebpkg_fs::read(path, ebpkg_signing::MAX_BUNDLE_BYTES as u64)?;
        let bundle = ebpkg_signing::SignedBundle::parse(&bytes)
            .map_err(|e| fail(Failure::Input, format!("{}: {e}", path.display())))?;
        bundle.verify(&key, archive).map_err(|e| {
            fail(
                Failure::Trust,
                format!(
                    "{}: {e}; the bundle must sign this archive (sha256 {})",
                    path.display(),
                    ebpkg_spec::types::Sha256Digest::of(archive)
                ),
            )
        })?;
        ctx.ui.status("Signed", format!("{id} by key {} (bundle {})", key.id(), path.display()));
        return Ok(Some(ebpkg_sources::PublishSignature { bundle, key }));
    }
    let Some(key) =
        crate::ops::keys::signing_key(ctx, args.key.as_deref(), &|| crate::commands::keys::passphrase(false))?
    else {
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
    project: &crate::project::Project,
    digest: ebpkg_spec::types::Sha256Digest,
    regs: &crate::registries::Registries<'_>,
    lock: &ebpkg_spec::Lockfile,
) -> Result<()> {
    let m = &project.manifest;
    let id = m.package.id();
    let fetched = crate::ops::fetch::fetch_all(ctx, regs, lock)?;
    let objects =
        build_packages(ctx, &[BuildInput { root: &project.dir, digest, manifest: m }], &BuildOptions::default())?
            .pop()
            .unwrap_or_default();
    let deps: Vec<&ebpkg_spec::Manifest> = fetched.iter().map(|f| &f.manifest).collect();
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

pub fn yank(ctx: &Ctx, args: YankArgs) -> Result<ExitCode> {
    let (name, version) = args
        .package
        .split_once('@')
        .ok_or_else(|| fail(Failure::Usage, format!("`{}`: write name@version, e.g. meter@1.2.0", args.package)))?;
    let name = PackageName::new(name).map_err(|e| crate::exit::bad_name(name, &e))?;
    let version = semver::Version::parse(version)
        .map_err(|e| fail(Failure::Usage, format!("`{version}` is not a version: {e}")))?;
    let regs = ctx.registries()?;
    let entry = regs.open_origin(&regs.default, None)?.set_yanked(&name, &version, !args.undo)?;
    if ctx.ui.json {
        ctx.ui.json(&entry)?;
    } else {
        ctx.ui.status(if args.undo { "Unyanked" } else { "Yanked" }, format!("{name}@{version} in {}", regs.default));
    }
    Ok(ExitCode::SUCCESS)
}

pub fn search(ctx: &Ctx, args: SearchArgs) -> Result<ExitCode> {
    let regs = ctx.registries()?;
    let hits = regs.open(&regs.default)?.search(&args.query, args.limit)?;
    if ctx.ui.json {
        ctx.ui.json(&hits)?;
        return Ok(ExitCode::SUCCESS);
    }
    if hits.is_empty() {
        ctx.ui.out(format!("no package matches `{}` in {}", args.query, regs.default));
    }
    let width = hits.iter().map(|h| h.name.as_str().len() + h.version.to_string().len() + 3).max().unwrap_or(0);
    for h in &hits {
        let head = format!("{} = \"{}\"", h.name, h.version);
        let mut desc = h.description.clone().unwrap_or_default();
        if h.yanked {
            desc = format!("(yanked) {desc}");
        }
        ctx.ui.out(format!("{head:<width$}  # {}", desc.trim()));
    }
    Ok(ExitCode::SUCCESS)
}

pub fn info(ctx: &Ctx, args: InfoArgs) -> Result<ExitCode> {
    let (name, req) = parse_package_spec(&args.package)?;
    let regs = ctx.registries()?;
    let url: RegistryUrl = regs.default.clone();
    let entries = regs.index(&url, &name)?.ok_or_else(|| {
        let names = regs.open(&url).ok().and_then(|r| r.names().ok()).unwrap_or_default();
        let close: Vec<String> = names
            .iter()
            .filter(|n| strsim::levenshtein(n.as_str(), name.as_str()) <= 2)
            .map(|n| format!("`{n}`"))
            .collect();
        fail(
            Failure::Registry,
            format!(
                "package `{name}` is not in {url}{}",
                if close.is_empty() { String::new() } else { format!("; did you mean {}?", close.join(" or ")) }
            ),
        )
    })?;
    let pick = entries
        .iter()
        .filter(|e| req.matches(&e.vers))
        .max_by(|a, b| (!a.yanked, &a.vers).cmp(&(!b.yanked, &b.vers)))
        .ok_or_else(|| fail(Failure::Registry, format!("no version of {name} matches {req}")))?;
    if ctx.ui.json {
        ctx.ui.json(&serde_json::json!({ "entry": pick, "versions": entries.iter().map(|e| serde_json::json!({"version": e.vers.to_string(), "yanked": e.yanked})).collect::<Vec<_>>() }))?;
        return Ok(ExitCode::SUCCESS);
    }
    print_entry(ctx, pick);
    let versions: Vec<String> =
        entries.iter().map(|e| if e.yanked { format!("{} (yanked)", e.vers) } else { e.vers.to_string() }).collect();
    ctx.ui.out(format!("versions: {}", versions.join(", ")));
    Ok(ExitCode::SUCCESS)
}

fn print_entry(ctx: &Ctx, e: &IndexEntry) {
    ctx.ui.out(format!("{} {}{}", e.name, e.vers, if e.yanked { " (yanked)" } else { "" }));
    if let Some(d) = &e.description {
        ctx.ui.out(format!("  {d}"));
    }
    if !e.keywords.is_empty() {
        ctx.ui.out(format!("keywords: {}", e.keywords.join(", ")));
    }
    ctx.ui.out(format!("sha256: {}", e.cksum));
    for p in &e.programs {
        let args: Vec<String> = p.args.iter().map(|a| format!("{}: {}", a.name, a.ty)).collect();
        let ret = p.returns.map(|r| format!(" -> {r}")).unwrap_or_default();
        ctx.ui.out(format!(
            "program {}({}){ret}  [{}, ends packet: {:?}]",
            p.name,
            args.join(", "),
            p.hook,
            p.ends_packet
        ));
    }
    for l in &e.loaders {
        let maps: Vec<String> = l.maps.iter().map(|m| m.name.to_string()).collect();
        ctx.ui.out(format!("loader {}  [{}, maps: {}]", l.name, l.hook, maps.join(", ")));
    }
    for c in &e.chains {
        ctx.ui.out(format!("chain script {}", c.name));
    }
    for d in &e.deps {
        ctx.ui.out(format!(
            "depends on {} {}{}",
            d.name,
            d.req,
            d.registry.as_ref().map(|r| format!(" ({r})")).unwrap_or_default()
        ));
    }
}

pub fn mirror(ctx: &Ctx, args: MirrorArgs) -> Result<ExitCode> {
    let project = ctx.project()?;
    let regs = ctx.registries()?;
    let lock = crate::ops::resolve::lock_project(ctx, &project, &regs, UpdatePolicy::Nothing)?.lock;
    let cache = ctx.cache();
    let open = |url: &RegistryUrl| -> ebpkg_sources::Result<Box<dyn ebpkg_sources::Registry>> {
        let fetch = RegistryUrl::parse(ctx.config.fetch_url(url.as_str()))?;
        ebpkg_sources::open_registry(&fetch, &ctx.config.open_options(&fetch, ctx.offline))
    };
    let report = ebpkg_sources::mirror(&lock, open, &cache, &args.dir)?;
    if ctx.ui.json {
        ctx.ui.json(&serde_json::json!({
            "url": report.url.to_string(),
            "added": report.added.iter().map(|(n, v)| format!("{n}@{v}")).collect::<Vec<_>>(),
            "already_present": report.already_present.iter().map(|(n, v)| format!("{n}@{v}")).collect::<Vec<_>>(),
        }))?;
    } else {
        for (n, v) in &report.added {
            ctx.ui.status("Mirrored", format!("{n}@{v}"));
        }
        ctx.ui.status(
            "Finished",
            format!(
                "{} holds the {} package(s) of ebpkg.lock ({} added); install from it with EBPKG_MIRROR={} ebpkg install --frozen",
                report.url,
                report.added.len() + report.already_present.len(),
                report.added.len(),
                report.url
            ),
        );
    }
    Ok(ExitCode::SUCCESS)
}
