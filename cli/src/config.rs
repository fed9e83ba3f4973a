//! Settings: command-line flags over environment variables over the config file
//! (`$EBPKG_CONFIG`, else `$XDG_CONFIG_HOME/ebpkg/config.toml`, else
//! `~/.config/ebpkg/config.toml`) over defaults.
//!
//! ```toml
//! [registry]
//! default = "file:///srv/ebpkg"           # where dependencies without `registry` come from
//!
//! [registries.corp]                       # named registries: URL and publish token
//! url = "https://ebpkg.corp.example/"
//! token = "…"
//! cainfo = "corp-ca.pem"                  # its CA's certificates (PEM), besides the system's
//!
//! [http]
//! cainfo = "/etc/ssl/corp-ca.pem"         # for every registry ($EBPKG_HTTP_CAINFO wins)
//!
//! [mirrors]                               # fetch a registry's packages from elsewhere
//! "https://registry.ebpkg.dev/" = "file:///srv/mirror"
//!
//! [build]
//! clang = "/usr/bin/clang-16"
//! jobs = 2
//!
//! [paths]
//! cache-dir = "/var/cache/ebpkg"
//! state-dir = "/var/lib/ebpkg"
//! bpffs-root = "/sys/fs/bpf/hike"
//! ```

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use anyhow::{Context, Result};
use ebpkg_build::{ToolRequest, ToolSource};
use ebpkg_sources::{CaInfo, CaInfoSetting, OpenOptions, RegistryId};
use serde::Deserialize;

#[derive(Debug, Default, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
#[schemars(
    title = "ebpkg configuration (config.toml)",
    description = "The user's or the host's settings (`$EBPKG_CONFIG`, `~/.config/ebpkg/config.toml`, `/etc/ebpkg/config.toml`): registries, mirrors, build tools and paths; cli/README.md describes each key."
)]
pub struct ConfigFile {
    #[serde(default)]
    pub registry: RegistrySection,
    #[serde(default)]
    pub registries: BTreeMap<String, NamedRegistry>,
    #[serde(default)]
    pub mirrors: BTreeMap<String, String>,
    #[serde(default)]
    pub build: BuildSection,
    #[serde(default)]
    pub paths: PathsSection,
    #[serde(default)]
    pub http: HttpSection,
}

/// `[http]`: how every registry is reached.
#[derive(Debug, Default, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct HttpSection {
    /// A PEM file of CA certificates trusted besides the system's (relative:
    /// to the config file's directory).
    pub cainfo: Option<PathBuf>,
}

/// A project's own configuration, committed with it: the registries it uses, so
/// that every command works in a new shell and on every machine (as cargo's
/// `.cargo/config.toml` and npm's `.npmrc`). Found in the current directory or
/// the nearest parent that has one; it holds no token.
pub const PROJECT_CONFIG: &str = ".ebpkg/config.toml";

#[derive(Debug, Default, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
#[schemars(
    title = "ebpkg project configuration (.ebpkg/config.toml)",
    description = "A project's own settings, committed with it: the registries it uses (never a token)."
)]
struct ProjectConfigFile {
    #[serde(default)]
    registry: ProjectRegistry,
    #[serde(default)]
    registries: BTreeMap<String, ProjectNamedRegistry>,
}

#[derive(Debug, Default, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
struct ProjectRegistry {
    default: Option<String>,
}

#[derive(Debug, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
struct ProjectNamedRegistry {
    #[serde(deserialize_with = "registry_location")]
    #[schemars(with = "String")]
    url: RegistryId,
}

/// A registry's URL or directory in a configuration file, parsed where the file is
/// read (a bad one is an error at its line there, not later in some command).
fn registry_location<'de, D: serde::Deserializer<'de>>(deserializer: D) -> Result<RegistryId, D::Error> {
    let text = String::deserialize(deserializer)?;
    RegistryId::parse(&text).map_err(serde::de::Error::custom)
}

