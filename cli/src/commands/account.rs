//! Commands about who publishes: `login`, `logout`, `owner`.

use std::io::{BufRead, IsTerminal, Read, Write};
use std::os::unix::fs::DirBuilderExt;
use std::process::ExitCode;

use anyhow::{Context, Result};
use clap::{Args, Subcommand};
use ebpkg_sources::{ErrorKind, HttpRegistry, OpenOptions, RegistryKind, RegistryUrl};

use crate::Ctx;
use crate::config::{Credential, read_credentials_file};
use crate::exit::{Failure, fail};

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

/// Longest token accepted on standard input.
const MAX_TOKEN_BYTES: u64 = 4096;

fn http_registry(ctx: &Ctx, verb: &str) -> Result<RegistryUrl> {
    let url =
        RegistryUrl::parse(&ctx.config.registry).with_context(|| format!("registry `{}`", ctx.config.registry))?;
    if url.kind() != RegistryKind::Http {
        return Err(fail(
            Failure::Usage,
            format!(
                "{url} is a directory registry: it has no accounts to {verb}; name a registry server with --registry URL|NAME"
            ),
        ));
    }
    Ok(url)
}

pub fn login(ctx: &Ctx, args: LoginArgs) -> Result<ExitCode> {
    let url = http_registry(ctx, "log in to")?;
    if args.trusted_publishing {
        return login_trusted(ctx, &url, args.oidc_token_file.as_deref());
    }
    let token = if args.token_stdin || !std::io::stdin().is_terminal() {
        let mut line = String::new();
        std::io::stdin()
            .lock()
            .take(MAX_TOKEN_BYTES)
            .read_line(&mut line)
            .context("reading the token from standard input")?;
        line
    } else {
        prompt_hidden(&format!("API token for {url}: "))?
    };
    let token = token.trim().to_owned();
    if token.is_empty() {
        return Err(fail(Failure::Usage, "no token given; create one on the registry (`ebpkg-registry token create`)"));
    }
    if token.chars().any(|c| c.is_whitespace() || c.is_control()) {
        return Err(fail(Failure::Usage, "the token has spaces or control characters in it; paste the token alone"));
    }
    let options = OpenOptions { token: Some(token.clone()), offline: ctx.offline, ..OpenOptions::default() };
    let registry = HttpRegistry::open(&url, &options)?;
    // Checked before it is saved, so a mistyped token is said at once.
    let me = registry.whoami().map_err(|e| match e.kind() {
        ErrorKind::Http { status: 401, detail, .. } => fail(
            Failure::Registry,
            format!(
                "{url} refused the token (401 Unauthorized: {detail}); nothing was saved. Check that it was \
                 copied whole and has not expired or been revoked, or create a new one"
            ),
        ),
        _ => e.into(),
    })?;
    save_token(ctx, &url, token)?;
    ctx.ui.status(
        "Logged in",
        format!("to {url} as `{}`; token saved in {}", me.login, ctx.config.credentials_path.display()),
    );
    Ok(ExitCode::SUCCESS)
}

fn save_token(ctx: &Ctx, url: &RegistryUrl, token: String) -> Result<()> {
    let path = &ctx.config.credentials_path;
    let mut file = read_credentials_file(path)?;
    file.registries.insert(url.to_string(), Credential { token });
    write_credentials(path, &file)
}

/// Longest OIDC token read from a file or the environment.
const MAX_OIDC_TOKEN_BYTES: u64 = 16 * 1024;

