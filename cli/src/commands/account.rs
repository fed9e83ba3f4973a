//! Commands about who publishes: `login`, `logout`, `owner`, `token`: their
//! arguments, reading the token (standard input, or a prompt with echo off), and
//! what they print. The work is `ops::account::{login, logout}`, `ops::owner`'s
//! functions, one for each `owner` subcommand, and `ops::token`'s.

use std::io::{BufRead, IsTerminal, Read, Write};
use std::process::ExitCode;

use anyhow::{Context, Result};
use clap::{Args, Subcommand};
use ebpkg_sources::{PublisherKey, RegistryId, TrustedPublisher};
use ebpkg_spec::PackageName;
use ebpkg_spec::registry_api::{NewToken, Scope};

use ebpkg::Ctx;
use ebpkg::exit::{Failure, fail};
use ebpkg::ops::account::{LoggedIn, LoggedOut, LoginWith};
use ebpkg::ops::owner::KeyChange;

#[derive(Args)]
#[command(
    after_help = "The token is checked with the registry (GET api/v1/me) before it is saved in credentials.toml, \
beside the config file (mode 0600), under the registry's URL. Which token is used: EBPKG_REGISTRY_TOKEN (for the \
--registry of the command only), else credentials.toml, else the config file's `token`.\n\n\
With --trusted-publishing (in CI), no token is given: the pipeline's OIDC token (--oidc-token-file, else \
EBPKG_OIDC_TOKEN, else GitHub Actions' ACTIONS_ID_TOKEN_REQUEST_URL/_TOKEN with the audience the registry's \
config.json names) is exchanged for a 30-minute token that can publish the packages whose owners trust this \
repository's workflow (`ebpkg owner trusted-publisher add`), and that token is saved.\n\n\
Examples:\n  ebpkg login --registry https://ebpkg.corp.example/\n  echo \"$TOKEN\" | ebpkg login --registry corp --token-stdin\n  \
ebpkg login --registry https://ebpkg.corp.example/ --trusted-publishing   # in a GitHub Actions job"
)]
pub struct LoginArgs {
    /// Read the token from standard input instead of a prompt.
    #[arg(long, conflicts_with = "trusted_publishing")]
    token_stdin: bool,
    /// Exchange this CI job's OIDC token for a short-lived publish token.
    #[arg(long)]
    trusted_publishing: bool,
    /// The OIDC token, from this file (with --trusted-publishing).
    #[arg(long, value_name = "FILE", requires = "trusted_publishing")]
    oidc_token_file: Option<std::path::PathBuf>,
}

#[derive(Args)]
#[command(after_help = "Example:\n  ebpkg logout --registry https://ebpkg.corp.example/")]
pub struct LogoutArgs {}

#[derive(Args)]
#[command(
    after_help = "Examples:\n  ebpkg owner list meter\n  ebpkg owner add meter bob carol\n  ebpkg owner remove meter bob\n  \
ebpkg owner trusted-publisher add meter --repository acme/meter --workflow publish.yml"
)]
pub struct OwnerArgs {
    #[command(subcommand)]
    command: OwnerCommand,
}

#[derive(Subcommand)]
enum OwnerCommand {
    /// List a package's owners.
    List { package: String },
    /// Add owners (users of the registry) to a package.
    Add {
        package: String,
        #[arg(required = true)]
        users: Vec<String>,
    },
    /// Remove owners from a package (never the last one).
    Remove {
        package: String,
        #[arg(required = true)]
        users: Vec<String>,
    },
    /// Your publisher keys on the registry: the keys your packages may be signed with.
    #[command(subcommand)]
    Key(OwnerKeyCommand),
    /// The CI pipelines that may publish a package with their OIDC identity
    /// (trusted publishing), without a stored token.
    #[command(subcommand)]
    TrustedPublisher(TrustedPublisherCommand),
}

