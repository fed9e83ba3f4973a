//! The `ebpkg-registry` command line: run the registry (`serve`), set up its
//! database (`migrate`, `init`), and bootstrap an organisation without SQL
//! (`user create`, `token create`). In the library so that a test binary can
//! also be `ebpkg-registry` (the docs tests run the README's commands verbatim).

use std::process::ExitCode;

use anyhow::{Context, Result, bail};
use std::path::PathBuf;

use crate::{AdminConfig, Config, ConfigArgs, Server, db};
use clap::{CommandFactory, FromArgMatches, Parser, Subcommand};
use ebpkg_spec::registry_api::{NewToken, Scope, limits};

#[derive(Parser)]
#[command(name = "ebpkg-registry", version, about = "The ebpkg registry server", after_help = AFTER_HELP)]
struct Cli {
    #[command(flatten)]
    config: ConfigArgs,
    #[command(subcommand)]
    command: Command,
}

const AFTER_HELP: &str = "\
A registry on a laptop:
  ebpkg-registry --database-url postgres:///ebpkg init --admin alice   # first run: prints alice's token
  ebpkg-registry --database-url postgres:///ebpkg token create --user alice
  ebpkg-registry --database-url postgres:///ebpkg --storage file:///srv/ebpkg serve --listen 127.0.0.1:8080

Every flag can also be set as EBPKG_REGISTRY_<FLAG> or in --config FILE.toml.
Log filter: EBPKG_REGISTRY_LOG (default `info`).";

#[derive(Subcommand)]
enum Command {
    /// First run: apply the migrations, create the administrator (the first user)
    /// and a token for them, printed once, and say what to do next. Run again, it
    /// makes another token and changes nothing else.
    Init {
        /// The first user's login (letters, digits, `-`, `_`; at most 39).
        #[arg(long, value_name = "LOGIN")]
        admin: String,
    },
    /// Apply the database migrations this binary carries.
    Migrate,
    /// Serve the index and the API until SIGTERM or Ctrl-C.
    Serve {
        /// Apply migrations first.
        #[arg(long)]
        migrate: bool,
    },
    /// Users.
    #[command(subcommand)]
    User(UserCommand),
    /// API tokens.
    #[command(subcommand)]
    Token(TokenCommand),
    /// TUF metadata over the index.
    #[command(subcommand)]
    Tuf(TufCommand),
}

#[derive(Subcommand)]
enum TufCommand {
    /// Create the metadata over every index file: root and targets signed with the
    /// offline root key, bins, snapshot and timestamp with the online key (keys
    /// that do not exist are generated). Then serve with --tuf-online-key.
    Init {
        /// An offline key (repeatable: root and targets then need `--threshold` of them).
        #[arg(long = "root-key", value_name = "FILE", required = true)]
        root_keys: Vec<PathBuf>,
        /// How many of the root keys must sign the root and targets roles.
        #[arg(long, default_value_t = 1)]
        threshold: u64,
        /// The online key (generated when missing): it signs the bins, snapshot and
        /// timestamp roles, and `serve --tuf-online-key` re-signs with it on every
        /// publish and yank. Keep it on the server; the root keys stay offline.
        #[arg(long, value_name = "FILE")]
        online_key: PathBuf,
    },
    /// Re-sign the timestamp now (`serve` does it every hour) with --tuf-online-key.
    Refresh,
    /// Replace the offline keys (`--new-root-key`) and/or the online key
    /// (`--new-online-key`; then serve with it). New keys are generated when missing.
    Rotate(ebpkg_tuf::repo::Rotation),
}

#[derive(Subcommand)]
enum UserCommand {
    /// Create a user (letters, digits, `-`, `_`; at most 39).
    Create { login: String },
}

#[derive(Subcommand)]
enum TokenCommand {
    /// List a user's live tokens (neither revoked nor expired): id, name, scopes,
    /// package globs, expiry and last use; never their secrets.
    List {
        #[arg(long)]
        user: String,
    },
    /// Revoke a token by its id (`token list`): refused from the next request on.
    Revoke { id: i64 },
    /// Create a token for a user and print its secret, once.
    Create {
        #[arg(long)]
        user: String,
        /// A name to recognize it by.
        #[arg(long, default_value = "created by ebpkg-registry")]
        name: String,
        /// publish-new, publish-update, yank, change-owners (repeatable); none: every power.
        #[arg(long = "scope", value_parser = Scope::parse_arg)]
        scopes: Vec<Scope>,
        /// Limit to packages matching this glob (repeatable).
        #[arg(long = "package", value_name = "GLOB")]
        packages: Vec<String>,
        /// Expire after this many days (1 to 3650); without it the token never expires.
        #[arg(long, value_name = "DAYS", value_parser = clap::value_parser!(u32).range(1..=i64::from(ebpkg_spec::registry_api::limits::TOKEN_MAX_EXPIRY_DAYS)))]
        expires: Option<u32>,
    },
}

