//! Commands that talk to a registry: `publish`, `yank`, `search`, `info`, `mirror`:
//! their arguments and what they print. The work is `ops::publish::publish`,
//! `ops::yank::yank`, `ops::search::search`, `ops::info::info` and
//! `ops::mirror::mirror`.

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Result;
use clap::Args;
use ebpkg_sources::MirrorReport;
use ebpkg_spec::PackageName;
use ebpkg_spec::index::IndexEntry;

use crate::commands::install::parse_package_spec;
use ebpkg::Ctx;
use ebpkg::exit::{Failure, fail};
use ebpkg::ops::info::PackageInfo;
use ebpkg::ops::publish::{Existing, PublishOptions, Published, Signing};
use ebpkg::ops::search::Found;
use ebpkg::ops::yank::{YankOptions, Yanked};

#[derive(Args)]
#[command(
    after_help = "Examples:\n  ebpkg publish --registry file:///srv/ebpkg\n  ebpkg login --registry https://ebpkg.corp.example/ && ebpkg publish --registry https://ebpkg.corp.example/\n  ebpkg publish --dry-run       pack and verify, ask the registry server whether the token may publish it; publish nothing\n  ebpkg publish --with-objects  ship the portable objects too: installs need no clang\n  ebpkg publish --dry-run --out pkg.tar.gz     the archive, to sign elsewhere (cosign sign-blob)\n  ebpkg publish --bundle b.json --public-key cosign.pub"
)]
pub struct PublishArgs {
    /// Pack and verify only; a registry server is asked whether this token may
    /// publish the version (its scopes, package globs, the owners, the name).
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
    let signing = match (args.no_sign, args.bundle, args.public_key) {
        (true, _, _) => Signing::Unsigned,
        (false, Some(bundle), Some(public_key)) => Signing::Bundle { bundle, public_key },
        (false, _, _) => Signing::Key(args.key),
    };
    let opts = PublishOptions {
        dry_run: args.dry_run,
        no_verify: args.no_verify,
        signing,
        passphrase: &|| crate::commands::keys::passphrase(false),
        out: args.out,
        skip_existing: args.skip_existing,
        with_objects: args.with_objects,
    };
    print_published(ctx, ebpkg::ops::publish::publish(ctx, opts)?)?;
    Ok(ExitCode::SUCCESS)
}

fn print_published(ctx: &Ctx, published: Published) -> Result<()> {
    match published {
        Published::AlreadyThere { id, registry, how: Existing::SameChecksum } => {
            ctx.ui.status("Skipped", format!("{id}: {registry} has it already, with the same checksum"));
        }
        Published::AlreadyThere { id, registry, how: Existing::WithoutObjects } => ctx.ui.status(
            "Skipped",
            format!("{id}: {registry} has it already, published without its objects (the next version ships them)"),
        ),
        Published::DryRun { id, allowed } => {
            if let Some((registry, allowed)) = allowed {
                let new = if allowed.new_package { " (a new package: its first owner)" } else { "" };
                ctx.ui.status("Allowed", format!("{registry}: `{}` may publish {id}{new}", allowed.login));
            }
            ctx.ui.status("Skipped", format!("publishing {id} (--dry-run)"))
        }
        Published::Sent { id, registry, entry, own_key } => {
            if ctx.ui.json {
                ctx.ui.json(&entry)?;
            } else {
                ctx.ui.status("Published", format!("{id} to {registry}"));
            }
            if let Some(t) = own_key? {
                ctx.ui.status(
                    "Trusted",
                    format!("your key {} for {} (recorded in {})", t.key, t.package, t.policy.display()),
                );
            }
        }
    }
    Ok(())
}

pub fn yank(ctx: &Ctx, args: YankArgs) -> Result<ExitCode> {
    let (name, version) = args
        .package
        .split_once('@')
        .ok_or_else(|| fail(Failure::Usage, format!("`{}`: write name@version, e.g. meter@1.2.0", args.package)))?;
    let name = PackageName::new(name).map_err(|e| ebpkg::exit::bad_name(name, &e))?;
    let version = semver::Version::parse(version)
        .map_err(|e| fail(Failure::Usage, format!("`{version}` is not a version: {e}")))?;
    let opts = YankOptions { name, version, undo: args.undo };
    let yanked = ebpkg::ops::yank::yank(ctx, &opts)?;
    print_yanked(ctx, &opts, &yanked)?;
    Ok(ExitCode::SUCCESS)
}

fn print_yanked(ctx: &Ctx, opts: &YankOptions, yanked: &Yanked) -> Result<()> {
    if ctx.ui.json {
        return ctx.ui.json(&yanked.entry);
    }
    let verb = if opts.undo { "Unyanked" } else { "Yanked" };
    ctx.ui.status(verb, format!("{}@{} in {}", opts.name, opts.version, yanked.registry));
    Ok(())
}

pub fn search(ctx: &Ctx, args: SearchArgs) -> Result<ExitCode> {
    let found = ebpkg::ops::search::search(ctx, &args.query, args.limit)?;
    print_found(ctx, &args.query, &found)?;
    Ok(ExitCode::SUCCESS)
}

