//! The `ebpkg` command. Commands are thin (`commands/`): they parse arguments,
//! call the operation of the `ebpkg` library that does the work (`ops/`), and
//! print; this file decides the exit code.

/// Resolution and index reading allocate and free hundreds of thousands of small
/// values (a 10,000-package registry: 200,000 index lines); glibc's allocator
/// spent more time on them than the parsing did (bench/resolve.md). Built without
/// transparent huge pages (`no_thp`): a command lives for a fraction of a second
/// and touches a few tens of MB, and on a virtual machine whose host takes freed
/// memory back, having each fresh 2 MB page zeroed whole made a warm 10,000-package
/// resolution take about twice as long (185 ms against 107, median of 10, run on
/// an idle machine: bench/resolve.md).
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

mod commands;

use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Parser, Subcommand, ValueEnum};

use ebpkg::exit::{self, Failure};
use ebpkg::{Ctx, config, ui};

const AFTER_HELP: &str = "\
Getting started:
  ebpkg init                         make this directory a chain project
  ebpkg add net basic                depend on packages of the registry
  $EDITOR chains/main.eclat          write the chain
  sudo ebpkg install --set DEVNAME=eth0

Exit codes:
  0 success          1 bad input (manifest, script, archive)   2 bad usage
  3 no resolution    4 ebpkg.lock would change under --locked  5 kernel refused (verifier, attach)
  6 registry/cache   7 environment (root, bpffs, clang, BTF)   8 `ebpkg test` cases failed
  9 a HIKe VM limit (no free program or chain id, chain calls too deep)
 10 a signature or the trust policy refused a package
 11 a shipped object is not what its source builds to (verify --rebuild, prebuilt = \"rebuilt\")
 12 a shipped object could not be rebuilt to check it (the compiler it names is missing)

Environment: EBPKG_CONFIG, EBPKG_REGISTRY, EBPKG_REGISTRY_TOKEN, EBPKG_MIRROR, EBPKG_CACHE_DIR,
EBPKG_STATE_DIR, EBPKG_BPFFS_ROOT, EBPKG_CLANG, EBPKG_JOBS, EBPKG_HTTP_DEADLINE and EBPKG_DOWNLOAD_DEADLINE
(seconds), EBPKG_HTTP_CAINFO (a PEM file of CA certificates trusted besides the system's), EBPKG_TUF_TRUST_CLOCK=1 (a time service keeps this clock: see docs/SECURITY.md), EBPKG_LOG
(tracing filter).";

#[derive(Parser)]
#[command(
    name = "ebpkg",
    version,
    about = "The package manager for eBPF: HIKe programs, loaders and chains",
    after_help = AFTER_HELP
)]
struct Cli {
    /// More output (-vv for debug logs).
    #[arg(short, long, action = clap::ArgAction::Count, global = true)]
    verbose: u8,
    /// Only errors.
    #[arg(short, long, global = true)]
    quiet: bool,
    /// When to use colours.
    #[arg(long, value_enum, default_value_t = Color::Auto, global = true)]
    color: Color,
    /// Machine-readable output (JSON) on stdout.
    #[arg(long, global = true)]
    json: bool,
    /// Use only what is local: the cache (archives, registry servers' index files) and file:// registries.
    #[arg(long, global = true)]
    offline: bool,
    /// Fail if ebpkg.lock would have to change.
    #[arg(long, global = true)]
    locked: bool,
    /// --locked and --offline.
    #[arg(long, global = true)]
    frozen: bool,
    /// Trust the signing key of a package no key is trusted for yet, and record
    /// it in the user's trust.toml (trust on first use). Never a changed key.
    #[arg(long, global = true)]
    trust_new_keys: bool,
    /// The default registry (a URL, a path, or the name of one in the config file).
    #[arg(long, global = true, value_name = "URL")]
    registry: Option<String>,
    /// The HIKe root in bpffs [env: EBPKG_BPFFS_ROOT] [default: /sys/fs/bpf/hike].
    #[arg(long, global = true, value_name = "DIR")]
    bpffs_root: Option<PathBuf>,
    /// Where deployments are recorded [env: EBPKG_STATE_DIR] [default: /var/lib/ebpkg].
    #[arg(long, global = true, value_name = "DIR")]
    state_dir: Option<PathBuf>,
    /// Look interfaces up in this network namespace (as `ip -n NAME`).
    #[arg(long, global = true, value_name = "NAME")]
    netns: Option<String>,
    /// The project's ebpkg.toml (default: found from the current directory up).
    #[arg(long, global = true, value_name = "PATH")]
    manifest_path: Option<PathBuf>,
    #[command(subcommand)]
    command: Command,
}