/// The configuration of the project `dir` is in, if it has one, and what it
/// says: looked for in `dir` and its parents up to the project's root (the
/// nearest directory with an `ebpkg.toml`), never above it, so a directory
/// like `/tmp` cannot configure every project under it. A file another user
/// owns, or can write, is refused (it could point the project elsewhere).
fn project_config(dir: &Path) -> Result<Option<(PathBuf, ProjectConfigFile)>> {
    let Some(root) = dir.ancestors().find(|d| d.join(ebpkg_spec::manifest::MANIFEST_FILE).is_file()) else {
        return Ok(None);
    };
    let path = root.join(PROJECT_CONFIG);
    let meta = match std::fs::symlink_metadata(&path) {
        Ok(meta) => meta,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(anyhow::anyhow!("{}: {e}", path.display())),
    };
    {
        use std::os::unix::fs::MetadataExt;
        let me = rustix::process::geteuid().as_raw();
        if (meta.uid() != me && meta.uid() != 0) || meta.mode() & 0o022 != 0 {
            anyhow::bail!(
                "{}: owned by uid {} with mode {:o}; a project's configuration must be yours (or root's) and writable \
                 by no one else, since it chooses where packages come from. Fix: `chown $(id -u) {}` and \
                 `chmod go-w {}`",
                path.display(),
                meta.uid(),
                meta.mode() & 0o7777,
                path.display(),
                path.display()
            );
        }
    }
    let text = ebpkg_fs::read_text(&path, ebpkg_spec::MAX_TOML_BYTES as u64)?;
    let parsed: ProjectConfigFile = toml::from_str(&text).map_err(|e| {
        let e = e.to_string();
        let hint = if e.contains("`token`") {
            "; a project's configuration is committed with it, so it holds no token: `ebpkg login` keeps tokens"
        } else {
            ""
        };
        anyhow::anyhow!("{}: {}{hint}", path.display(), e.trim_end())
    })?;
    Ok(Some((path, parsed)))
}

/// The registry a user gets without configuring one: a directory under their data home.
pub fn builtin_registry() -> Result<RegistryId> {
    let dir = xdg("XDG_DATA_HOME", ".local/share").join("ebpkg/registry");
    Ok(RegistryId::from_path(&dir)?)
}

#[derive(Debug, Default, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RegistrySection {
    pub default: Option<String>,
    pub token: Option<String>,
}

#[derive(Debug, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct NamedRegistry {
    #[serde(deserialize_with = "registry_location")]
    #[schemars(with = "String")]
    pub url: RegistryId,
    pub token: Option<String>,
    /// As `[http] cainfo`, for this registry only (and instead of it).
    pub cainfo: Option<PathBuf>,
}

#[derive(Debug, Default, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct BuildSection {
    pub clang: Option<PathBuf>,
    pub jobs: Option<usize>,
}

#[derive(Debug, Default, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
pub struct PathsSection {
    pub cache_dir: Option<PathBuf>,
    pub state_dir: Option<PathBuf>,
    pub bpffs_root: Option<PathBuf>,
}

/// The settings every command works with.
#[derive(Debug)]
pub struct Config {
    /// The project's `.ebpkg/config.toml`, when one applies.
    pub project_file: Option<PathBuf>,
    /// The default registry is the one the project's file names.
    pub registry_from_project: bool,
    /// The file the settings came from, if any.
    pub file: Option<PathBuf>,
    /// The default registry.
    pub registry: RegistryId,
    /// Named registries (`--registry NAME` may name one).
    pub registries: BTreeMap<String, NamedRegistry>,
    /// `[registry] token` of the config file, with the registry it is for: the
    /// file's `[registry] default` (never whatever `--registry` names).
    token: Option<(String, RegistryId)>,
    /// Where `ebpkg login` keeps tokens: `credentials.toml` beside the config file.
    pub credentials_path: PathBuf,
    /// Signing keys (`ebpkg key`): `<config dir>/keys/NAME.key|.pub`.
    pub keys_dir: PathBuf,
    /// The user's trust policy: `<config dir>/trust.toml`.
    pub trust_path: PathBuf,
    /// Trusted TUF roots, one directory per registry: `<config dir>/tuf/`.
    pub tuf_dir: PathBuf,
    /// A writer's online TUF key (`EBPKG_TUF_ONLINE_KEY`).
    pub tuf_online_key: Option<PathBuf>,
    /// `EBPKG_TUF_TRUST_CLOCK=1`: see `ebpkg_sources::TufTrust::trust_clock`.
    pub tuf_trust_clock: bool,
    /// Tokens by registry, from the credentials file.
    credentials: BTreeMap<RegistryId, String>,
    /// Extra CA certificates for every registry: `$EBPKG_HTTP_CAINFO`, else
    /// `[http] cainfo` (a registry's own `cainfo` wins: [`Config::cainfo_for`]).
    pub cainfo: Option<CaInfo>,
    /// Original registry → registry to fetch its packages from instead.
    pub mirrors: BTreeMap<RegistryId, RegistryId>,
    /// Where to fetch every other registry's packages from (`[mirrors] "*"`, `$EBPKG_MIRROR`).
    pub mirror_all: Option<RegistryId>,
    /// The tools to build with (`None`: the default name on `PATH`).
    pub tools: ebpkg_build::ToolchainOptions,
    pub jobs: Option<usize>,
    pub cache_dir: PathBuf,
    pub state_dir: PathBuf,
    pub bpffs_root: PathBuf,
}

