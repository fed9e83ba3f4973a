//! The publisher's own signing keys (`ebpkg key`): `NAME.key` (encrypted, mode
//! 0600) and `NAME.pub` in the keys directory; and keys named on the command
//! line (a key name, a key file, or a key id).

use std::os::unix::fs::DirBuilderExt;
use std::path::{Path, PathBuf};

use anyhow::{Context, Result};
use ebpkg_signing::{PublicKey, SigningKey};
use ebpkg_spec::types::KeyId;
use zeroize::Zeroizing;

use crate::Ctx;
use crate::exit::{Failure, fail};

/// The environment variable holding the private key's passphrase.
pub const PASSWORD_ENV: &str = "EBPKG_KEY_PASSWORD";
/// The key `ebpkg publish` signs with when none is named.
pub const DEFAULT_KEY: &str = "default";

/// Gives a private key's passphrase (the command's way of asking for it). It is
/// called only once a key is about to be made or opened: nothing is asked when
/// there is no key, or when the key's file is missing.
pub type Passphrase<'a> = &'a dyn Fn() -> Result<Zeroizing<String>>;

/// A key's two files in the keys directory.
pub struct KeyFiles {
    pub private: PathBuf,
    pub public: PathBuf,
}

impl KeyFiles {
    fn of(dir: &Path, name: &str) -> KeyFiles {
        KeyFiles { private: dir.join(format!("{name}.key")), public: dir.join(format!("{name}.pub")) }
    }
}

/// One of the user's keys.
pub struct NamedKey {
    pub name: String,
    pub id: KeyId,
    pub files: KeyFiles,
}

/// What `ebpkg key generate` makes.
pub struct GenerateOptions<'a> {
    pub name: String,
    /// Replace an existing key of that name.
    pub force: bool,
    pub passphrase: Passphrase<'a>,
}

/// Creates a key pair in the keys directory.
pub fn generate(ctx: &Ctx, opts: GenerateOptions<'_>) -> Result<NamedKey> {
    let dir = &ctx.config.keys_dir;
    check_key_name(&opts.name)?;
    let files = KeyFiles::of(dir, &opts.name);
    if files.private.exists() && !opts.force {
        return Err(fail(
            Failure::Usage,
            format!(
                "{} exists; keep it, or replace it with --force (what it signed stays valid only where its \
                 id stays trusted)",
                files.private.display()
            ),
        ));
    }
    let passphrase = (opts.passphrase)()?;
    let key = SigningKey::generate()?;
    let pem = key.to_encrypted_pem(passphrase.as_bytes())?;
    create_private_dir(dir)?;
    ebpkg_fs::write_atomic(&files.private, pem.as_bytes(), 0o600)
        .with_context(|| format!("writing {}", files.private.display()))?;
    ebpkg_fs::write_atomic(&files.public, key.public().to_pem().as_bytes(), 0o644)
        .with_context(|| format!("writing {}", files.public.display()))?;
    Ok(NamedKey { name: opts.name, id: *key.public().id(), files })
}

/// Creates `dir` and its missing parents for secrets: directories created here
/// are private (mode 0700); an existing one is left as it is.
pub fn create_private_dir(dir: &Path) -> Result<()> {
    std::fs::DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(dir)
        .with_context(|| format!("creating {}", dir.display()))
}

/// The keys in the keys directory, by name, from their public halves.
pub fn list(ctx: &Ctx) -> Result<Vec<NamedKey>> {
    let dir = &ctx.config.keys_dir;
    let entries = match std::fs::read_dir(dir) {
        Ok(entries) => entries,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(e) => return Err(e).with_context(|| format!("listing {}", dir.display())),
    };
    let mut out = Vec::new();
    for entry in entries {
        let entry = entry.with_context(|| format!("listing {}", dir.display()))?;
        let path = entry.path();
        let Some(name) = path.file_name().and_then(|n| n.to_str()).and_then(|n| n.strip_suffix(".pub")) else {
            continue;
        };
        match read_public_key(dir, name) {
            Ok(key) => out.push(NamedKey { name: name.to_owned(), id: *key.id(), files: KeyFiles::of(dir, name) }),
            Err(e) => tracing::warn!("{}: {e:#}; skipped", path.display()),
        }
    }
    out.sort_by(|a, b| a.name.cmp(&b.name));
    Ok(out)
}

/// One of the user's keys, by name (`ebpkg key show`).
pub fn show(ctx: &Ctx, name: &str) -> Result<NamedKey> {
    let dir = &ctx.config.keys_dir;
    let public = read_public_key(dir, name)?;
    Ok(NamedKey { name: name.to_owned(), id: *public.id(), files: KeyFiles::of(dir, name) })
}

