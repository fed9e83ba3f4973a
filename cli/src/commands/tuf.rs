//! `ebpkg registry`: naming registries, trusting a registry's TUF root, and
//! writing TUF metadata for a directory registry.

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::{Context, Result};
use clap::{Args, Subcommand};
use ebpkg_sources::RegistryUrl;

use crate::Ctx;
use crate::exit::{Failure, fail};

#[derive(Args)]
#[command(after_help = "Examples:\n  ebpkg registry add corp file:///srv/ebpkg --root root.json\n  \
ebpkg registry tuf-init /srv/ebpkg --root-key /media/offline/root.key --online-key /etc/ebpkg/online.key\n  \
EBPKG_TUF_ONLINE_KEY=/etc/ebpkg/online.key ebpkg publish --registry corp\n  \
ebpkg registry tuf-refresh /srv/ebpkg --online-key /etc/ebpkg/online.key     (daily, from cron)")]
pub struct RegistryArgs {
    #[command(subcommand)]
    command: RegistryCommand,
}

#[derive(Subcommand)]
enum RegistryCommand {
    /// Name a registry in the config file, and trust its TUF root: from then on
    /// every index file read from it must match its signed metadata.
    Add {
        /// The name (`--registry NAME`).
        name: String,
        /// Its URL.
        url: String,
        /// The registry's `root.json`, obtained out of band (the registry's
        /// operator publishes it). Checked against the registry right away.
        #[arg(long, value_name = "FILE")]
        root: Option<PathBuf>,
    },
    /// The named registries, and which have a trusted TUF root.
    List,
    /// Create TUF metadata for a directory registry over the files it has: the
    /// root and targets roles signed with the offline root key, bins, snapshot
    /// and timestamp with the online key. Missing keys are generated.
    TufInit {
        /// The registry's directory.
        dir: PathBuf,
        /// An offline key (keep it off the machine that publishes). Repeatable:
        /// root and targets then need `--threshold` of them.
        #[arg(long = "root-key", value_name = "FILE", required = true)]
        root_keys: Vec<PathBuf>,
        /// How many of the root keys must sign the root and targets roles.
        #[arg(long, default_value_t = 1)]
        threshold: u64,
        /// The online key (publishes sign with it: `EBPKG_TUF_ONLINE_KEY`).
        #[arg(long, value_name = "FILE")]
        online_key: PathBuf,
    },
    /// Replace TUF keys: the offline keys (`--new-root-key`, cross-signed by the old
    /// ones so clients follow) and/or the online key (`--new-online-key`, which also
    /// undoes a fast-forward: snapshot and timestamp start again at version 1).
    TufRotate {
        /// The registry's directory.
        dir: PathBuf,
        /// The current offline keys (repeatable).
        #[arg(long = "root-key", value_name = "FILE", required = true)]
        root_keys: Vec<PathBuf>,
        /// The current online key.
        #[arg(long, value_name = "FILE")]
        online_key: PathBuf,
        /// New offline keys (repeatable; generated when missing).
        #[arg(long = "new-root-key", value_name = "FILE")]
        new_root_keys: Vec<PathBuf>,
        /// How many of the new offline keys must sign.
        #[arg(long, default_value_t = 1)]
        threshold: u64,
        /// A new online key (generated when missing); publish with it from then on.
        #[arg(long, value_name = "FILE")]
        new_online_key: Option<PathBuf>,
    },
    /// Re-sign the timestamp (and whatever would expire within a day) so that an
    /// unchanged registry does not look frozen. Run it daily.
    TufRefresh {
        /// The registry's directory.
        dir: PathBuf,
        #[arg(long, value_name = "FILE")]
        online_key: PathBuf,
    },
}

