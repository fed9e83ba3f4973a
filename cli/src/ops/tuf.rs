//! `ebpkg registry`: naming registries, trusting a registry's TUF root, and
//! writing TUF metadata for a directory registry.

use std::path::{Path, PathBuf};

use anyhow::{Context, Result};
use ebpkg_sources::RegistryId;

use crate::Ctx;
use crate::exit::{Failure, fail};

/// A registry's TUF root, checked against the registry and trusted.
pub struct TrustedRoot {
    pub version: u64,
    /// How many targets its metadata signs.
    pub targets: usize,
    /// When its timestamp expires.
    pub expires: String,
}

/// What `registry add` did.
pub struct AddedRegistry {
    pub url: RegistryId,
    pub root: Option<TrustedRoot>,
}

/// A named registry of the config file.
pub struct NamedRegistry {
    pub name: String,
    pub url: RegistryId,
    /// The trusted TUF root's file, if it has one.
    pub tuf_root: Option<PathBuf>,
}

/// The named registries.
pub fn list(ctx: &Ctx) -> Vec<NamedRegistry> {
    ctx.config
        .registries
        .iter()
        .map(|(name, named)| NamedRegistry {
            name: name.clone(),
            url: named.url.clone(),
            tuf_root: ctx.config.tuf_trust(&named.url).map(|t| t.root),
        })
        .collect()
}

/// Names a registry in the config file, after trusting its TUF root (when given).
pub fn add(ctx: &Ctx, name: &str, url: &RegistryId, root: Option<&Path>) -> Result<AddedRegistry> {
    if name.is_empty() || !name.chars().all(|c| c.is_ascii_alphanumeric() || "-_".contains(c)) {
        return Err(fail(Failure::Usage, format!("`{name}` is not a registry name: use letters, digits, `-` and `_`")));
    }
    let root = root.map(|root| trust_root(ctx, url, root)).transpose()?;
    write_registry_entry(ctx, name, url.as_str())?;
    Ok(AddedRegistry { url: url.clone(), root })
}

/// Stores `root` as the trusted root for `url`, after checking that the
/// registry's metadata loads from it.
fn trust_root(ctx: &Ctx, url: &RegistryId, root: &Path) -> Result<TrustedRoot> {
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
    let index = ebpkg_sources::check_tuf_root(url, &trust, ctx.config.token_for(url), ctx.config.cainfo_for(url))
        .context("the root was not trusted")?;
    ebpkg_fs::write_atomic(&target, &index.root_json, 0o644).with_context(|| target.display().to_string())?;
    Ok(TrustedRoot { version: index.root_version, targets: index.len(), expires: index.expires.clone() })
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

/// What `registry tuf-init` did.
pub struct TufInitialized {
    /// Keys that did not exist and were generated.
    pub generated: Vec<PathBuf>,
    /// How many files the metadata signs.
    pub signed: usize,
    /// The metadata's directory.
    pub tuf: PathBuf,
}

/// Creates TUF metadata for a directory registry, generating missing keys.
pub fn tuf_init(dir: &Path, root_keys: &[PathBuf], threshold: u64, online_key: &Path) -> Result<TufInitialized> {
    // The registry first (an empty or missing directory becomes an empty
    // registry; any other directory is refused), so that nothing is written,
    // keys included, for a directory that cannot be signed.
    ebpkg_sources::FileRegistry::at(dir)?.create_if_missing()?;
    let mut generated = Vec::new();
    for key in root_keys.iter().map(PathBuf::as_path).chain([online_key]) {
        if !key.exists() {
            if let Some(parent) = key.parent().filter(|p| !p.as_os_str().is_empty()) {
                std::os::unix::fs::DirBuilderExt::mode(std::fs::DirBuilder::new().recursive(true), 0o700)
                    .create(parent)
                    .with_context(|| format!("creating {}", parent.display()))?;
            }
            ebpkg_tuf::keys::generate(key).with_context(|| key.display().to_string())?;
            generated.push(key.to_path_buf());
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
    Ok(TufInitialized { generated, signed: targets.len(), tuf })
}

/// Replaces TUF keys of a directory registry.
pub fn tuf_rotate(dir: &Path, rotation: &ebpkg_tuf::repo::Rotation) -> Result<()> {
    if rotation.new_root_keys.is_empty() && rotation.new_online_key.is_none() {
        return Err(fail(Failure::Usage, "nothing to rotate: give --new-root-key and/or --new-online-key"));
    }
    ebpkg_tuf::repo::rotate(
        &mut ebpkg_tuf::DirStore::new(dir.join("tuf")),
        rotation,
        jiff::Timestamp::now(),
        &ebpkg_tuf::Expiry::default(),
    )
    .with_context(|| format!("rotating the TUF keys of {}", dir.display()))
}

/// Re-signs the timestamp (and whatever would expire within a day).
pub fn tuf_refresh(dir: &Path, online_key: &Path) -> Result<()> {
    ebpkg_tuf::repo::refresh(
        &mut ebpkg_tuf::DirStore::new(dir.join("tuf")),
        online_key,
        jiff::Timestamp::now(),
        &ebpkg_tuf::Expiry::default(),
    )
    .with_context(|| format!("re-signing the TUF metadata of {}", dir.display()))
}

/// `config.json`, every index file and every version's attestation file, as TUF
/// targets (name, bytes).
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
                let rel = ebpkg_spec::index_target(pkg.as_str());
                if path.strip_prefix(dir).is_ok_and(|r| r == Path::new(&rel)) {
                    let bytes = ebpkg_fs::read(&path, 64 << 20)?;
                    // The versions' attestation files, which installs trust like the index.
                    for entry in ebpkg_spec::index::parse_index_file(pkg.as_str(), &bytes).entries {
                        let target = ebpkg_spec::attestation::attestation_target(&pkg, &entry.vers);
                        match ebpkg_fs::read(&dir.join(&target), ebpkg_spec::attestation::MAX_ATTESTATION_FILE_BYTES) {
                            Ok(file) => out.push((target, file)),
                            Err(e) if e.is_not_found() => {}
                            Err(e) => return Err(e.into()),
                        }
                    }
                    out.push((rel, bytes));
                }
            }
        }
    }
    out.sort();
    Ok(out)
}