/// What the command line says, which wins over everything.
#[derive(Debug, Default)]
pub struct Overrides {
    pub registry: Option<String>,
    pub bpffs_root: Option<PathBuf>,
    pub state_dir: Option<PathBuf>,
    /// Where the project is (--manifest-path's directory); else the current directory.
    pub project_dir: Option<PathBuf>,
}

/// The credentials file's name, beside the config file.
pub const CREDENTIALS_FILE: &str = "credentials.toml";

/// `credentials.toml`: `[registries."https://reg.example/"] token = "…"`.
#[derive(Debug, Default, serde::Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CredentialsFile {
    /// By registry (written by its URL, and read by it: a bad one is an error at its line).
    #[serde(default)]
    pub registries: BTreeMap<RegistryId, Credential>,
}

#[derive(Debug, serde::Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Credential {
    pub token: String,
}

pub fn read_credentials_file(path: &Path) -> Result<CredentialsFile> {
    match ebpkg_fs::read_text(path, ebpkg_spec::MAX_TOML_BYTES as u64) {
        Ok(text) => {
            toml::from_str(&text).map_err(|e| anyhow::anyhow!("{}: {}", path.display(), e.to_string().trim_end()))
        }
        Err(e) if e.is_not_found() => Ok(CredentialsFile::default()),
        Err(e) => Err(e.into()),
    }
}

fn read_credentials(path: &Path) -> Result<BTreeMap<RegistryId, String>> {
    Ok(read_credentials_file(path)?.registries.into_iter().map(|(url, c)| (url, c.token)).collect())
}

fn env(name: &str) -> Option<String> {
    std::env::var(name).ok().filter(|v| !v.is_empty())
}

/// A tool named by an environment variable.
fn tool(var: &'static str) -> Option<ToolRequest> {
    env(var).map(|v| ToolRequest { path: PathBuf::from(v), origin: ToolSource::Env(var) })
}

fn home() -> PathBuf {
    env("HOME").map_or_else(|| PathBuf::from("/root"), PathBuf::from)
}

fn xdg(var: &str, fallback: &str) -> PathBuf {
    env(var).map_or_else(|| home().join(fallback), PathBuf::from)
}