pub fn registry(ctx: &Ctx, args: RegistryArgs) -> Result<ExitCode> {
    match args.command {
        RegistryCommand::Add { name, url, root } => add(ctx, &name, &url, root.as_deref()),
        RegistryCommand::List => {
            for (name, named) in &ctx.config.registries {
                let tuf = RegistryUrl::parse(&named.url)
                    .ok()
                    .and_then(|u| ctx.config.tuf_trust(&u))
                    .map_or(String::new(), |t| format!("\tTUF root {}", t.root.display()));
                ctx.ui.out(format!("{name}\t{}{tuf}", named.url));
            }
            Ok(ExitCode::SUCCESS)
        }
        RegistryCommand::TufInit { dir, root_keys, threshold, online_key } => {
            tuf_init(ctx, &dir, &root_keys, threshold, &online_key)
        }
        RegistryCommand::TufRotate { dir, root_keys, online_key, new_root_keys, threshold, new_online_key } => {
            if new_root_keys.is_empty() && new_online_key.is_none() {
                return Err(fail(Failure::Usage, "nothing to rotate: give --new-root-key and/or --new-online-key"));
            }
            let rotation =
                ebpkg_tuf::repo::Rotation { root_keys, online_key, new_root_keys, threshold, new_online_key };
            ebpkg_tuf::repo::rotate(
                &mut ebpkg_tuf::DirStore::new(dir.join("tuf")),
                &rotation,
                jiff::Timestamp::now(),
                &ebpkg_tuf::Expiry::default(),
            )
            .with_context(|| format!("rotating the TUF keys of {}", dir.display()))?;
            ctx.ui.status("Rotated", format!("the TUF keys of {}; clients follow on their next read", dir.display()));
            Ok(ExitCode::SUCCESS)
        }
        RegistryCommand::TufRefresh { dir, online_key } => {
            ebpkg_tuf::repo::refresh(
                &mut ebpkg_tuf::DirStore::new(dir.join("tuf")),
                &online_key,
                jiff::Timestamp::now(),
                &ebpkg_tuf::Expiry::default(),
            )
            .with_context(|| format!("re-signing the TUF metadata of {}", dir.display()))?;
            ctx.ui.status("Refreshed", format!("the TUF timestamp of {}", dir.display()));
            Ok(ExitCode::SUCCESS)
        }
    }
}

fn add(ctx: &Ctx, name: &str, url: &str, root: Option<&Path>) -> Result<ExitCode> {
    if name.is_empty() || !name.chars().all(|c| c.is_ascii_alphanumeric() || "-_".contains(c)) {
        return Err(fail(Failure::Usage, format!("`{name}` is not a registry name: use letters, digits, `-` and `_`")));
    }
    let parsed = RegistryUrl::parse(url).with_context(|| format!("registry `{url}`"))?;
    if let Some(root) = root {
        trust_root(ctx, &parsed, root)?;
    }
    write_registry_entry(ctx, name, parsed.as_str())?;
    ctx.ui.status("Added", format!("registry `{name}` = {parsed}"));
    Ok(ExitCode::SUCCESS)
}

/// Stores `root` as the trusted root for `url`, after checking that the
/// registry's metadata loads from it.
fn trust_root(ctx: &Ctx, url: &RegistryUrl, root: &Path) -> Result<()> {
    let bytes = ebpkg_fs::read(root, 512 * 1024).with_context(|| root.display().to_string())?;
    let target = ctx.config.tuf_root_path(url);
    let dir = target.parent().map(Path::to_path_buf).unwrap_or_default();
    std::fs::create_dir_all(&dir).with_context(|| format!("creating {}", dir.display()))?;
    // Checked in a scratch copy first: a root that does not verify the registry
    // is not trusted at all.
    let scratch = tempfile::tempdir_in(&dir).context("a scratch directory for the check")?;
    let candidate = scratch.path().join("root.json");
    std::fs::write(&candidate, &bytes).with_context(|| candidate.display().to_string())?;
    let trust =
        ebpkg_sources::TufTrust { root: candidate, datastore: scratch.path().join("datastore"), trust_clock: false };
    let index =
        ebpkg_sources::check_tuf_root(url, &trust, ctx.config.token_for(url)).context("the root was not trusted")?;
    ebpkg_fs::write_atomic(&target, &index.root_json, 0o644).with_context(|| target.display().to_string())?;
    ctx.ui.status(
        "Trusted",
        format!(
            "the TUF root (v{}) of {url}: {} signed target(s), timestamp valid until {}",
            index.root_version,
            index.len(),
            index.expires
        ),
    );
    Ok(())
}

