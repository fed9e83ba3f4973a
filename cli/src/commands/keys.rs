//! Commands about signatures: `key` (the publisher's own keys) and `trust`
//! (whose keys this user or project trusts): their arguments, the passphrase
//! prompt, and what they print. The work is `ops::keys`'s functions, one for
//! each `key` subcommand, and `ops::trust::{listed_policy, edit_policy}`. (`owner
//! key`, keys registered with a registry server, is in `account.rs`.)

use std::process::ExitCode;

use anyhow::Result;
use clap::{Args, Subcommand};
use ebpkg_signing::TrustPolicy;
use ebpkg_spec::names::PackageGlob;
use zeroize::Zeroizing;

use ebpkg::Ctx;
use ebpkg::exit::{Failure, fail};
use ebpkg::ops::keys::{DEFAULT_KEY, GenerateOptions, NamedKey, PASSWORD_ENV};
use ebpkg::ops::trust::{PolicyEdit, PolicyScope, TrustChange};

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
ebpkg trust allow-unsigned 'local-*'\n  ebpkg trust revoke gdKhOLs6Ofuuavi6eEZKBIxDfaw72MmqQbHxAnqyCEQ= --reason 'key leaked'\n  ebpkg trust unattested-kernels refuse   install only on kernels an attestation observed\n  \
ebpkg trust prebuilt-objects rebuilt    load a shipped object only once rebuilt from its source into the same bytes\n  \
ebpkg trust rebuilder add ./rebuilder.pub   count that key's rebuild attestations (never a version's own signer's)")]
pub struct TrustArgs {
    #[command(subcommand)]
    command: TrustCommand,
    /// Edit the project's ebpkg-trust.toml instead of the user's trust.toml.
    #[arg(long, global = true)]
    project: bool,
}

#[derive(Clone, Copy, clap::ValueEnum)]
enum UnattestedRule {
    Note,
    Refuse,
}

#[derive(Clone, Copy, clap::ValueEnum)]
enum PrebuiltRule {
    Signer,
    Rebuilt,
    Never,
}

