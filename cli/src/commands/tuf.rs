//! `ebpkg registry`: naming registries, trusting a registry's TUF root, and
//! writing TUF metadata for a directory registry.

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::{Context, Result};
use clap::{Args, Subcommand};
use ebpkg_spec::RegistryId;

use ebpkg::Ctx;
use ebpkg::ops::tuf;

#[derive(Args)]
#[command(after_help = "Examples:\n  ebpkg registry add corp file:///srv/ebpkg --root root.json\n  \
ebpkg registry tuf-init /srv/ebpkg --root-key /media/offline/root.key --online-key /etc/ebpkg/online.key\n  \
EBPKG_TUF_ONLINE_KEY=/etc/ebpkg/online.key ebpkg publish --registry corp\n  \
ebpkg registry tuf-refresh /srv/ebpkg --online-key /etc/ebpkg/online.key     (daily, from cron)")]
pub struct RegistryArgs {
    #[command(subcommand)]
    command: RegistryCommand,
}

#[derive(Subcommand)]
enum RegistryCommand {
    /// Name a registry in the config file, and trust its TUF root: from then on
    /// every index file read from it must match its signed metadata.
    Add {
        /// The name (`--registry NAME`).
        name: String,
        /// Its URL.
        url: String,
        /// The registry's `root.json`, obtained out of band (the registry's
        /// operator publishes it). Checked against the registry right away.
        #[arg(long, value_name = "FILE")]
        root: Option<PathBuf>,
    },
    /// The named registries, and which have a trusted TUF root.
    List,
    /// Create TUF metadata for a directory registry over the files it has: the
    /// root and targets roles signed with the offline root key, bins, snapshot
    /// and timestamp with the online key. Missing keys are generated.
    TufInit {
        /// The registry's directory.
        dir: PathBuf,
        /// An offline key (keep it off the machine that publishes). Repeatable:
        /// root and targets then need `--threshold` of them.
        #[arg(long = "root-key", value_name = "FILE", required = true)]
        root_keys: Vec<PathBuf>,
        /// How many of the root keys must sign the root and targets roles.
        #[arg(long, default_value_t = 1)]
        threshold: u64,
        /// The online key (publishes sign with it: `EBPKG_TUF_ONLINE_KEY`).
        #[arg(long, value_name = "FILE")]
        online_key: PathBuf,
    },
    /// Replace TUF keys: the offline keys (`--new-root-key`, cross-signed by the old
    /// ones so clients follow) and/or the online key (`--new-online-key`, which also
    /// undoes a fast-forward: snapshot and timestamp start again at version 1).
    TufRotate {
        /// The registry's directory.
        dir: PathBuf,
        #[command(flatten)]
        rotation: ebpkg_tuf::repo::Rotation,
    },
    /// Re-sign the timestamp (and whatever would expire within a day) so that an
    /// unchanged registry does not look frozen. Run it daily.
    TufRefresh {
        /// The registry's directory.
        dir: PathBuf,
        #[arg(long, value_name = "FILE")]
        online_key: PathBuf,
    },
}

pub fn registry(ctx: &Ctx, args: RegistryArgs) -> Result<ExitCode> {
    match args.command {
        RegistryCommand::Add { name, url, root } => {
            // (The command line is where the registry it names is read.)
            let url = RegistryId::parse(&url).with_context(|| format!("registry `{url}`"))?;
            let added = tuf::add(ctx, &name, &url, root.as_deref())?;
            if let Some(root) = &added.root {
                ctx.ui.status(
                    "Trusted",
                    format!(
                        "the TUF root (v{}) of {}: {} signed target(s), timestamp valid until {}",
                        root.version, added.url, root.targets, root.expires
                    ),
                );
            }
            ctx.ui.status("Added", format!("registry `{name}` = {}", added.url));
        }
        RegistryCommand::List => {
            for r in tuf::list(ctx) {
                let tuf = r.tuf_root.map_or(String::new(), |root| format!("\tTUF root {}", root.display()));
                ctx.ui.out(format!("{}\t{}{tuf}", r.name, r.url));
            }
        }
        RegistryCommand::TufInit { dir, root_keys, threshold, online_key } => {
            let done = tuf::tuf_init(&dir, &root_keys, threshold, &online_key)?;
            for key in &done.generated {
                ctx.ui.status("Generated", format!("TUF key {} (mode 0600)", key.display()));
            }
            ctx.ui.status(
                "Signed",
                format!("{} file(s) of {} in TUF metadata ({})", done.signed, dir.display(), done.tuf.display()),
            );
            ctx.ui.out(format!(
                "next: give users {} (they run `ebpkg registry add NAME URL --root root.json`); publish with \
                 EBPKG_TUF_ONLINE_KEY={}; run `ebpkg registry tuf-refresh` daily; keep {} offline",
                done.tuf.join("root.json").display(),
                online_key.display(),
                root_keys.iter().map(|k| k.display().to_string()).collect::<Vec<_>>().join(", ")
            ));
        }
        RegistryCommand::TufRotate { dir, rotation } => {
            tuf::tuf_rotate(&dir, &rotation)?;
            ctx.ui.status("Rotated", format!("the TUF keys of {}; clients follow on their next read", dir.display()));
        }
        RegistryCommand::TufRefresh { dir, online_key } => {
            tuf::tuf_refresh(&dir, &online_key)?;
            ctx.ui.status("Refreshed", format!("the TUF timestamp of {}", dir.display()));
        }
    }
    Ok(ExitCode::SUCCESS)
}