/// `login --trusted-publishing`: the job's OIDC token exchanged for a publish token.
fn login_trusted(ctx: &Ctx, url: &RegistryUrl, file: Option<&std::path::Path>) -> Result<ExitCode> {
    let options = OpenOptions { offline: ctx.offline, ..OpenOptions::default() };
    let registry = HttpRegistry::open(url, &options)?;
    let Some(audience) = registry.trusted_publishing_audience()? else {
        return Err(fail(
            Failure::Usage,
            format!("{url} does not do trusted publishing (its config.json names no audience); log in with a token"),
        ));
    };
    let jwt = match (file, std::env::var("EBPKG_OIDC_TOKEN").ok()) {
        (Some(path), _) => ebpkg_fs::read_text(path, MAX_OIDC_TOKEN_BYTES)
            .with_context(|| format!("reading the OIDC token from {}", path.display()))?,
        (None, Some(token)) => token,
        (None, None) => {
            let (Ok(request_url), Ok(request_token)) =
                (std::env::var("ACTIONS_ID_TOKEN_REQUEST_URL"), std::env::var("ACTIONS_ID_TOKEN_REQUEST_TOKEN"))
            else {
                return Err(fail(
                    Failure::Usage,
                    "no OIDC token: give --oidc-token-file or EBPKG_OIDC_TOKEN, or run in a GitHub Actions job with \
                     `permissions: id-token: write`",
                ));
            };
            ebpkg_sources::github_actions_oidc_token(&request_url, &request_token, &audience)?
        }
    };
    let minted = registry.exchange_oidc_token(jwt.trim()).map_err(|e| match e.kind() {
        ErrorKind::Http { status: 401 | 403, detail, .. } => {
            fail(Failure::Trust, format!("{url} refused the OIDC token: {detail}; nothing was saved"))
        }
        _ => e.into(),
    })?;
    save_token(ctx, url, minted.token)?;
    let packages: Vec<&str> = minted.packages.iter().map(|p| p.as_str()).collect();
    ctx.ui.status(
        "Logged in",
        format!(
            "to {url} by trusted publishing, acting as `{}`, until {}: may publish {}",
            minted.acting_as,
            minted.expires_at,
            packages.join(", ")
        ),
    );
    Ok(ExitCode::SUCCESS)
}

pub fn logout(ctx: &Ctx, _: LogoutArgs) -> Result<ExitCode> {
    let url = http_registry(ctx, "log out of")?;
    let path = &ctx.config.credentials_path;
    let mut file = read_credentials_file(path)?;
    if file.registries.remove(url.as_str()).is_some() {
        write_credentials(path, &file)?;
        ctx.ui.status("Logged out", format!("of {url}; its token is removed from {}", path.display()));
    } else {
        ctx.ui.status("Logged out", format!("of {url} already: {} holds no token for it", path.display()));
    }
    if let Some(source) = ctx.config.token_elsewhere(&url) {
        ctx.ui.warn(format!("{source} still gives a token for {url}; remove it there too to stop using it"));
    }
    Ok(ExitCode::SUCCESS)
}