/// The settings every command may read (where the database is, how to log).
const ADMIN_SETTINGS: [&str; 3] = ["config", "database_url", "log_json"];

/// Besides [`ADMIN_SETTINGS`], the settings a command (by its path) reads:
/// `serve` reads them all, and the others are global (`--storage X serve` works)
/// but left out of the other commands' --help, which would otherwise repeat
/// every `serve` flag.
fn settings_read(path: &str) -> &'static [&'static str] {
    match path {
        "init" => &["listen", "public_url", "storage"],
        "tuf refresh" => &["tuf_online_key"],
        _ => &[],
    }
}

/// The command line, with each subcommand's --help listing only the settings it reads.
pub fn command() -> clap::Command {
    let mut command = Cli::command();
    // Global flags reach the subcommands when the command is built; hidden after.
    command.build();
    let settings: Vec<String> =
        command.get_arguments().filter(|a| a.is_global_set()).map(|a| a.get_id().to_string()).collect();
    hide_unread(command, "", &settings)
}

fn hide_unread(command: clap::Command, path: &str, settings: &[String]) -> clap::Command {
    // In place (the order of the arguments and subcommands is what --help shows).
    command.mut_subcommands(|sub| {
        let sub_path = if path.is_empty() { sub.get_name().to_owned() } else { format!("{path} {}", sub.get_name()) };
        if sub_path == "serve" {
            return sub;
        }
        let read = settings_read(&sub_path);
        let sub = sub.mut_args(|arg| {
            let id = arg.get_id().as_str();
            let setting = settings.iter().any(|s| s == id);
            if setting && !ADMIN_SETTINGS.contains(&id) && !read.contains(&id) { arg.hide(true) } else { arg }
        });
        hide_unread(sub, &sub_path, settings)
    })
}

/// Parses the process's arguments and runs the command; the exit code is decided here.
pub fn main() -> ExitCode {
    let matches = command().get_matches();
    let cli = match Cli::from_arg_matches(&matches) {
        Ok(cli) => cli,
        Err(e) => e.exit(),
    };
    init_logs(cli.config.log_json);
    let runtime = match tokio::runtime::Builder::new_multi_thread().enable_all().build() {
        Ok(r) => r,
        Err(e) => {
            eprintln!("error: cannot start the async runtime: {e}");
            return ExitCode::FAILURE;
        }
    };
    match runtime.block_on(run(cli)) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: {e:#}");
            ExitCode::FAILURE
        }
    }
}

fn init_logs(json: bool) {
    let filter = tracing_subscriber::EnvFilter::try_from_env("EBPKG_REGISTRY_LOG")
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("info"));
    // Colours only for a person at a terminal: a log file or collector gets plain text.
    let ansi = std::io::IsTerminal::is_terminal(&std::io::stderr()) && std::env::var_os("NO_COLOR").is_none();
    let builder = tracing_subscriber::fmt().with_env_filter(filter).with_writer(std::io::stderr).with_ansi(ansi);
    if json { builder.json().init() } else { builder.init() }
}