impl Config {
    pub fn load(over: Overrides) -> Result<Config> {
        let path = env("EBPKG_CONFIG")
            .map(PathBuf::from)
            .unwrap_or_else(|| xdg("XDG_CONFIG_HOME", ".config").join("ebpkg/config.toml"));
        let (file, cfg) = match ebpkg_fs::read_text(&path, ebpkg_spec::MAX_TOML_BYTES as u64) {
            Ok(text) => {
                let cfg: ConfigFile = toml::from_str(&text)
                    .map_err(|e| anyhow::anyhow!("{}: {}", path.display(), e.to_string().trim_end()))?;
                (Some(path.clone()), cfg)
            }
            Err(e) if e.is_not_found() => (None, ConfigFile::default()),
            Err(e) => return Err(e.into()),
        };
        let project = match over.project_dir.clone().map_or_else(std::env::current_dir, Ok) {
            Ok(dir) => project_config(&dir)?,
            Err(_) => None,
        };
        // A default registry is a configured registry's name, else its location.
        let named_or_parsed = |registries: &BTreeMap<String, NamedRegistry>, text: &str| -> Result<RegistryId> {
            match registries.get(text) {
                Some(named) => Ok(named.url.clone()),
                None => Ok(RegistryId::parse(text)?),
            }
        };
        // The registry `[registry] token` is for: the file's own default.
        let token = match cfg.registry.token {
            Some(token) => {
                let file_default = match &cfg.registry.default {
                    Some(d) => named_or_parsed(&cfg.registries, d)
                        .with_context(|| format!("{}: [registry] default `{d}`", path.display()))?,
                    None => builtin_registry()?,
                };
                Some((token, file_default))
            }
            None => None,
        };
        // The project's registries over the user's: the command line, then the
        // environment, then the project, then the user's file.
        let mut registries = cfg.registries;
        let mirrors = cfg.mirrors;
        let mut project_default = None;
        let project_file = project.map(|(path, p)| {
            for (name, named) in p.registries {
                // The user's own entry for it keeps its token.
                match registries.get(&name) {
                    Some(mine) if mine.url == named.url => {}
                    _ => {
                        registries.insert(name, NamedRegistry { url: named.url, token: None, cainfo: None });
                    }
                }
            }
            project_default = p.registry.default;
            path
        });
        let given = over.registry.or_else(|| env("EBPKG_REGISTRY"));
        // EBPKG_REGISTRY_TOKEN goes to the registry its user chose (the command
        // line, the environment, their file), never to one a project names.
        let registry_from_project = given.is_none() && project_default.is_some();
        // `--registry corp` names a configured registry.
        let registry = match given.or(project_default).or(cfg.registry.default) {
            Some(text) => {
                named_or_parsed(&registries, &text).with_context(|| format!("the default registry `{text}`"))?
            }
            None => builtin_registry()?,
        };
        let (mirrors, mut mirror_all) =
            parse_mirrors(mirrors).with_context(|| format!("{}: [mirrors]", path.display()))?;
        if let Some(all) = env("EBPKG_MIRROR") {
            mirror_all = Some(RegistryId::parse(&all).context("$EBPKG_MIRROR")?);
        }
        let credentials_path =
            path.parent().map_or_else(|| PathBuf::from("credentials.toml"), |d| d.join(CREDENTIALS_FILE));
        let credentials = read_credentials(&credentials_path)?;
        let cainfo = cainfo_settings(&mut registries, cfg.http.cainfo, &path, env(ebpkg_sources::CAINFO_ENV));
        Ok(Config {
            cainfo,
            file,
            project_file,
            registry_from_project,
            registry,
            registries,
            token,
            keys_dir: path.parent().map_or_else(|| PathBuf::from("keys"), |d| d.join("keys")),
            trust_path: path.parent().map_or_else(|| PathBuf::from("trust.toml"), |d| d.join("trust.toml")),
            tuf_dir: path.parent().map_or_else(|| PathBuf::from("tuf"), |d| d.join("tuf")),
            tuf_online_key: env("EBPKG_TUF_ONLINE_KEY").map(PathBuf::from),
            tuf_trust_clock: env("EBPKG_TUF_TRUST_CLOCK").is_some_and(|v| v == "1"),
            credentials_path,
            credentials,
            mirrors,
            mirror_all,
            // $EBPKG_CLANG wins over the file; each remembers where it came from,
            // for the messages about it.
            tools: ebpkg_build::ToolchainOptions {
                clang: tool(ebpkg_build::CLANG_ENV).or(cfg.build.clang.map(ToolRequest::configured)),
                bpftool: tool(ebpkg_build::BPFTOOL_ENV),
            },
            jobs: env("EBPKG_JOBS").and_then(|j| j.parse().ok()).or(cfg.build.jobs),
            cache_dir: env("EBPKG_CACHE_DIR")
                .map(PathBuf::from)
                .or(cfg.paths.cache_dir)
                .unwrap_or_else(|| xdg("XDG_CACHE_HOME", ".cache").join("ebpkg")),
            state_dir: over
                .state_dir
                .or_else(|| env("EBPKG_STATE_DIR").map(PathBuf::from))
                .or(cfg.paths.state_dir)
                .unwrap_or_else(|| PathBuf::from(ebpkg_deploy::DEFAULT_STATE_DIR)),
            bpffs_root: over
                .bpffs_root
                .or_else(|| env("EBPKG_BPFFS_ROOT").map(PathBuf::from))
                .or(cfg.paths.bpffs_root)
                .unwrap_or_else(|| PathBuf::from(hike_runtime::DEFAULT_ROOT)),
        })
    }

    /// Settings from nothing but `dir` and `registry` (the default registry): every
    /// file and directory in `dir` (`config.toml`'s siblings, `cache/`, `state/`,
    /// `bpffs/`), no configuration file, environment or project configuration read.
    /// For callers of the library that must not see the user's (tests, benchmarks).
    pub fn isolated(dir: &Path, registry: RegistryId) -> Config {
        Config {
            file: None,
            project_file: None,
            registry_from_project: false,
            registry,
            registries: BTreeMap::new(),
            token: None,
            credentials_path: dir.join(CREDENTIALS_FILE),
            keys_dir: dir.join("keys"),
            trust_path: dir.join("trust.toml"),
            tuf_dir: dir.join("tuf"),
            tuf_online_key: None,
            tuf_trust_clock: false,
            credentials: BTreeMap::new(),
            cainfo: None,
            mirrors: BTreeMap::new(),
            mirror_all: None,
            tools: ebpkg_build::ToolchainOptions::default(),
            jobs: None,
            cache_dir: dir.join("cache"),
            state_dir: dir.join("state"),
            bpffs_root: dir.join("bpffs"),
        }
    }

