//! Commands about signatures: `key` (the publisher's own keys), `trust` (whose
//! keys this user or project trusts), and `owner key` (keys registered with a
//! registry server).

use std::os::unix::fs::DirBuilderExt;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::{Context, Result};
use clap::{Args, Subcommand};
use ebpkg_signing::{PublicKey, SigningKey};
use ebpkg_spec::names::PackageGlob;
use ebpkg_spec::types::KeyId;
use zeroize::Zeroizing;

use crate::Ctx;
use crate::exit::{Failure, fail};

/// The environment variable holding the private key's passphrase.
pub const PASSWORD_ENV: &str = "EBPKG_KEY_PASSWORD";
/// The key `ebpkg publish` signs with when none is named.
pub const DEFAULT_KEY: &str = "default";
/// A project's trust policy, beside its ebpkg.toml.
use crate::ops::trust::PROJECT_TRUST_FILE;
use crate::ops::trust::{effective_policy, read_policy, write_policy};

#[derive(Args)]
#[command(after_help = "Keys are cosign-compatible (ECDSA P-256; the private key is cosign's encrypted PEM): \
`cosign sign-blob --key ~/.config/ebpkg/keys/default.key` works, and so does a key from `cosign generate-key-pair` \
given to `ebpkg publish --key cosign.key`. The passphrase comes from EBPKG_KEY_PASSWORD, else a prompt.\n\n\
Examples:\n  ebpkg key generate\n  ebpkg key export > mykey.pub\n  ebpkg owner key add default --registry corp")]
pub struct KeyArgs {
    #[command(subcommand)]
    command: KeyCommand,
}

#[derive(Subcommand)]
enum KeyCommand {
    /// Create a key pair: KEYS_DIR/NAME.key (encrypted, mode 0600) and NAME.pub.
    Generate {
        #[arg(long, default_value = DEFAULT_KEY)]
        name: String,
        /// Replace an existing key of that name.
        #[arg(long)]
        force: bool,
    },
    /// List the keys: name and id.
    List,
    /// Show a key's id and files.
    Show {
        #[arg(default_value = DEFAULT_KEY)]
        name: String,
    },
    /// Print a key's public half (PEM), to register it or give it to people who trust it.
    Export {
        #[arg(default_value = DEFAULT_KEY)]
        name: String,
    },
}

#[derive(Args)]
#[command(after_help = "A trust policy says which keys may sign which packages. The user's is \
~/.config/ebpkg/trust.toml (beside the config file); a project's is ebpkg-trust.toml beside its ebpkg.toml \
(--project), committed with it so every host installing the project enforces the same policy. Both apply.\n\n\
Examples:\n  ebpkg trust add 'hike-*' gdKhOLs6Ofuuavi6eEZKBIxDfaw72MmqQbHxAnqyCEQ=\n  ebpkg trust add ddos-guard ./publisher.pub --project\n  \
ebpkg trust allow-unsigned 'local-*'\n  ebpkg trust revoke gdKhOLs6Ofuuavi6eEZKBIxDfaw72MmqQbHxAnqyCEQ= --reason 'key leaked'")]
pub struct TrustArgs {
    #[command(subcommand)]
    command: TrustCommand,
    /// Edit the project's ebpkg-trust.toml instead of the user's trust.toml.
    #[arg(long, global = true)]
    project: bool,
}

#[derive(Subcommand)]
enum TrustCommand {
    /// Trust a key to sign the packages a name or glob covers.
    Add {
        /// A package name, or a glob where `*` matches any run of characters.
        packages: String,
        /// A key id, a public key file (PEM), or the name of one of your keys.
        key: String,
    },
    /// Stop trusting a key (or every key) for a name or glob.
    Remove {
        /// The name or glob, as written when it was added.
        packages: String,
        /// A key id, a public key file or a key name; without it, every key for `packages`.
        key: Option<String>,
    },
    /// Let the packages a name or glob covers install unsigned.
    AllowUnsigned {
        /// A package name, or a glob where `*` matches any run of characters.
        packages: String,
    },
    /// Take back an allow-unsigned.
    DisallowUnsigned {
        /// The name or glob, as written when it was allowed.
        packages: String,
    },
    /// Revoke a key: everything it signed is refused.
    Revoke {
        /// A key id, a public key file or a key name.
        key: String,
        /// Why, shown when an install is refused.
        #[arg(long, default_value = "revoked")]
        reason: String,
    },
    /// Show the policy in force (user and project merged), or one file with --project.
    List,
}