async fn run(cli: Cli) -> Result<()> {
    // Serving needs every setting; administration only the database (and a key).
    let admin = || AdminConfig::load(&cli.config);
    match cli.command {
        Command::Migrate => {
            let config = admin()?;
            let pool = db::pool(&config.database_url, 1)?;
            let applied =
                db::migrate(&pool).await.with_context(|| format!("migrating {}", config.masked_database_url()))?;
            println!("{applied} migration(s) applied; the schema is current");
        }
        Command::Serve { migrate } => serve(Config::load(&cli.config)?, migrate).await?,
        Command::Init { admin: login } => {
            if !db::users::valid_login(&login) {
                bail!(
                    "`{login}` is not a valid user name: letters, digits, `-` and `_`, starting with a letter or digit, at most {}",
                    limits::LOGIN_MAX
                );
            }
            let config = admin()?;
            let pool = db::pool(&config.database_url, 1)?;
            let applied =
                db::migrate(&pool).await.with_context(|| format!("migrating {}", config.masked_database_url()))?;
            eprintln!(
                "database {}: {applied} migration(s) applied; the schema is current",
                config.masked_database_url()
            );
            let user = match db::users::create(&pool, &login).await.context("creating the user")? {
                Some(user) => {
                    eprintln!("created user `{}` (id {})", user.login, user.id);
                    user
                }
                None => {
                    let user = db::users::by_login(&pool, &login)
                        .await
                        .context("looking the user up")?
                        .ok_or_else(|| anyhow::anyhow!("the user `{login}` exists and yet was not found; retry"))?;
                    eprintln!("user `{}` exists already (id {}); making another token", user.login, user.id);
                    user
                }
            };
            let request =
                NewToken { name: "init".into(), scopes: Vec::new(), packages: Vec::new(), expires_in_days: None };
            let created = crate::auth::issue_token(&pool, user.id, &request)
                .await
                .map_err(|e| anyhow::anyhow!("{}", e.detail))?;
            // As `serve` will announce it: flag, environment or file.
            let url = crate::config::public_url(&cli.config)?;
            eprintln!(
                "token {} `init` for `{}` (every power; never expires: keep it as the administrator's and give \
                 publishers narrower ones, step 5); the secret is shown this once, on standard output:",
                created.token.id, user.login
            );
            println!("{}", created.secret);
            // The storage and address already given (flag, environment or file) are
            // the ones to serve with; a placeholder only when none was.
            let serve = if cli.config.storage.is_some() || cli.config.config.is_some() {
                format!("ebpkg-registry serve --public-url {url}")
            } else {
                format!("ebpkg-registry --storage file:///srv/ebpkg-blobs serve --public-url {url}")
            };
            eprintln!(
                "\nNext:\n  \
                 1. serve (with the same database settings): {serve}\n  \
                 2. on the publisher's machine: ebpkg login --registry {url}   (paste the token)\n  \
                 3. a signing key, registered: ebpkg key generate && ebpkg owner key add default --registry {url}\n  \
                 4. publish: ebpkg publish --registry {url} in a package, or ci/publish --registry {url} for a set\n  \
                 5. users: ebpkg registry add NAME {url}; more publishers: ebpkg-registry user create LOGIN, then \
                 ebpkg-registry token create --user LOGIN --scope publish-new --scope publish-update"
            );
        }
        Command::Tuf(TufCommand::Init { root_keys, threshold, online_key }) => {
            let pool = db::pool(&admin()?.database_url, 1)?;
            let count = crate::tuf::init(&pool, &root_keys, threshold, &online_key).await?;
            println!(
                "signed {count} file(s) (index and attestation files); serve with --tuf-online-key {}; users trust /tuf/root.json \
                 (`ebpkg registry add NAME URL --root root.json`); keep {} offline",
                online_key.display(),
                root_keys.iter().map(|k| k.display().to_string()).collect::<Vec<_>>().join(", ")
            );
        }
        Command::Tuf(TufCommand::Rotate(rotation)) => {
            let pool = db::pool(&admin()?.database_url, 1)?;
            crate::tuf::rotate(&pool, rotation).await?;
            println!("TUF keys rotated; clients follow on their next read (serve with the new online key, if any)");
        }
        Command::Tuf(TufCommand::Refresh) => {
            let Some(key) = admin()?.tuf_online_key else { bail!("--tuf-online-key is needed to re-sign") };
            let pool = db::pool(&admin()?.database_url, 1)?;
            if !crate::tuf::refresh(&pool, &key).await? {
                bail!("this registry has no TUF metadata; create it with `ebpkg-registry tuf init`");
            }
            println!("timestamp re-signed");
        }
        Command::User(UserCommand::Create { login }) => {
            if !db::users::valid_login(&login) {
                bail!(
                    "`{login}` is not a valid user name: letters, digits, `-` and `_`, starting with a letter or digit, at most {}",
                    limits::LOGIN_MAX
                );
            }
            let pool = db::pool(&admin()?.database_url, 1)?;
            match db::users::create(&pool, &login).await.context("creating the user")? {
                Some(user) => println!("created user `{}` (id {})", user.login, user.id),
                None => bail!("a user `{login}` exists already"),
            }
        }
        Command::Token(TokenCommand::List { user }) => {
            let pool = db::pool(&admin()?.database_url, 1)?;
            let user = existing_user(&pool, &user).await?;
            let tokens = db::tokens::live_of_user(&pool, user.id).await.context("listing the tokens")?;
            if tokens.is_empty() {
                eprintln!("`{}` has no live token", user.login);
            }
            for t in tokens.iter().map(db::tokens::TokenRow::info) {
                println!("{}", t.listing_line());
            }
        }
        Command::Token(TokenCommand::Revoke { id }) => {
            let pool = db::pool(&admin()?.database_url, 1)?;
            let token = db::tokens::by_id(&pool, id).await.context("looking the token up")?;
            let Some(token) = token.filter(|t| t.revoked_at.is_none()) else {
                bail!("no live token with id {id}; `ebpkg-registry token list --user LOGIN` lists a user's");
            };
            if !db::tokens::revoke(&pool, token.user_id, id).await.context("revoking the token")? {
                bail!("token {id} was revoked meanwhile");
            }
            println!("revoked token {id} `{}` of `{}`: refused from the next request on", token.name, token.login);
        }
        Command::Token(TokenCommand::Create { user, name, scopes, packages, expires }) => {
            let pool = db::pool(&admin()?.database_url, 1)?;
            let user = existing_user(&pool, &user).await?;
            let request = NewToken { name, scopes, packages, expires_in_days: expires };
            let created = crate::auth::issue_token(&pool, user.id, &request)
                .await
                .map_err(|e| anyhow::anyhow!("{}", e.detail))?;
            eprintln!(
                "token {} `{}` for `{}` ({}); the secret is shown this once:",
                created.token.id,
                created.token.name,
                user.login,
                created.token.powers()
            );
            println!("{}", created.secret);
        }
    }
    Ok(())
}