    /// The registry to fetch a registry's packages from (a mirror, when one is set).
    pub fn fetch_url<'a>(&'a self, registry: &'a RegistryId) -> &'a RegistryId {
        self.mirrors.get(registry).or(self.mirror_all.as_ref()).unwrap_or(registry)
    }

    /// The token for a registry: `EBPKG_REGISTRY_TOKEN` (for the registry this
    /// command works with, `--registry`, only: never sent to a registry a
    /// dependency names), else what `ebpkg login` stored for it, else the config
    /// file's (`[registries.NAME] token`, or `[registry] token` for the file's
    /// `[registry] default`).
    pub fn token_for(&self, url: &RegistryId) -> Option<String> {
        self.token_given(url, env("EBPKG_REGISTRY_TOKEN"))
    }

    /// [`Config::token_for`], with `EBPKG_REGISTRY_TOKEN`'s value given.
    fn token_given(&self, url: &RegistryId, env_token: Option<String>) -> Option<String> {
        env_token
            .filter(|_| self.registry == *url && !self.registry_from_project)
            .or_else(|| self.credentials.get(url).cloned())
            .or_else(|| self.registries.values().find(|r| r.url == *url).and_then(|r| r.token.clone()))
            .or_else(|| self.token.as_ref().filter(|(_, for_url)| for_url == url).map(|(token, _)| token.clone()))
    }

    /// Where a token for `url` comes from other than the credentials file (for
    /// `ebpkg logout` to say), if anywhere.
    pub fn token_elsewhere(&self, url: &RegistryId) -> Option<String> {
        self.token_elsewhere_given(url, env("EBPKG_REGISTRY_TOKEN"))
    }

    fn token_elsewhere_given(&self, url: &RegistryId, env_token: Option<String>) -> Option<String> {
        let file = || self.file.as_ref().map_or_else(|| "the config file".to_owned(), |f| f.display().to_string());
        if env_token.is_some() && self.registry == *url && !self.registry_from_project {
            Some("EBPKG_REGISTRY_TOKEN".to_owned())
        } else if let Some((name, _)) = self.registries.iter().find(|(_, r)| r.url == *url && r.token.is_some()) {
            Some(format!("[registries.{name}] token in {}", file()))
        } else if self.token.as_ref().is_some_and(|(_, for_url)| for_url == url) {
            Some(format!("[registry] token in {}", file()))
        } else {
            None
        }
    }

    /// How to open the registry at `url`.
    pub fn open_options(&self, url: &RegistryId, offline: bool) -> OpenOptions {
        OpenOptions {
            token: self.token_for(url),
            cache_dir: Some(self.cache_dir.clone()),
            offline,
            upload_progress: None,
            tuf: self.tuf_trust(url),
            tuf_online_key: self.tuf_online_key.clone(),
            deadlines: ebpkg_sources::Deadlines::from_env(),
            cainfo: self.cainfo_for(url),
        }
    }

    /// The extra CA certificates for the registry at `url`: its own
    /// `[registries.NAME] cainfo`, else `$EBPKG_HTTP_CAINFO`, else `[http] cainfo`.
    pub fn cainfo_for(&self, url: &RegistryId) -> Option<CaInfo> {
        let file = || self.file.clone().unwrap_or_default();
        self.registries
            .iter()
            .find(|(_, r)| r.cainfo.is_some() && r.url == *url)
            .and_then(|(name, r)| {
                let setting = CaInfoSetting::Registry { name: name.clone(), file: file() };
                r.cainfo.clone().map(|path| CaInfo { path, setting })
            })
            .or_else(|| self.cainfo.clone())
    }

    /// Where the trusted TUF root of the registry at `url` is kept (whether or
    /// not there is one): `<config dir>/tuf/<16 hex digits of the URL's SHA-256>/root.json`.
    pub fn tuf_root_path(&self, url: &RegistryId) -> PathBuf {
        self.tuf_dir.join(registry_id(url)).join("root.json")
    }

    /// The TUF trust configured for `url` (`ebpkg registry add … --root`), if any.
    pub fn tuf_trust(&self, url: &RegistryId) -> Option<ebpkg_sources::TufTrust> {
        let root = self.tuf_root_path(url);
        root.is_file().then(|| ebpkg_sources::TufTrust {
            root,
            datastore: self.cache_dir.join("tuf").join(registry_id(url)),
            trust_clock: self.tuf_trust_clock,
        })
    }

    pub fn cache_dir(&self) -> &Path {
        &self.cache_dir
    }
}