pub fn key(ctx: &Ctx, args: KeyArgs) -> Result<ExitCode> {
    let dir = &ctx.config.keys_dir;
    match args.command {
        KeyCommand::Generate { name, force } => {
            check_key_name(&name)?;
            let (private, public) = key_paths(dir, &name);
            if private.exists() && !force {
                return Err(fail(
                    Failure::Usage,
                    format!(
                        "{} exists; keep it, or replace it with --force (what it signed stays valid only where its \
                         id stays trusted)",
                        private.display()
                    ),
                ));
            }
            let passphrase = passphrase(true)?;
            let key = SigningKey::generate()?;
            let pem = key.to_encrypted_pem(passphrase.as_bytes())?;
            std::fs::DirBuilder::new()
                .recursive(true)
                .mode(0o700)
                .create(dir)
                .with_context(|| format!("creating {}", dir.display()))?;
            ebpkg_fs::write_atomic(&private, pem.as_bytes(), 0o600)
                .with_context(|| format!("writing {}", private.display()))?;
            ebpkg_fs::write_atomic(&public, key.public().to_pem().as_bytes(), 0o644)
                .with_context(|| format!("writing {}", public.display()))?;
            if ctx.ui.json {
                ctx.ui.json(
                    &serde_json::json!({"name": name, "id": key.public().id(), "private": private, "public": public}),
                )?;
            } else {
                ctx.ui.status("Generated", format!("key `{name}`, id {}", key.public().id()));
                ctx.ui.out(format!("private key: {} (encrypted; keep it secret)", private.display()));
                ctx.ui.out(format!("public key:  {}", public.display()));
                ctx.ui.out(
                    "next: register it where you publish (`ebpkg owner key add` on a registry server); people who \
                     install your packages trust it with `ebpkg trust add PACKAGE ID`",
                );
            }
        }
        KeyCommand::List => {
            let keys = list_keys(dir)?;
            if ctx.ui.json {
                let list: Vec<_> = keys.iter().map(|(n, k)| serde_json::json!({"name": n, "id": k.id()})).collect();
                ctx.ui.json(&list)?;
            } else if keys.is_empty() {
                ctx.ui.out(format!("no keys in {}; create one with `ebpkg key generate`", dir.display()));
            } else {
                for (name, key) in keys {
                    ctx.ui.out(format!("{name}\t{}", key.id()));
                }
            }
        }
        KeyCommand::Show { name } => {
            let public = read_public_key(dir, &name)?;
            let (private, public_path) = key_paths(dir, &name);
            if ctx.ui.json {
                ctx.ui.json(
                    &serde_json::json!({"name": name, "id": public.id(), "private": private, "public": public_path}),
                )?;
            } else {
                ctx.ui.out(format!("name:    {name}"));
                ctx.ui.out(format!("id:      {}", public.id()));
                ctx.ui.out(format!("public:  {}", public_path.display()));
                ctx.ui.out(format!("private: {}", private.display()));
            }
        }
        KeyCommand::Export { name } => {
            ctx.ui.out(read_public_key(dir, &name)?.to_pem().trim_end());
        }
    }
    Ok(ExitCode::SUCCESS)
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

fn key_paths(dir: &Path, name: &str) -> (PathBuf, PathBuf) {
    (dir.join(format!("{name}.key")), dir.join(format!("{name}.pub")))
}

/// The passphrase of a private key: EBPKG_KEY_PASSWORD, else a prompt (twice
/// when `new`, so a typo does not lock the key away).
pub fn passphrase(new: bool) -> Result<Zeroizing<String>> {
    if let Ok(p) = std::env::var(PASSWORD_ENV) {
        return Ok(Zeroizing::new(p));
    }
    if !std::io::IsTerminal::is_terminal(&std::io::stdin()) {
        return Err(fail(
            Failure::Usage,
            format!("no passphrase for the signing key: set {PASSWORD_ENV} (there is no terminal to ask on)"),
        ));
    }
    let first = Zeroizing::new(crate::commands::account::prompt_hidden("Passphrase for the signing key: ")?);
    if new {
        let second = Zeroizing::new(crate::commands::account::prompt_hidden("The same passphrase again: ")?);
        if first.trim_end_matches(['\r', '\n']) != second.trim_end_matches(['\r', '\n']) {
            return Err(fail(Failure::Usage, "the passphrases differ; nothing was written"));
        }
    }
    Ok(Zeroizing::new(first.trim_end_matches(['\r', '\n']).to_owned()))
}

/// The keys in `dir`, by name, from their public halves.
fn list_keys(dir: &Path) -> Result<Vec<(String, PublicKey)>> {
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
            Ok(key) => out.push((name.to_owned(), key)),
            Err(e) => tracing::warn!("{}: {e:#}; skipped", path.display()),
        }
    }
    out.sort_by(|a, b| a.0.cmp(&b.0));
    Ok(out)
}