/// Writes `[registries.NAME] url = URL` into the config file, keeping the rest
/// of it (comments, order) as it was.
fn write_registry_entry(ctx: &Ctx, name: &str, url: &str) -> Result<()> {
    let path = ctx.config.file.clone().unwrap_or_else(|| ctx.config.tuf_dir.with_file_name("config.toml"));
    let text = match ebpkg_fs::read_text(&path, ebpkg_spec::MAX_TOML_BYTES as u64) {
        Ok(text) => text,
        Err(e) if e.is_not_found() => String::new(),
        Err(e) => return Err(e.into()),
    };
    let mut doc: toml_edit::DocumentMut =
        text.parse().map_err(|e| fail(Failure::Input, format!("{}: {e}", path.display())))?;
    let registries = doc
        .entry("registries")
        .or_insert_with(|| {
            let mut t = toml_edit::Table::new();
            t.set_implicit(true);
            toml_edit::Item::Table(t)
        })
        .as_table_mut()
        .ok_or_else(|| fail(Failure::Input, format!("{}: `registries` is not a table", path.display())))?;
    let entry = registries.entry(name).or_insert_with(|| toml_edit::Item::Table(toml_edit::Table::new()));
    let table = entry
        .as_table_mut()
        .ok_or_else(|| fail(Failure::Input, format!("{}: `registries.{name}` is not a table", path.display())))?;
    table["url"] = toml_edit::value(url);
    if let Some(parent) = path.parent() {
        std::fs::create_dir_all(parent).with_context(|| format!("creating {}", parent.display()))?;
    }
    ebpkg_fs::write_atomic(&path, doc.to_string().as_bytes(), 0o644).with_context(|| path.display().to_string())?;
    Ok(())
}

fn tuf_init(ctx: &Ctx, dir: &Path, root_keys: &[PathBuf], threshold: u64, online_key: &Path) -> Result<ExitCode> {
    // The registry first (an empty or missing directory becomes an empty
    // registry; any other directory is refused), so that nothing is written,
    // keys included, for a directory that cannot be signed.
    ebpkg_sources::FileRegistry::at(dir)?.create_if_missing()?;
    for key in root_keys.iter().map(PathBuf::as_path).chain([online_key]) {
        if !key.exists() {
            if let Some(parent) = key.parent().filter(|p| !p.as_os_str().is_empty()) {
                std::os::unix::fs::DirBuilderExt::mode(std::fs::DirBuilder::new().recursive(true), 0o700)
                    .create(parent)
                    .with_context(|| format!("creating {}", parent.display()))?;
            }
            ebpkg_tuf::keys::generate(key).with_context(|| key.display().to_string())?;
            ctx.ui.status("Generated", format!("TUF key {} (mode 0600)", key.display()));
        }
    }
    let targets = registry_files(dir)?;
    let tuf = dir.join("tuf");
    ebpkg_tuf::repo::init(
        &mut ebpkg_tuf::DirStore::new(&tuf),
        root_keys,
        threshold,
        online_key,
        &targets,
        jiff::Timestamp::now(),
        &ebpkg_tuf::Expiry::default(),
    )
    .with_context(|| format!("creating the TUF metadata of {}", dir.display()))?;
    ctx.ui.status(
        "Signed",
        format!("{} file(s) of {} in TUF metadata ({})", targets.len(), dir.display(), tuf.display()),
    );
    ctx.ui.out(format!(
        "next: give users {} (they run `ebpkg registry add NAME URL --root root.json`); publish with \
         EBPKG_TUF_ONLINE_KEY={}; run `ebpkg registry tuf-refresh` daily; keep {} offline",
        tuf.join("root.json").display(),
        online_key.display(),
        root_keys.iter().map(|k| k.display().to_string()).collect::<Vec<_>>().join(", ")
    ));
    Ok(ExitCode::SUCCESS)
}

/// `config.json` and every index file, as TUF targets (name, bytes).
fn registry_files(dir: &Path) -> Result<Vec<(String, Vec<u8>)>> {
    let mut out = Vec::new();
    let config = dir.join(ebpkg_sources::CONFIG_FILE);
    out.push((ebpkg_sources::CONFIG_FILE.to_owned(), ebpkg_fs::read(&config, 1 << 20)?));
    let index = dir.join("index");
    let mut dirs = vec![index.clone()];
    while let Some(d) = dirs.pop() {
        let entries = match std::fs::read_dir(&d) {
            Ok(entries) => entries,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound && d == index => break,
            Err(e) => return Err(e).with_context(|| format!("listing {}", d.display())),
        };
        for entry in entries {
            let entry = entry.with_context(|| format!("listing {}", d.display()))?;
            let path = entry.path();
            let kind = entry.file_type().with_context(|| path.display().to_string())?;
            if kind.is_dir() {
                dirs.push(path);
            } else if kind.is_file() {
                let name = entry.file_name();
                let Some(name) = name.to_str() else { continue };
                let Ok(pkg) = ebpkg_spec::PackageName::new(name) else { continue };
                let rel = format!("index/{}", ebpkg_spec::index_path(pkg.as_str()));
                if path.strip_prefix(dir).is_ok_and(|r| r == Path::new(&rel)) {
                    out.push((rel, ebpkg_fs::read(&path, 64 << 20)?));
                }
            }
        }
    }
    out.sort();
    Ok(out)
}