/// The CA files the config file `file` names: each registry's (made absolute
/// in place) and the one for every registry, the environment's (`env_path`)
/// over the file's `[http] cainfo`. A relative path in the file is beside the
/// file, whatever the current directory (one in the environment is not).
fn cainfo_settings(
    registries: &mut BTreeMap<String, NamedRegistry>,
    http: Option<PathBuf>,
    file: &Path,
    env_path: Option<String>,
) -> Option<CaInfo> {
    let beside = |p: PathBuf| file.parent().map_or_else(|| p.clone(), |dir| dir.join(&p));
    for named in registries.values_mut() {
        named.cainfo = named.cainfo.take().map(beside);
    }
    match (env_path, http) {
        (Some(path), _) => Some(CaInfo { path: PathBuf::from(path), setting: CaInfoSetting::Env }),
        (None, Some(path)) => {
            Some(CaInfo { path: beside(path), setting: CaInfoSetting::Http { file: file.to_owned() } })
        }
        (None, None) => None,
    }
}

/// `[mirrors]`: each registry's mirror, and the one for every other registry (`"*"`).
fn parse_mirrors(text: BTreeMap<String, String>) -> Result<(BTreeMap<RegistryId, RegistryId>, Option<RegistryId>)> {
    let mut mirrors = BTreeMap::new();
    let mut all = None;
    for (origin, mirror) in text {
        let to = RegistryId::parse(&mirror).with_context(|| format!("the mirror of `{origin}`"))?;
        match origin.as_str() {
            "*" => all = Some(to),
            _ => {
                mirrors.insert(RegistryId::parse(&origin).with_context(|| format!("`{origin}`"))?, to);
            }
        }
    }
    Ok((mirrors, all))
}