#[derive(Subcommand)]
enum TrustedPublisherCommand {
    /// Let a repository's workflow publish the package: `ebpkg owner trusted-publisher add net
    /// --repository acme/net --workflow publish.yml`.
    Add {
        package: String,
        /// The repository, `owner/repo`.
        #[arg(long)]
        repository: String,
        /// The workflow's file name in .github/workflows/.
        #[arg(long)]
        workflow: String,
        /// Only jobs in this deployment environment.
        #[arg(long)]
        environment: Option<String>,
        /// The OIDC issuer.
        #[arg(long, default_value = "https://token.actions.githubusercontent.com")]
        issuer: String,
    },
    /// The package's trusted publishers.
    List { package: String },
    /// Stop one from publishing (its id from `list`).
    Remove { package: String, id: i64 },
}

#[derive(Subcommand)]
enum OwnerKeyCommand {
    /// Register a key: one of your key names or a private key file (`cosign.key`).
    /// Its public half is registered; the private half signs a proof that you hold
    /// it (it never leaves this machine).
    Add { key: String },
    /// Revoke a key: publishes signed by it are refused, installs are told.
    Remove { id: String },
    /// List your keys, revoked ones included.
    List,
}

#[derive(Args)]
#[command(after_help = "Your tokens on the registry server (--registry, else the default one), as crates.io's \
token page: managing them needs an unrestricted token (no --scope, no --package), which `ebpkg login` saved.\n\n\
Examples:\n  ebpkg token list\n  \
ebpkg token create ci-publish --scope publish-new --scope publish-update --package 'net*' --expires 90\n  \
ebpkg token revoke ci-publish      # or by its id: ebpkg token revoke 7")]
pub struct TokenArgs {
    #[command(subcommand)]
    command: TokenCommand,
}

#[derive(Subcommand)]
enum TokenCommand {
    /// List your live tokens: id, name, scopes, package globs, expiry and last use (never secrets).
    List,
    /// Create a token and print its secret, once, on standard output.
    Create {
        /// A name to recognize it by (1 to 64 printable characters).
        name: String,
        /// publish-new, publish-update, yank, change-owners (repeatable); none: every power.
        #[arg(long = "scope", value_parser = Scope::parse_arg)]
        scopes: Vec<Scope>,
        /// Limit to packages matching this glob, `*` matching any run of characters (repeatable).
        #[arg(long = "package", value_name = "GLOB")]
        packages: Vec<String>,
        /// Expire after this many days (1 to 3650); without it the token never expires.
        #[arg(long, value_name = "DAYS", value_parser = clap::value_parser!(u32).range(1..=i64::from(ebpkg_spec::registry_api::limits::TOKEN_MAX_EXPIRY_DAYS)))]
        expires: Option<u32>,
    },
    /// Revoke a token by its id or its name: the registry refuses it at once.
    Revoke {
        /// The token's id (`ebpkg token list`) or name.
        token: String,
    },
}

pub fn token(ctx: &Ctx, args: TokenArgs) -> Result<ExitCode> {
    match args.command {
        TokenCommand::List => {
            let listed = ebpkg::ops::token::list(ctx)?;
            if ctx.ui.json {
                return ctx.ui.json(&listed.tokens).map(|()| ExitCode::SUCCESS);
            }
            if listed.tokens.is_empty() {
                ctx.ui.status("Tokens", format!("none live on {}", listed.registry));
            }
            for t in &listed.tokens {
                ctx.ui.out(t.listing_line());
            }
        }
        TokenCommand::Create { name, scopes, packages, expires } => {
            let new = NewToken { name, scopes, packages, expires_in_days: expires };
            let created = ebpkg::ops::token::create(ctx, &new)?;
            if ctx.ui.json {
                return ctx.ui.json(&created.created).map(|()| ExitCode::SUCCESS);
            }
            let t = &created.created.token;
            ctx.ui.status(
                "Created",
                format!(
                    "token {} `{}` on {} ({}); its secret, shown this once, is on standard output",
                    t.id,
                    t.name,
                    created.registry,
                    t.powers()
                ),
            );
            ctx.ui.out(&created.created.secret);
        }
        TokenCommand::Revoke { token } => {
            let revoked = ebpkg::ops::token::revoke(ctx, &token)?;
            if ctx.ui.json {
                return ctx.ui.json(&revoked.token).map(|()| ExitCode::SUCCESS);
            }
            ctx.ui.status(
                "Revoked",
                format!(
                    "token {} `{}` on {}: the registry refuses it from now on",
                    revoked.token.id, revoked.token.name, revoked.registry
                ),
            );
        }
    }
    Ok(ExitCode::SUCCESS)
}