fn read_public_key(dir: &Path, name: &str) -> Result<PublicKey> {
    check_key_name(name)?;
    read_public_key_file(&key_paths(dir, name).1)
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

/// The private key `--key` names (a file, or a key name), or the default key;
/// `None` when no key was named and there is no default key.
pub fn signing_key(ctx: &Ctx, named: Option<&str>) -> Result<Option<SigningKey>> {
    let path = match named {
        Some(n) if n.contains('/') || n.ends_with(".key") => PathBuf::from(n),
        Some(n) => {
            check_key_name(n)?;
            key_paths(&ctx.config.keys_dir, n).0
        }
        None => {
            let path = key_paths(&ctx.config.keys_dir, DEFAULT_KEY).0;
            if !path.exists() {
                return Ok(None);
            }
            path
        }
    };
    let pem = ebpkg_fs::read_text(&path, ebpkg_signing::MAX_KEY_FILE_BYTES).map_err(|e| {
        if e.is_not_found() {
            fail(Failure::Usage, format!("{} does not exist; create a key with `ebpkg key generate`", path.display()))
        } else {
            e.into()
        }
    })?;
    let pass = passphrase(false)?;
    let key = SigningKey::from_encrypted_pem(&pem, pass.as_bytes()).map_err(|e| {
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
    })?;
    Ok(Some(key))
}

/// A public key named on the command line: a PEM file, a `.key` file's `.pub`
/// sibling, or a key name.
pub fn public_key_arg(ctx: &Ctx, arg: &str) -> Result<PublicKey> {
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
fn key_id_arg(ctx: &Ctx, arg: &str) -> Result<KeyId> {
    if let Some(id) = KeyId::parse(arg) {
        return Ok(id);
    }
    public_key_arg(ctx, arg).map(|k| *k.id()).map_err(|e| {
        fail(
            Failure::Usage,
            format!("`{arg}` is neither a key id (44 characters of base64), a public key file nor a key name: {e:#}"),
        )
    })
}

fn glob_arg(text: &str) -> Result<PackageGlob> {
    PackageGlob::new(text).map_err(|e| {
        fail(Failure::Usage, format!("`{text}` is not a package name or glob (`*` matches any run of characters): {e}"))
    })
}

pub fn trust(ctx: &Ctx, args: TrustArgs) -> Result<ExitCode> {
    let path = if args.project { ctx.project()?.dir.join(PROJECT_TRUST_FILE) } else { ctx.config.trust_path.clone() };
    let mut policy = read_policy(&path)?;
    let changed = match args.command {
        TrustCommand::List => {
            let policy = if args.project { policy } else { effective_policy(ctx, ctx.project().ok().as_ref())? };
            if ctx.ui.json {
                let keys: Vec<_> =
                    policy.keys().iter().map(|(p, k)| serde_json::json!({"packages": p.as_str(), "keys": k})).collect();
                let unsigned: Vec<&str> = policy.unsigned().iter().map(PackageGlob::as_str).collect();
                ctx.ui.json(&serde_json::json!({"keys": keys, "unsigned": unsigned, "revoked": policy.revoked()}))?;
            } else {
                for (pattern, keys) in policy.keys() {
                    for key in keys {
                        ctx.ui.out(format!("trust   {pattern}\t{key}"));
                    }
                }
                for pattern in policy.unsigned() {
                    ctx.ui.out(format!("unsigned {pattern}"));
                }
                for (key, reason) in policy.revoked() {
                    ctx.ui.out(format!("revoked {key}\t{reason}"));
                }
            }
            return Ok(ExitCode::SUCCESS);
        }
        TrustCommand::Add { packages, key } => policy.trust(glob_arg(&packages)?, key_id_arg(ctx, &key)?),
        TrustCommand::Remove { packages, key } => {
            let key = key.map(|k| key_id_arg(ctx, &k)).transpose()?;
            policy.untrust(&glob_arg(&packages)?, key.as_ref())
        }
        TrustCommand::AllowUnsigned { packages } => policy.allow_unsigned(glob_arg(&packages)?),
        TrustCommand::DisallowUnsigned { packages } => policy.disallow_unsigned(&glob_arg(&packages)?),
        TrustCommand::Revoke { key, reason } => policy.revoke(key_id_arg(ctx, &key)?, reason),
    };
    if changed {
        write_policy(&path, &policy)?;
        ctx.ui.status("Updated", path.display());
    } else {
        ctx.ui.status("Unchanged", format!("{}: it already says so", path.display()));
    }
    Ok(ExitCode::SUCCESS)
}