fn print_found(ctx: &Ctx, query: &str, found: &Found) -> Result<()> {
    let hits = &found.hits;
    if ctx.ui.json {
        return ctx.ui.json(hits);
    }
    if hits.is_empty() {
        ctx.ui.out(format!("no package matches `{query}` in {}", found.registry));
    }
    let width = hits.iter().map(|h| h.name.as_str().len() + h.version.to_string().len() + 3).max().unwrap_or(0);
    for h in hits {
        let head = format!("{} = \"{}\"", h.name, h.version);
        let mut desc = h.description.clone().unwrap_or_default();
        if h.yanked {
            desc = format!("(yanked) {desc}");
        }
        ctx.ui.out(format!("{head:<width$}  # {}", desc.trim()));
    }
    Ok(())
}

pub fn info(ctx: &Ctx, args: InfoArgs) -> Result<ExitCode> {
    let (name, req) = parse_package_spec(&args.package)?;
    print_info(ctx, &ebpkg::ops::info::info(ctx, &name, &req)?)?;
    Ok(ExitCode::SUCCESS)
}

fn print_info(ctx: &Ctx, info: &PackageInfo) -> Result<()> {
    let entries = info.versions.iter();
    if ctx.ui.json {
        let versions: Vec<_> =
            entries.map(|e| serde_json::json!({"version": e.vers.to_string(), "yanked": e.yanked})).collect();
        return ctx.ui.json(&serde_json::json!({
            "entry": info.chosen, "versions": versions, "kernels": info.kernels, "ignored_attestations": info.ignored,
            "attestations_unread": info.unread,
        }));
    }
    print_entry(ctx, &info.chosen);
    for why in &info.ignored {
        ctx.ui.warn(format!("{}@{}: ignored {why}", info.chosen.name, info.chosen.vers));
    }
    if let Some(why) = &info.unread {
        ctx.ui.out(format!("kernels: the attestations could not be read ({why})"));
    } else if info.kernels.is_empty() {
        ctx.ui.out("kernels: no trusted kernel verification attestation (`ebpkg attest` makes one)");
    } else {
        ctx.ui.out("kernels (attested):");
        for k in &info.kernels {
            let here = if info.this_kernel.as_ref() == Some(&k.kernel) { "  ← this kernel" } else { "" };
            ctx.ui.out(format!(
                "  {:<32} {:<8} {}  [{}, key {}]{here}",
                k.kernel.release, k.kernel.architecture, k.outcome, k.observed_at, k.key
            ));
        }
    }
    let versions: Vec<String> = entries
        .map(|e| {
            let mut notes = Vec::new();
            if let Some(min) = e.kernel.min {
                notes.push(format!("Linux ≥ {min}"));
            }
            if e.yanked {
                notes.push("yanked".to_owned());
            }
            if notes.is_empty() { e.vers.to_string() } else { format!("{} ({})", e.vers, notes.join(", ")) }
        })
        .collect();
    ctx.ui.out(format!("versions: {}", versions.join(", ")));
    Ok(())
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
    ctx.ui.out(kernel_line(&e.kernel));
    for p in &e.programs {
        let args: Vec<String> = p.args.iter().map(|a| format!("{}: {}", a.name, a.ty)).collect();
        let ret = p.returns.map(|r| format!(" -> {r}")).unwrap_or_default();
        ctx.ui.out(format!(
            "program {}({}){ret}  [{}, ends the packet: {} ({})]",
            p.name,
            args.join(", "),
            p.hook,
            p.ends_packet,
            p.ends_packet.meaning()
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

/// What a version says it needs from the kernel (`[package.kernel]`).
fn kernel_line(k: &ebpkg_spec::manifest::KernelReq) -> String {
    let mut line = match (k.min, &k.reason) {
        (Some(min), Some(why)) => format!("kernel: Linux ≥ {min} ({why})"),
        (Some(min), None) => format!("kernel: Linux ≥ {min}"),
        _ => "kernel: no oldest version declared".to_owned(),
    };
    if !k.program_types.is_empty() {
        line.push_str(&format!("; program types: {}", k.program_types.join(", ")));
    }
    if !k.helpers.is_empty() {
        line.push_str(&format!("; helpers: {}", k.helpers.join(", ")));
    }
    line
}

pub fn mirror(ctx: &Ctx, args: MirrorArgs) -> Result<ExitCode> {
    print_mirrored(ctx, &ebpkg::ops::mirror::mirror(ctx, &args.dir)?)?;
    Ok(ExitCode::SUCCESS)
}

fn print_mirrored(ctx: &Ctx, report: &MirrorReport) -> Result<()> {
    if ctx.ui.json {
        return ctx.ui.json(&serde_json::json!({
            "url": report.url.to_string(),
            "added": report.added.iter().map(ToString::to_string).collect::<Vec<_>>(),
            "already_present": report.already_present.iter().map(ToString::to_string).collect::<Vec<_>>(),
        }));
    }
    for id in &report.added {
        ctx.ui.status("Mirrored", id.to_string());
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
    Ok(())
}