/// The file holds secrets: mode 0600 in a 0700 directory, written atomically.
fn write_credentials(path: &std::path::Path, file: &crate::config::CredentialsFile) -> Result<()> {
    if let Some(dir) = path.parent() {
        // Directories created here are private too (an existing one is left as it is).
        std::fs::DirBuilder::new()
            .recursive(true)
            .mode(0o700)
            .create(dir)
            .with_context(|| format!("creating {}", dir.display()))?;
    }
    let text = toml::to_string(file).context("writing the credentials")?;
    ebpkg_fs::write_atomic(path, text.as_bytes(), 0o600).with_context(|| format!("writing {}", path.display()))?;
    Ok(())
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

fn owner_key(ctx: &Ctx, registry: &dyn ebpkg_sources::Registry, command: OwnerKeyCommand) -> Result<ExitCode> {
    let show = |k: &ebpkg_sources::PublisherKey| {
        let state = k.revoked_at.as_ref().map_or_else(|| "active".to_owned(), |at| format!("revoked {at}"));
        format!("{}\t{}\tadded {}\t{state}", k.id, k.owner, k.added_at)
    };
    match command {
        OwnerKeyCommand::Add { key } => {
            if key.ends_with(".pub") {
                return Err(fail(
                    Failure::Usage,
                    format!(
                        "`{key}` is a public key; registering one needs its private key, to prove you hold it: \
                         pass the `.key` file or the key's name (nothing but the public key is sent)"
                    ),
                ));
            }
            let signing = crate::ops::keys::signing_key(ctx, Some(&key), &|| crate::commands::keys::passphrase(false))?
                .ok_or_else(|| fail(Failure::Usage, format!("no key `{key}`")))?;
            let added = registry.add_key(&signing)?;
            if ctx.ui.json {
                ctx.ui.json(&added)?;
            } else {
                ctx.ui.status("Registered", format!("key {} with {}", added.id, registry.url()));
            }
        }
        OwnerKeyCommand::Remove { id } => {
            let id = ebpkg_spec::types::KeyId::parse(&id)
                .ok_or_else(|| fail(Failure::Usage, format!("`{id}` is not a key id (44 characters of base64)")))?;
            let revoked = registry.revoke_key(&id)?;
            if ctx.ui.json {
                ctx.ui.json(&revoked)?;
            } else {
                ctx.ui.status("Revoked", format!("key {} on {}", revoked.id, registry.url()));
            }
        }
        OwnerKeyCommand::List => {
            let keys = registry.my_keys()?;
            if ctx.ui.json {
                ctx.ui.json(&keys)?;
            } else {
                for k in &keys {
                    ctx.ui.out(show(k));
                }
            }
        }
    }
    Ok(ExitCode::SUCCESS)
}

fn trusted_publisher(
    ctx: &Ctx,
    registry: &dyn ebpkg_sources::Registry,
    command: TrustedPublisherCommand,
) -> Result<ExitCode> {
    let name = |p: &str| ebpkg_spec::PackageName::new(p).map_err(|e| crate::exit::bad_name(p, &e));
    let show = |t: &ebpkg_sources::TrustedPublisher| {
        let env = t.identity.environment.as_deref().map(|e| format!(" environment {e}")).unwrap_or_default();
        format!(
            "{:>4}  {} workflow {}{env} from {} (added by {})",
            t.id, t.identity.repository, t.identity.workflow, t.identity.issuer, t.added_by
        )
    };
    let list = match command {
        TrustedPublisherCommand::Add { package, repository, workflow, environment, issuer } => {
            let new = ebpkg_sources::NewTrustedPublisher { issuer, repository, workflow, environment };
            let list = registry.add_trusted_publisher(&name(&package)?, &new)?;
            ctx.ui.status(
                "Trusted",
                format!(
                    "{} ({}) may publish {package} from CI: `ebpkg login --trusted-publishing`",
                    new.repository, new.workflow
                ),
            );
            list
        }
        TrustedPublisherCommand::List { package } => registry.trusted_publishers(&name(&package)?)?,
        TrustedPublisherCommand::Remove { package, id } => {
            let msg = registry.remove_trusted_publisher(&name(&package)?, id)?;
            ctx.ui.status("Removed", msg);
            return Ok(ExitCode::SUCCESS);
        }
    };
    if ctx.ui.json {
        ctx.ui.json(&list)?;
    } else {
        for t in &list {
            ctx.ui.out(show(t));
        }
    }
    Ok(ExitCode::SUCCESS)
}

pub fn owner(ctx: &Ctx, args: OwnerArgs) -> Result<ExitCode> {
    let regs = ctx.registries()?;
    let registry = regs.open_origin(&regs.default, None)?;
    let name = |p: &str| ebpkg_spec::PackageName::new(p).map_err(|e| crate::exit::bad_name(p, &e));
    match args.command {
        OwnerCommand::Key(command) => return owner_key(ctx, registry.as_ref(), command),
        OwnerCommand::TrustedPublisher(command) => return trusted_publisher(ctx, registry.as_ref(), command),
        OwnerCommand::List { package } => {
            let owners = registry.owners(&name(&package)?)?;
            if ctx.ui.json {
                ctx.ui.json(&owners)?;
            } else {
                for o in owners {
                    ctx.ui.out(o.login);
                }
            }
        }
        OwnerCommand::Add { package, users } => {
            let msg = registry.add_owners(&name(&package)?, &users)?;
            ctx.ui.status("Owners", msg);
        }
        OwnerCommand::Remove { package, users } => {
            let msg = registry.remove_owners(&name(&package)?, &users)?;
            ctx.ui.status("Owners", msg);
        }
    }
    Ok(ExitCode::SUCCESS)
}