/// Longest token accepted on standard input.
const MAX_TOKEN_BYTES: u64 = 4096;

pub fn login(ctx: &Ctx, args: LoginArgs) -> Result<ExitCode> {
    let with = if args.trusted_publishing {
        LoginWith::TrustedPublishing { oidc_token_file: args.oidc_token_file }
    } else {
        LoginWith::Token(&|url| read_token(url, args.token_stdin))
    };
    print_logged_in(ctx, &ebpkg::ops::account::login(ctx, with)?);
    Ok(ExitCode::SUCCESS)
}

/// The API token: from standard input (--token-stdin, or when it is not a
/// terminal), else asked for on the terminal.
fn read_token(url: &RegistryId, from_stdin: bool) -> Result<String> {
    if !from_stdin && std::io::stdin().is_terminal() {
        return prompt_hidden(&format!("API token for {url}: "));
    }
    let mut line = String::new();
    std::io::stdin()
        .lock()
        .take(MAX_TOKEN_BYTES)
        .read_line(&mut line)
        .context("reading the token from standard input")?;
    Ok(line)
}

fn print_logged_in(ctx: &Ctx, logged_in: &LoggedIn) {
    match logged_in {
        LoggedIn::WithToken { url, login, credentials } => {
            ctx.ui.status("Logged in", format!("to {url} as `{login}`; token saved in {}", credentials.display()))
        }
        LoggedIn::Trusted { url, acting_as, expires_at, packages } => {
            let packages: Vec<&str> = packages.iter().map(|p| p.as_str()).collect();
            ctx.ui.status(
                "Logged in",
                format!(
                    "to {url} by trusted publishing, acting as `{acting_as}`, until {expires_at}: may publish {}",
                    packages.join(", ")
                ),
            );
        }
    }
}

pub fn logout(ctx: &Ctx, _: LogoutArgs) -> Result<ExitCode> {
    print_logged_out(ctx, &ebpkg::ops::account::logout(ctx)?);
    Ok(ExitCode::SUCCESS)
}

fn print_logged_out(ctx: &Ctx, out: &LoggedOut) {
    let (url, path) = (&out.url, out.credentials.display());
    if out.removed {
        ctx.ui.status("Logged out", format!("of {url}; its token is removed from {path}"));
    } else {
        ctx.ui.status("Logged out", format!("of {url} already: {path} holds no token for it"));
    }
    if let Some(source) = &out.token_elsewhere {
        ctx.ui.warn(format!("{source} still gives a token for {url}; remove it there too to stop using it"));
    }
}

/// Reads a line from the terminal with echo off.
pub(crate) fn prompt_hidden(prompt: &str) -> Result<String> {
    let stdin = std::io::stdin();
    let saved = rustix::termios::tcgetattr(&stdin).context("reading the terminal's settings")?;
    let mut quiet = saved.clone();
    quiet.local_modes.remove(rustix::termios::LocalModes::ECHO);
    eprint!("{prompt}");
    let _ = std::io::stderr().flush();
    rustix::termios::tcsetattr(&stdin, rustix::termios::OptionalActions::Now, &quiet).context("turning echo off")?;
    let mut line = String::new();
    let read = stdin.lock().take(MAX_TOKEN_BYTES).read_line(&mut line);
    let _ = rustix::termios::tcsetattr(&stdin, rustix::termios::OptionalActions::Now, &saved);
    eprintln!();
    read.context("reading the token")?;
    Ok(line)
}

/// A package name given on the command line.
fn package_name(text: &str) -> Result<PackageName> {
    PackageName::new(text).map_err(|e| ebpkg::exit::bad_name(text, &e))
}