/// The public half of one of the user's keys, by name (`ebpkg key export`).
pub fn export(ctx: &Ctx, name: &str) -> Result<PublicKey> {
    read_public_key(&ctx.config.keys_dir, name)
}

fn check_key_name(name: &str) -> Result<()> {
    if name.is_empty() || name.len() > 64 || !name.chars().all(|c| c.is_ascii_alphanumeric() || "-_.".contains(c)) {
        return Err(fail(
            Failure::Usage,
            format!("`{name}` is not a key name: use 1 to 64 letters, digits, `-`, `_`, `.`"),
        ));
    }
    if name.starts_with('.') {
        return Err(fail(Failure::Usage, format!("`{name}` is not a key name: it may not start with `.`")));
    }
    Ok(())
}

fn read_public_key(dir: &Path, name: &str) -> Result<PublicKey> {
    check_key_name(name)?;
    read_public_key_file(&KeyFiles::of(dir, name).public)
}

fn read_public_key_file(path: &Path) -> Result<PublicKey> {
    let pem = ebpkg_fs::read_text(path, ebpkg_signing::MAX_KEY_FILE_BYTES).map_err(|e| {
        if e.is_not_found() {
            fail(Failure::Usage, format!("{} does not exist; `ebpkg key list` shows your keys", path.display()))
        } else {
            e.into()
        }
    })?;
    PublicKey::from_pem(&pem).with_context(|| path.display().to_string())
}

/// The private key `named` names (a file, or a key name), or the default key;
/// `None` when no key was named and there is no default key.
pub fn signing_key(ctx: &Ctx, named: Option<&str>, passphrase: Passphrase<'_>) -> Result<Option<SigningKey>> {
    let Some(path) = signing_key_path(&ctx.config.keys_dir, named)? else {
        return Ok(None);
    };
    let pem = ebpkg_fs::read_text(&path, ebpkg_signing::MAX_KEY_FILE_BYTES).map_err(|e| {
        if e.is_not_found() {
            fail(Failure::Usage, format!("{} does not exist; create a key with `ebpkg key generate`", path.display()))
        } else {
            e.into()
        }
    })?;
    let pass = passphrase()?;
    open_signing_key(&path, &pem, &pass).map(Some)
}

/// The file of the private key `named` names; `None` when no key was named and
/// there is no default key.
fn signing_key_path(dir: &Path, named: Option<&str>) -> Result<Option<PathBuf>> {
    match named {
        Some(n) if n.contains('/') || n.ends_with(".key") => Ok(Some(PathBuf::from(n))),
        Some(n) => {
            check_key_name(n)?;
            Ok(Some(KeyFiles::of(dir, n).private))
        }
        None => {
            let path = KeyFiles::of(dir, DEFAULT_KEY).private;
            Ok(path.exists().then_some(path))
        }
    }
}

/// Decrypts the private key read from `path`.
fn open_signing_key(path: &Path, pem: &str, passphrase: &str) -> Result<SigningKey> {
    SigningKey::from_encrypted_pem(pem, passphrase.as_bytes()).map_err(|e| {
        // sigstore says "Unsupported key type" when the passphrase is wrong: the
        // box does not open, and what it then parses is not a key.
        let encrypted = pem.contains("ENCRYPTED SIGSTORE PRIVATE KEY") || pem.contains("ENCRYPTED COSIGN PRIVATE KEY");
        if encrypted {
            fail(
                Failure::Usage,
                format!(
                    "{}: the passphrase does not open this key (it came from {}); give the one the key was made \
                     with ({e})",
                    path.display(),
                    if std::env::var_os(PASSWORD_ENV).is_some() { PASSWORD_ENV } else { "the terminal" }
                ),
            )
        } else {
            fail(Failure::Input, format!("{}: not an encrypted cosign or ebpkg private key: {e}", path.display()))
        }
    })
}

/// A public key named on the command line: a PEM file, a `.key` file's `.pub`
/// sibling, or a key name.
pub fn public_key_named(ctx: &Ctx, arg: &str) -> Result<PublicKey> {
    if Path::new(arg).is_file() {
        let path = Path::new(arg);
        if path.extension().is_some_and(|e| e == "key") {
            return read_public_key_file(&path.with_extension("pub"));
        }
        return read_public_key_file(path);
    }
    read_public_key(&ctx.config.keys_dir, arg)
}

/// A key id, a public key file, or one of the user's key names, as an id.
pub fn key_id_named(ctx: &Ctx, arg: &str) -> Result<KeyId> {
    if let Some(id) = KeyId::parse(arg) {
        return Ok(id);
    }
    public_key_named(ctx, arg).map(|k| *k.id()).map_err(|e| {
        fail(
            Failure::Usage,
            format!("`{arg}` is neither a key id (44 characters of base64), a public key file nor a key name: {e:#}"),
        )
    })
}