async fn existing_user(pool: &sqlx::PgPool, login: &str) -> Result<db::users::User> {
    match db::users::by_login(pool, login).await.context("looking the user up")? {
        Some(user) => Ok(user),
        None => bail!("no user `{login}`; create it with `ebpkg-registry user create {login}`"),
    }
}

async fn serve(config: Config, migrate: bool) -> Result<()> {
    tracing::info!("configuration:\n{config}");
    let listener = tokio::net::TcpListener::bind(config.listen)
        .await
        .with_context(|| format!("cannot listen on {}", config.listen))?;
    let server = Server::new(config)?;
    if migrate {
        let applied = db::migrate(&server.state().db).await.context("migrating the database")?;
        tracing::info!(applied, "migrations applied");
    }
    match db::schema_is_current(&server.state().db).await {
        Ok(true) => {}
        Ok(false) => bail!("the database schema is not current; run `ebpkg-registry migrate` (or `serve --migrate`)"),
        Err(e) => tracing::warn!(error = %e, "the database is not reachable yet; serving 503s until it is"),
    }
    if let Some(key) = server.state().config.tuf_online_key.clone() {
        // The timestamp lives a day: re-signed every hour, a registry that does
        // not change does not look frozen.
        let pool = server.state().db.clone();
        tokio::spawn(async move {
            let mut tick = tokio::time::interval(std::time::Duration::from_secs(3600));
            loop {
                tick.tick().await;
                if let Err(e) = crate::tuf::refresh(&pool, &key).await {
                    tracing::warn!(error = %e, "re-signing the TUF timestamp failed; will retry");
                }
            }
        });
    }
    tracing::info!(address = %listener.local_addr()?, "serving");
    server.run(listener, shutdown_signal()).await?;
    tracing::info!("stopped");
    Ok(())
}

/// SIGTERM or Ctrl-C.
async fn shutdown_signal() {
    let ctrl_c = async {
        let _ = tokio::signal::ctrl_c().await;
    };
    let term = async {
        match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
            Ok(mut s) => {
                s.recv().await;
            }
            Err(_) => std::future::pending::<()>().await,
        }
    };
    tokio::select! { () = ctrl_c => {}, () = term => {} }
    tracing::info!("shutting down: finishing the requests in flight");
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(args: &[&str]) -> Result<Cli, clap::Error> {
        let args = ["ebpkg-registry", "--database-url", "postgres:///x"].iter().chain(args);
        command().try_get_matches_from(args).and_then(|m| Cli::from_arg_matches(&m))
    }

    /// `tuf rotate` takes the rotation arguments the client's `tuf-rotate` takes
    /// (`ebpkg_tuf::repo::Rotation`), a new key required.
    #[test]
    fn tuf_rotate_takes_the_shared_rotation_arguments() {
        let current = ["tuf", "rotate", "--root-key", "r", "--online-key", "o"];
        let refused = parse(&current).err().unwrap();
        assert_eq!(refused.kind(), clap::error::ErrorKind::MissingRequiredArgument, "{refused}");
        let Command::Tuf(TufCommand::Rotate(rotation)) =
            parse(&[&current[..], &["--new-root-key", "n", "--threshold", "1"]].concat()).unwrap().command
        else {
            panic!("not `tuf rotate`");
        };
        assert_eq!((rotation.root_keys, rotation.new_root_keys), (vec!["r".into()], vec!["n".into()]));
        assert_eq!((rotation.online_key, rotation.new_online_key), ("o".into(), None));
    }
}