#[derive(Clone, Copy, ValueEnum)]
enum Color {
    Auto,
    Always,
    Never,
}

#[derive(Subcommand)]
enum Command {
    /// Create a new package in a new directory.
    New(commands::new::NewArgs),
    /// Make the current directory a package.
    Init(commands::new::InitArgs),
    /// Add dependencies to ebpkg.toml.
    Add(commands::edit::AddArgs),
    /// Remove dependencies from ebpkg.toml.
    Remove(commands::edit::RemoveArgs),
    /// Resolve, fetch, build, verify, load and attach the project's chains — all or nothing.
    Install(commands::install::InstallArgs),
    /// Move dependencies in ebpkg.lock to their newest allowed versions.
    Update(commands::lock::UpdateArgs),
    /// Resolve the dependencies and write ebpkg.lock.
    Lock(commands::lock::LockArgs),
    /// Resolve the dependencies and download them into the cache (for offline use).
    Fetch(commands::lock::FetchArgs),
    /// Show the dependency tree.
    Tree(commands::lock::TreeArgs),
    /// Search the registry.
    Search(commands::registry::SearchArgs),
    /// Show a package of the registry.
    Info(commands::registry::InfoArgs),
    /// Build the package's programs and loaders (CO-RE objects for the running kernel).
    Build(commands::build::BuildArgs),
    /// Run the package's tests (tests/*.test.toml) in the kernel with BPF_PROG_TEST_RUN.
    Test(commands::test::TestArgs),
    /// Pack the package and publish it to a registry.
    Publish(commands::registry::PublishArgs),
    /// Mark a published version as not to be used by new resolutions (or undo it).
    Yank(commands::registry::YankArgs),
    /// Put a published version through this kernel's verifier and sign what it said (a kernel verification attestation).
    Attest(commands::attest::AttestArgs),
    /// Check published versions: rebuild the objects they ship from their sources and compare the bytes.
    Verify(commands::verify::VerifyArgs),
    /// Save an API token for a registry server (in credentials.toml, mode 0600).
    Login(commands::account::LoginArgs),
    /// Forget the saved token of a registry server.
    Logout(commands::account::LogoutArgs),
    /// List, add or remove the owners of a package, or your publisher keys, on a registry server.
    Owner(commands::account::OwnerArgs),
    /// List, create or revoke your API tokens on a registry server.
    Token(commands::account::TokenArgs),
    /// Create and show signing keys (cosign-compatible).
    Key(commands::keys::KeyArgs),
    /// Say whose keys may sign which packages, which may be unsigned, which keys are revoked.
    Trust(commands::keys::TrustArgs),
    /// Show deployments: packages, program and chain ids, attachments, counters.
    Status(commands::deployments::StatusArgs),
    /// Remove a deployment: attachments, loaders, chains, and programs nothing else uses.
    Uninstall(commands::deployments::UninstallArgs),
    /// Install an earlier generation of a deployment again (its exact objects, chains and parameters).
    Rollback(commands::deployments::RollbackArgs),
    /// Check that this machine can build and load HIKe packages, and explain what is missing.
    Doctor(commands::doctor::DoctorArgs),
    /// Write a file:// registry holding exactly the packages of ebpkg.lock (for air-gapped sites).
    Mirror(commands::registry::MirrorArgs),
    /// Name registries, trust a registry's TUF root, write TUF metadata for a directory registry.
    Registry(commands::tuf::RegistryArgs),
    /// Manage the download and build cache.
    Cache(commands::cache::CacheArgs),
    /// Print a shell completion script (bash, zsh, fish, elvish, powershell).
    Completions(commands::docs::CompletionsArgs),
    /// Print the manual page, or write one per command into a directory.
    Man(commands::docs::ManArgs),
    /// Check and compile chain scripts.
    Chain(commands::chain::ChainArgs),
}