/// A short, file-name-safe name for a registry URL.
fn registry_id(url: &RegistryId) -> String {
    use sha2::Digest;
    hex::encode(&sha2::Sha256::digest(url.as_str().as_bytes())[..8])
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    /// The checked-in JSON Schemas of the two configuration files, under
    /// `manifest-spec/schemas/` with the others, as the types that read them
    /// generate them; regenerate with `EBPKG_BLESS=1 cargo test -p ebpkg --lib config::`.
    #[test]
    fn the_configuration_schemas_are_up_to_date_and_hold_what_ebpkg_writes_and_documents() {
        let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../manifest-spec/schemas");
        let generated = [
            ("config.toml.schema.json", ebpkg_spec::schema::render_toml::<ConfigFile>()),
            ("project-config.toml.schema.json", ebpkg_spec::schema::render_toml::<ProjectConfigFile>()),
        ];
        for (name, text) in &generated {
            if std::env::var_os("EBPKG_BLESS").is_some() {
                std::fs::write(dir.join(name), text).unwrap();
            }
            assert_eq!(
                &std::fs::read_to_string(dir.join(name)).unwrap_or_default(),
                text,
                "{name} is out of date: run `EBPKG_BLESS=1 cargo test -p ebpkg --lib config::`"
            );
        }
        let validator = |name: &str| {
            let schema: serde_json::Value =
                serde_json::from_str(&std::fs::read_to_string(dir.join(name)).unwrap()).unwrap();
            let mut schemas = boon::Schemas::new();
            let mut compiler = boon::Compiler::new();
            compiler.enable_format_assertions();
            compiler.add_resource(name, schema).unwrap();
            let index = compiler.compile(name, &mut schemas).unwrap();
            move |text: &str| {
                let value: serde_json::Value = toml::from_str(text).unwrap();
                schemas.validate(&value, index).map_err(|e| format!("{e:#}"))
            }
        };
        let config = validator("config.toml.schema.json");
        // The example this module documents (every section), and a file as
        // `ebpkg tuf trust --name` leaves it.
        let example: String = include_str!("config.rs")
            .lines()
            .skip_while(|l| *l != "//! ```toml")
            .skip(1)
            .take_while(|l| *l != "//! ```")
            .map(|l| format!("{}\n", l.trim_start_matches("//!").trim_start()))
            .collect();
        for text in [example.as_str(), "[registries.corp]\nurl = \"https://ebpkg.corp.example/\"\n"] {
            toml::from_str::<ConfigFile>(text).unwrap();
            config(text).unwrap_or_else(|e| panic!("{e}\n{text}"));
        }
        for wrong in
            ["[registry]\nurl = \"x\"\n", "[registries.corp]\ntoken = \"t\"\n", "[build]\njobs = \"2\"\n", "[path]\n"]
        {
            assert!(toml::from_str::<ConfigFile>(wrong).is_err(), "ebpkg reads {wrong:?}");
            assert!(config(wrong).is_err(), "the schema accepts {wrong:?}");
        }
        let project = validator("project-config.toml.schema.json");
        let written =
            "# The registry this project's dependencies come from.\n[registry]\ndefault = \"https://r.example/\"\n";
        for text in [written, "[registries.corp]\nurl = \"https://ebpkg.corp.example/\"\n"] {
            toml::from_str::<ProjectConfigFile>(text).unwrap();
            project(text).unwrap_or_else(|e| panic!("{e}\n{text}"));
        }
        for wrong in ["[registries.corp]\nurl = \"u\"\ntoken = \"t\"\n", "[registry]\ntoken = \"t\"\n"] {
            assert!(toml::from_str::<ProjectConfigFile>(wrong).is_err(), "ebpkg reads {wrong:?}");
            assert!(project(wrong).is_err(), "the schema accepts {wrong:?}");
        }
    }

    fn config(registry: &str, file_token: Option<(&str, &str)>) -> Config {
        let mut registries = BTreeMap::new();
        registries.insert(
            "corp".to_owned(),
            NamedRegistry { url: url("https://corp.example"), token: Some("c".into()), cainfo: None },
        );
        let mut credentials = BTreeMap::new();
        credentials.insert(url("https://login.example/"), "l".to_owned());
        Config {
            file: None,
            project_file: None,
            registry_from_project: false,
            registry: url(registry),
            registries,
            token: file_token.map(|(t, u)| (t.to_owned(), url(u))),
            credentials_path: PathBuf::from("credentials.toml"),
            keys_dir: PathBuf::from("keys"),
            trust_path: PathBuf::from("trust.toml"),
            tuf_dir: PathBuf::from("tuf"),
            tuf_online_key: None,
            tuf_trust_clock: false,
            credentials,
            cainfo: None,
            mirrors: BTreeMap::new(),
            mirror_all: None,
            tools: ebpkg_build::ToolchainOptions::default(),
            jobs: None,
            cache_dir: PathBuf::new(),
            state_dir: PathBuf::new(),
            bpffs_root: PathBuf::new(),
        }
    }

    fn url(u: &str) -> RegistryId {
        RegistryId::parse(u).unwrap()
    }

    /// EBPKG_REGISTRY_TOKEN, then `ebpkg login`'s, then the config file's; each
    /// only for the registry it is for.
    #[test]
    fn tokens_go_only_to_their_registry_in_order() {
        let c = config("https://login.example", Some(("f", "https://file.example/")));
        let env = || Some("e".to_owned());
        assert_eq!(c.token_given(&url("https://login.example/"), env()).as_deref(), Some("e"));
        assert_eq!(c.token_given(&url("https://login.example/"), None).as_deref(), Some("l"));
        // The environment's token is for the command's registry, not one a
        // dependency names.
        assert_eq!(c.token_given(&url("https://corp.example/"), env()).as_deref(), Some("c"));
        assert_eq!(c.token_given(&url("https://elsewhere.example/"), env()), None);
        // `[registry] token` is for the file's `[registry] default`, whatever
        // --registry says.
        assert_eq!(c.token_given(&url("https://file.example/"), None).as_deref(), Some("f"));
        let c = config("https://evil.example/", Some(("f", "https://file.example/")));
        assert_eq!(c.token_given(&url("https://evil.example/"), None), None);
        let elsewhere = |u: &str, env: Option<String>| c.token_elsewhere_given(&url(u), env);
        assert_eq!(elsewhere("https://file.example/", None).as_deref(), Some("[registry] token in the config file"));
        assert_eq!(
            elsewhere("https://corp.example/", None).as_deref(),
            Some("[registries.corp] token in the config file")
        );
        assert_eq!(elsewhere("https://evil.example/", env()).as_deref(), Some("EBPKG_REGISTRY_TOKEN"));
        assert_eq!(elsewhere("https://login.example/", env()), None);
        // A registry a project's file names gets the environment's token only
        // if the user named it too: a checked-out project cannot collect it.
        let mut c = config("https://evil.example/", None);
        c.registry_from_project = true;
        assert_eq!(c.token_given(&url("https://evil.example/"), Some("e".to_owned())), None);
    }

    /// `[registries.NAME] cainfo` for its registry, else `$EBPKG_HTTP_CAINFO`,
    /// else `[http] cainfo`; relative paths in the file are beside it.
    #[test]
    fn ca_files_apply_per_registry_then_env_then_file() {
        let file: ConfigFile = toml::from_str(
            "[http]\ncainfo = \"all.pem\"\n[registries.corp]\nurl = \"https://corp.example\"\ncainfo = \"/etc/corp.pem\"\n\
             [registries.lab]\nurl = \"https://lab.example\"\ncainfo = \"lab/ca.pem\"\n",
        )
        .unwrap();
        let path = Path::new("/home/u/.config/ebpkg/config.toml");
        let mut registries = file.registries;
        let global = cainfo_settings(&mut registries, file.http.cainfo.clone(), path, None).unwrap();
        assert_eq!(global.path, Path::new("/home/u/.config/ebpkg/all.pem"));
        assert_eq!(global.setting.to_string(), "[http] cainfo in /home/u/.config/ebpkg/config.toml");
        let env = cainfo_settings(&mut BTreeMap::new(), file.http.cainfo, path, Some("rel/env.pem".into())).unwrap();
        assert_eq!((env.path.as_path(), &env.setting), (Path::new("rel/env.pem"), &CaInfoSetting::Env));

        let mut c = config("https://corp.example", None);
        c.file = Some(path.to_owned());
        c.registries = registries;
        c.cainfo = Some(env);
        let corp = c.cainfo_for(&url("https://corp.example/")).unwrap();
        assert_eq!(corp.path, Path::new("/etc/corp.pem"));
        assert_eq!(corp.setting.to_string(), "[registries.corp] cainfo in /home/u/.config/ebpkg/config.toml");
        let lab = c.cainfo_for(&url("https://lab.example/")).unwrap();
        assert_eq!(lab.path, Path::new("/home/u/.config/ebpkg/lab/ca.pem"));
        assert_eq!(c.cainfo_for(&url("https://other.example/")).unwrap().setting, CaInfoSetting::Env);
        assert_eq!(c.open_options(&url("https://corp.example/"), false).cainfo, Some(corp));
        c.cainfo = None;
        assert_eq!(c.cainfo_for(&url("https://other.example/")), None);
        assert!(toml::from_str::<ConfigFile>("[http]\ncafile = \"x\"\n").is_err(), "unknown keys refused");
    }

    /// Registries are read with the file that names them: a bad one is an error at
    /// its line, and every spelling of one is the same registry.
    #[test]
    fn registries_are_read_with_the_configuration() {
        let e = toml::from_str::<ConfigFile>("[registries.corp]\nurl = \"https://me:pw@corp.example/\"\n")
            .unwrap_err()
            .to_string();
        assert!(e.contains("line 2") && e.contains("it contains credentials"), "{e}");
        let file: ConfigFile = toml::from_str("[registries.corp]\nurl = \"https://Corp.example\"\n").unwrap();
        assert_eq!(file.registries["corp"].url, url("https://corp.example/"));
        let credentials: CredentialsFile =
            toml::from_str("[registries.\"https://login.example\"]\ntoken = \"t\"\n").unwrap();
        assert_eq!(credentials.registries.keys().collect::<Vec<_>>(), [&url("https://login.example/")]);
        assert_eq!(toml::to_string(&credentials).unwrap(), "[registries.\"https://login.example/\"]\ntoken = \"t\"\n");
        let e = toml::from_str::<CredentialsFile>("[registries.\"./reg\"]\ntoken = \"t\"\n").unwrap_err().to_string();
        assert!(e.contains("line 1") && e.contains("`./reg` is not a registry URL"), "{e}");
    }

    /// `[mirrors]` names registries in any spelling; `"*"` stands in for every other.
    #[test]
    fn mirrors_are_found_whatever_the_spelling() {
        let text = BTreeMap::from([
            ("https://registry.example".to_owned(), "/srv/mirror".to_owned()),
            ("*".to_owned(), "file:///srv/all".to_owned()),
        ]);
        let (mirrors, all) = parse_mirrors(text).unwrap();
        let mut c = config("https://registry.example/", None);
        (c.mirrors, c.mirror_all) = (mirrors, all);
        assert_eq!(c.fetch_url(&url("https://registry.example/")).as_str(), "file:///srv/mirror/");
        assert_eq!(c.fetch_url(&url("https://other.example")).as_str(), "file:///srv/all/");
        c.mirror_all = None;
        assert_eq!(c.fetch_url(&url("https://other.example")).as_str(), "https://other.example/");
        let e = parse_mirrors(BTreeMap::from([("gopher://x".to_owned(), "/srv/m".to_owned())])).unwrap_err();
        assert!(format!("{e:#}").starts_with("`gopher://x`: `gopher://x` uses the scheme `gopher:`"), "{e:#}");
    }
}