pub fn owner(ctx: &Ctx, args: OwnerArgs) -> Result<ExitCode> {
    match args.command {
        OwnerCommand::Key(command) => owner_key(ctx, command)?,
        OwnerCommand::TrustedPublisher(command) => trusted_publisher(ctx, command)?,
        OwnerCommand::List { package } => {
            let owners = ebpkg::ops::owner::list(ctx, &package_name(&package)?)?;
            if ctx.ui.json {
                ctx.ui.json(&owners)?;
            } else {
                for o in owners {
                    ctx.ui.out(o.login);
                }
            }
        }
        OwnerCommand::Add { package, users } => {
            ctx.ui.status("Owners", ebpkg::ops::owner::add(ctx, &package_name(&package)?, &users)?);
        }
        OwnerCommand::Remove { package, users } => {
            ctx.ui.status("Owners", ebpkg::ops::owner::remove(ctx, &package_name(&package)?, &users)?);
        }
    }
    Ok(ExitCode::SUCCESS)
}

fn owner_key(ctx: &Ctx, command: OwnerKeyCommand) -> Result<()> {
    match command {
        OwnerKeyCommand::Add { key } => {
            let added = ebpkg::ops::owner::add_key(ctx, &key, &|| crate::commands::keys::passphrase(false))?;
            print_key_change(ctx, "Registered", "with", &added)
        }
        OwnerKeyCommand::Remove { id } => {
            let id = ebpkg_spec::types::KeyId::parse(&id)
                .ok_or_else(|| fail(Failure::Usage, format!("`{id}` is not a key id (44 characters of base64)")))?;
            print_key_change(ctx, "Revoked", "on", &ebpkg::ops::owner::revoke_key(ctx, &id)?)
        }
        OwnerKeyCommand::List => print_publisher_keys(ctx, &ebpkg::ops::owner::keys(ctx)?),
    }
}

fn print_key_change(ctx: &Ctx, verb: &str, preposition: &str, change: &KeyChange) -> Result<()> {
    if ctx.ui.json {
        return ctx.ui.json(&change.key);
    }
    ctx.ui.status(verb, format!("key {} {preposition} {}", change.key.id, change.registry));
    Ok(())
}

fn print_publisher_keys(ctx: &Ctx, keys: &[PublisherKey]) -> Result<()> {
    if ctx.ui.json {
        return ctx.ui.json(&keys);
    }
    for k in keys {
        let state = k.revoked_at.as_ref().map_or_else(|| "active".to_owned(), |at| format!("revoked {at}"));
        ctx.ui.out(format!("{}\t{}\tadded {}\t{state}", k.id, k.owner, k.added_at));
    }
    Ok(())
}

fn trusted_publisher(ctx: &Ctx, command: TrustedPublisherCommand) -> Result<()> {
    let list = match command {
        TrustedPublisherCommand::Add { package, repository, workflow, environment, issuer } => {
            let new = ebpkg_sources::NewTrustedPublisher { issuer, repository, workflow, environment };
            let list = ebpkg::ops::owner::add_trusted_publisher(ctx, &package_name(&package)?, &new)?;
            ctx.ui.status(
                "Trusted",
                format!(
                    "{} ({}) may publish {package} from CI: `ebpkg login --trusted-publishing`",
                    new.repository, new.workflow
                ),
            );
            list
        }
        TrustedPublisherCommand::List { package } => {
            ebpkg::ops::owner::trusted_publishers(ctx, &package_name(&package)?)?
        }
        TrustedPublisherCommand::Remove { package, id } => {
            let msg = ebpkg::ops::owner::remove_trusted_publisher(ctx, &package_name(&package)?, id)?;
            ctx.ui.status("Removed", msg);
            return Ok(());
        }
    };
    print_trusted_publishers(ctx, &list)
}

fn print_trusted_publishers(ctx: &Ctx, list: &[TrustedPublisher]) -> Result<()> {
    if ctx.ui.json {
        return ctx.ui.json(&list);
    }
    for t in list {
        let env = t.identity.environment.as_deref().map(|e| format!(" environment {e}")).unwrap_or_default();
        ctx.ui.out(format!(
            "{:>4}  {} workflow {}{env} from {} (added by {})",
            t.id, t.identity.repository, t.identity.workflow, t.identity.issuer, t.added_by
        ));
    }
    Ok(())
}