fn main() -> ExitCode {
    // Everything ebpkg writes (state, cache, SDK headers, registries) must not be
    // writable by other users whatever the caller's umask: root acts on it later.
    let umask = rustix::process::umask(rustix::fs::Mode::empty());
    rustix::process::umask(umask | rustix::fs::Mode::from_raw_mode(0o022));
    let cli = match Cli::try_parse() {
        Ok(cli) => cli,
        Err(e) => {
            let _ = e.print();
            return ExitCode::from(if e.use_stderr() { Failure::Usage as u8 } else { 0 });
        }
    };
    let level = match (cli.quiet, cli.verbose) {
        (true, _) => "error",
        (false, 0) => "warn",
        (false, 1) => "info",
        (false, _) => "debug",
    };
    let color = match cli.color {
        Color::Always => true,
        Color::Never => false,
        Color::Auto => std::io::IsTerminal::is_terminal(&std::io::stderr()) && std::env::var_os("NO_COLOR").is_none(),
    };
    // The TLS verifier logs each certificate it refuses at ERROR, before ebpkg's
    // own error says the same with what to do: kept for -vv.
    let level = if level == "debug" { level.to_owned() } else { format!("{level},rustls_platform_verifier=off") };
    tracing_subscriber::fmt()
        .with_env_filter(tracing_subscriber::EnvFilter::try_from_env("EBPKG_LOG").unwrap_or_else(|_| level.into()))
        .with_writer(std::io::stderr)
        .with_ansi(color)
        .without_time()
        .init();
    let ui = ui::Ui::new(cli.json, cli.quiet, cli.verbose, color);
    let overrides = config::Overrides {
        registry: cli.registry,
        bpffs_root: cli.bpffs_root,
        state_dir: cli.state_dir,
        // The project's own configuration is looked for from the project.
        project_dir: cli.manifest_path.as_deref().and_then(|m| m.parent()).map(std::path::Path::to_path_buf),
    };
    let result = config::Config::load(overrides).and_then(|config| {
        let ctx = Ctx {
            ui: ui.clone(),
            config,
            offline: cli.offline || cli.frozen,
            locked: cli.locked || cli.frozen,
            trust_new_keys: cli.trust_new_keys,
            netns: cli.netns,
            manifest_path: cli.manifest_path,
            cache_checked: std::sync::OnceLock::new(),
            loaded: Default::default(),
        };
        run(&ctx, cli.command)
    });
    match result {
        Ok(code) => code,
        Err(e) => {
            ui::stderr(&format!("{}\n", exit::render(&e, ui.color)));
            ExitCode::from(exit::failure_of(&e) as u8)
        }
    }
}

fn run(ctx: &Ctx, command: Command) -> anyhow::Result<ExitCode> {
    match command {
        Command::New(a) => commands::new::new(ctx, a),
        Command::Init(a) => commands::new::init(ctx, a),
        Command::Add(a) => commands::edit::add(ctx, a),
        Command::Remove(a) => commands::edit::remove(ctx, a),
        Command::Install(a) => commands::install::run(ctx, a),
        Command::Update(a) => commands::lock::update(ctx, a),
        Command::Lock(a) => commands::lock::lock(ctx, a),
        Command::Tree(a) => commands::lock::tree(ctx, a),
        Command::Fetch(a) => commands::lock::fetch(ctx, a),
        Command::Completions(a) => commands::docs::completions(ctx, a),
        Command::Man(a) => commands::docs::man(ctx, a),
        Command::Search(a) => commands::registry::search(ctx, a),
        Command::Info(a) => commands::registry::info(ctx, a),
        Command::Build(a) => commands::build::run(ctx, a),
        Command::Test(a) => commands::test::run(ctx, a),
        Command::Publish(a) => commands::registry::publish(ctx, a),
        Command::Yank(a) => commands::registry::yank(ctx, a),
        Command::Attest(a) => commands::attest::run(ctx, a),
        Command::Verify(a) => commands::verify::run(ctx, a),
        Command::Login(a) => commands::account::login(ctx, a),
        Command::Logout(a) => commands::account::logout(ctx, a),
        Command::Owner(a) => commands::account::owner(ctx, a),
        Command::Token(a) => commands::account::token(ctx, a),
        Command::Key(a) => commands::keys::key(ctx, a),
        Command::Trust(a) => commands::keys::trust(ctx, a),
        Command::Registry(a) => commands::tuf::registry(ctx, a),
        Command::Status(a) => commands::deployments::status(ctx, a),
        Command::Uninstall(a) => commands::deployments::uninstall(ctx, a),
        Command::Rollback(a) => commands::deployments::rollback(ctx, a),
        Command::Doctor(a) => commands::doctor::run(ctx, a),
        Command::Mirror(a) => commands::registry::mirror(ctx, a),
        Command::Cache(a) => commands::cache::run(ctx, a),
        Command::Chain(a) => commands::chain::run(ctx, a),
    }
}