#[derive(Subcommand)]
enum RebuilderCommand {
    /// List a key as a rebuilder.
    Add {
        /// A key id, a public key file (PEM), or the name of one of your keys.
        key: String,
    },
    /// Take a key off the rebuilders.
    Remove {
        /// A key id, a public key file or a key name.
        key: String,
    },
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
    /// What an install does on a kernel that no trusted kernel verification
    /// attestation of a package observed: say so (`note`, the default) or refuse
    /// before building (`refuse`).
    UnattestedKernels {
        #[arg(value_enum)]
        rule: UnattestedRule,
    },
    /// When an install loads an object a package ships prebuilt: on the
    /// signer's word (`signer`, the default), only once its source was rebuilt
    /// into the same bytes here or by a trusted rebuild attestation (`rebuilt`),
    /// or never, compiling its source instead (`never`).
    PrebuiltObjects {
        #[arg(value_enum)]
        rule: PrebuiltRule,
    },
    /// The keys whose rebuild attestations vouch for shipped objects under
    /// `prebuilt-objects rebuilt`: independent rebuilders. A version's own
    /// signer never counts, even when listed.
    Rebuilder {
        #[command(subcommand)]
        command: RebuilderCommand,
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
    match args.command {
        KeyCommand::Generate { name, force } => {
            let generated =
                ebpkg::ops::keys::generate(ctx, GenerateOptions { name, force, passphrase: &|| passphrase(true) })?;
            print_generated(ctx, &generated)?;
        }
        KeyCommand::List => print_keys(ctx, &ebpkg::ops::keys::list(ctx)?)?,
        KeyCommand::Show { name } => print_key(ctx, &ebpkg::ops::keys::show(ctx, &name)?)?,
        KeyCommand::Export { name } => ctx.ui.out(ebpkg::ops::keys::export(ctx, &name)?.to_pem().trim_end()),
    }
    Ok(ExitCode::SUCCESS)
}

/// The JSON of `key generate` and `key show`.
fn key_json(key: &NamedKey) -> serde_json::Value {
    serde_json::json!({"name": key.name, "id": key.id, "private": key.files.private, "public": key.files.public})
}

fn print_generated(ctx: &Ctx, key: &NamedKey) -> Result<()> {
    if ctx.ui.json {
        return ctx.ui.json(&key_json(key));
    }
    ctx.ui.status("Generated", format!("key `{}`, id {}", key.name, key.id));
    ctx.ui.out(format!("private key: {} (encrypted; keep it secret)", key.files.private.display()));
    ctx.ui.out(format!("public key:  {}", key.files.public.display()));
    ctx.ui.out(
        "next: register it where you publish (`ebpkg owner key add` on a registry server); people who \
         install your packages trust it with `ebpkg trust add PACKAGE ID`",
    );
    Ok(())
}

fn print_keys(ctx: &Ctx, keys: &[NamedKey]) -> Result<()> {
    if ctx.ui.json {
        let list: Vec<_> = keys.iter().map(|k| serde_json::json!({"name": k.name, "id": k.id})).collect();
        return ctx.ui.json(&list);
    }
    if keys.is_empty() {
        ctx.ui.out(format!("no keys in {}; create one with `ebpkg key generate`", ctx.config.keys_dir.display()));
    }
    for key in keys {
        ctx.ui.out(format!("{}\t{}", key.name, key.id));
    }
    Ok(())
}

fn print_key(ctx: &Ctx, key: &NamedKey) -> Result<()> {
    if ctx.ui.json {
        return ctx.ui.json(&key_json(key));
    }
    ctx.ui.out(format!("name:    {}", key.name));
    ctx.ui.out(format!("id:      {}", key.id));
    ctx.ui.out(format!("public:  {}", key.files.public.display()));
    ctx.ui.out(format!("private: {}", key.files.private.display()));
    Ok(())
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

fn glob_arg(text: &str) -> Result<PackageGlob> {
    PackageGlob::new(text).map_err(|e| {
        fail(Failure::Usage, format!("`{text}` is not a package name or glob (`*` matches any run of characters): {e}"))
    })
}

pub fn trust(ctx: &Ctx, args: TrustArgs) -> Result<ExitCode> {
    let scope = if args.project { PolicyScope::Project } else { PolicyScope::User };
    let change = match args.command {
        TrustCommand::List => {
            print_policy(ctx, &ebpkg::ops::trust::listed_policy(ctx, scope)?)?;
            return Ok(ExitCode::SUCCESS);
        }
        TrustCommand::Add { packages, key } => TrustChange::Add { packages: glob_arg(&packages)?, key },
        TrustCommand::Remove { packages, key } => TrustChange::Remove { packages: glob_arg(&packages)?, key },
        TrustCommand::AllowUnsigned { packages } => TrustChange::AllowUnsigned { packages: glob_arg(&packages)? },
        TrustCommand::DisallowUnsigned { packages } => TrustChange::DisallowUnsigned { packages: glob_arg(&packages)? },
        TrustCommand::Revoke { key, reason } => TrustChange::Revoke { key, reason },
        TrustCommand::UnattestedKernels { rule } => TrustChange::Unattested(match rule {
            UnattestedRule::Note => ebpkg_signing::Unattested::Note,
            UnattestedRule::Refuse => ebpkg_signing::Unattested::Refuse,
        }),
        TrustCommand::PrebuiltObjects { rule } => TrustChange::Prebuilt(match rule {
            PrebuiltRule::Signer => ebpkg_signing::PrebuiltObjects::Signer,
            PrebuiltRule::Rebuilt => ebpkg_signing::PrebuiltObjects::Rebuilt,
            PrebuiltRule::Never => ebpkg_signing::PrebuiltObjects::Never,
        }),
        TrustCommand::Rebuilder { command: RebuilderCommand::Add { key } } => TrustChange::AddRebuilder { key },
        TrustCommand::Rebuilder { command: RebuilderCommand::Remove { key } } => TrustChange::RemoveRebuilder { key },
    };
    print_policy_edit(ctx, &ebpkg::ops::trust::edit_policy(ctx, scope, change)?);
    Ok(ExitCode::SUCCESS)
}

fn print_policy(ctx: &Ctx, policy: &TrustPolicy) -> Result<()> {
    if ctx.ui.json {
        let keys: Vec<_> =
            policy.keys().iter().map(|(p, k)| serde_json::json!({"packages": p.as_str(), "keys": k})).collect();
        let unsigned: Vec<&str> = policy.unsigned().iter().map(PackageGlob::as_str).collect();
        return ctx.ui.json(&serde_json::json!({
            "keys": keys, "unsigned": unsigned, "revoked": policy.revoked(),
            "unattested_kernels": policy.unattested().as_str(),
            "prebuilt_objects": policy.prebuilt().as_str(),
            "rebuilders": policy.rebuilders(),
        }));
    }
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
    ctx.ui.out(format!("unattested kernels: {}", policy.unattested().as_str()));
    ctx.ui.out(format!("prebuilt objects: {}", policy.prebuilt().as_str()));
    for key in policy.rebuilders() {
        ctx.ui.out(format!("rebuilder {key}"));
    }
    Ok(())
}

fn print_policy_edit(ctx: &Ctx, edit: &PolicyEdit) {
    if edit.changed {
        ctx.ui.status("Updated", edit.path.display());
    } else {
        ctx.ui.status("Unchanged", format!("{}: it already says so", edit.path.display()));
    }
}
