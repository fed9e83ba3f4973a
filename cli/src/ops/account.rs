//! `ebpkg login` and `ebpkg logout`: a registry server's API token, checked and
//! saved in credentials.toml, or removed from it.

use std::path::{Path, PathBuf};

use anyhow::{Context, Result};
use ebpkg_sources::{ErrorKind, HttpRegistry, OpenOptions, RegistryId, RegistryKind};
use ebpkg_spec::PackageName;

use crate::Ctx;
use crate::config::{Credential, CredentialsFile, read_credentials_file};
use crate::exit::{Failure, fail};

/// Longest OIDC token read from a file or the environment.
const MAX_OIDC_TOKEN_BYTES: u64 = 16 * 1024;

/// Where `ebpkg login` gets its token.
pub enum LoginWith<'a> {
    /// An API token, read by this callback (given the registry's URL) once the
    /// registry is known to be a server.
    Token(&'a dyn Fn(&RegistryId) -> Result<String>),
    /// Trusted publishing: the CI job's OIDC token (from this file, else the
    /// environment) exchanged for a short-lived publish token.
    TrustedPublishing { oidc_token_file: Option<PathBuf> },
}

/// Whom a saved token logs in as.
pub enum LoggedIn {
    /// An API token of the user `login`.
    WithToken { url: RegistryId, login: String, credentials: PathBuf },
    /// A token from trusted publishing: it acts as the owner `acting_as` and may
    /// publish `packages` until `expires_at`.
    Trusted { url: RegistryId, acting_as: String, expires_at: String, packages: Vec<PackageName> },
}

/// What a logout did.
pub struct LoggedOut {
    pub url: RegistryId,
    pub credentials: PathBuf,
    /// False when the file held no token for the registry.
    pub removed: bool,
    /// What still gives a token for the registry (the environment, the config
    /// file), when something does.
    pub token_elsewhere: Option<String>,
}

/// The registry of the command (`--registry`), which must be a server: a
/// directory registry has no accounts to `verb`.
fn registry_server(ctx: &Ctx, verb: &str) -> Result<RegistryId> {
    let url = ctx.config.registry.clone();
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

/// Saves a token for the registry server of the command, once the server
/// accepted it.
pub fn login(ctx: &Ctx, with: LoginWith<'_>) -> Result<LoggedIn> {
    let url = registry_server(ctx, "log in to")?;
    match with {
        LoginWith::Token(read) => {
            let token = read(&url)?;
            login_with_token(ctx, url, &token)
        }
        LoginWith::TrustedPublishing { oidc_token_file } => login_trusted(ctx, url, oidc_token_file.as_deref()),
    }
}

fn login_with_token(ctx: &Ctx, url: RegistryId, token: &str) -> Result<LoggedIn> {
    let token = token.trim().to_owned();
    if token.is_empty() {
        return Err(fail(Failure::Usage, "no token given; create one on the registry (`ebpkg-registry token create`)"));
    }
    if token.chars().any(|c| c.is_whitespace() || c.is_control()) {
        return Err(fail(Failure::Usage, "the token has spaces or control characters in it; paste the token alone"));
    }
    let options = OpenOptions {
        token: Some(token.clone()),
        offline: ctx.offline,
        cainfo: ctx.config.cainfo_for(&url),
        ..OpenOptions::default()
    };
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
    Ok(LoggedIn::WithToken { url, login: me.login, credentials: ctx.config.credentials_path.clone() })
}

/// `login --trusted-publishing`: the job's OIDC token exchanged for a publish token.
fn login_trusted(ctx: &Ctx, url: RegistryId, file: Option<&Path>) -> Result<LoggedIn> {
    let options = OpenOptions { offline: ctx.offline, cainfo: ctx.config.cainfo_for(&url), ..OpenOptions::default() };
    let registry = HttpRegistry::open(&url, &options)?;
    let Some(audience) = registry.trusted_publishing_audience()? else {
        return Err(fail(
            Failure::Usage,
            format!("{url} does not do trusted publishing (its config.json names no audience); log in with a token"),
        ));
    };
    let jwt = oidc_token(file, &audience, ctx.config.cainfo.clone())?;
    let minted = registry.exchange_oidc_token(jwt.trim()).map_err(|e| match e.kind() {
        ErrorKind::Http { status: 401 | 403, detail, .. } => {
            fail(Failure::Trust, format!("{url} refused the OIDC token: {detail}; nothing was saved"))
        }
        _ => e.into(),
    })?;
    save_token(ctx, &url, minted.token)?;
    Ok(LoggedIn::Trusted { url, acting_as: minted.acting_as, expires_at: minted.expires_at, packages: minted.packages })
}

/// The CI job's OIDC token: from `file`, else EBPKG_OIDC_TOKEN, else asked of
/// GitHub Actions for `audience`.
fn oidc_token(file: Option<&Path>, audience: &str, cainfo: Option<ebpkg_sources::CaInfo>) -> Result<String> {
    match (file, std::env::var("EBPKG_OIDC_TOKEN").ok()) {
        (Some(path), _) => ebpkg_fs::read_text(path, MAX_OIDC_TOKEN_BYTES)
            .with_context(|| format!("reading the OIDC token from {}", path.display())),
        (None, Some(token)) => Ok(token),
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
            Ok(ebpkg_sources::github_actions_oidc_token(&request_url, &request_token, audience, cainfo)?)
        }
    }
}

fn save_token(ctx: &Ctx, url: &RegistryId, token: String) -> Result<()> {
    let path = &ctx.config.credentials_path;
    let mut file = read_credentials_file(path)?;
    file.registries.insert(url.clone(), Credential { token });
    write_credentials(path, &file)
}

/// Removes the token of the registry server of the command from credentials.toml.
pub fn logout(ctx: &Ctx) -> Result<LoggedOut> {
    let url = registry_server(ctx, "log out of")?;
    let path = &ctx.config.credentials_path;
    let mut file = read_credentials_file(path)?;
    let removed = file.registries.remove(&url).is_some();
    if removed {
        write_credentials(path, &file)?;
    }
    let token_elsewhere = ctx.config.token_elsewhere(&url);
    Ok(LoggedOut { url, credentials: path.clone(), removed, token_elsewhere })
}

/// The file holds secrets: mode 0600 in a 0700 directory, written atomically.
fn write_credentials(path: &Path, file: &CredentialsFile) -> Result<()> {
    if let Some(dir) = path.parent() {
        crate::ops::keys::create_private_dir(dir)?;
    }
    let text = toml::to_string(file).context("writing the credentials")?;
    ebpkg_fs::write_atomic(path, text.as_bytes(), 0o600).with_context(|| format!("writing {}", path.display()))?;
    Ok(())
}
