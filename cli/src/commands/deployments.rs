//! `ebpkg status` and `ebpkg uninstall`.

use std::process::ExitCode;

use anyhow::Result;
use clap::Args;

use ebpkg::Ctx;
use ebpkg::ops::deployments::{self, Deployment, RollbackOptions, StatusOptions, UninstallOptions};

#[derive(Args)]
#[command(
    after_help = "Examples:\n  ebpkg status\n  ebpkg status --maps                  every documented map, arrays without their zero \
entries\n  ebpkg status --map flow_counters     one map\n  ebpkg status --json | jq '.[0].chain_runs'"
)]
pub struct StatusArgs {
    /// Only this deployment.
    name: Option<String>,
    /// Also show the contents of the programs' maps whose layouts the packages
    /// document (per-CPU values summed). An array's entries whose value is zero
    /// are left out (and counted).
    #[arg(long)]
    maps: bool,
    /// Show only this map (in any package; implies --maps).
    #[arg(long, value_name = "NAME")]
    map: Option<String>,
    /// With --maps: also an array's entries whose value is zero.
    #[arg(long)]
    zero_entries: bool,
    /// With --maps: at most this many entries per map.
    #[arg(long, default_value_t = 32)]
    limit: usize,
    /// List the deployment's kept generations instead (the project's when no
    /// name is given): when, what changed, who signed what; `ebpkg rollback` goes
    /// back to one.
    #[arg(long, conflicts_with_all = ["maps", "map"])]
    generations: bool,
}

#[derive(Args)]
#[command(
    after_help = "The newest 5 generations of each deployment are kept (`ebpkg status --generations` lists them). \
A rollback is an install of the saved generation — its objects, chains, loader configuration and parameters — as a \
new generation: interfaces switch over without losing packets, and maps are kept as an upgrade keeps them.\n\n\
Examples:\n  sudo ebpkg rollback              the project's deployment, to the generation before the running one\n  \
sudo ebpkg rollback ddos --to 3   deployment ddos, to its generation 3"
)]
pub struct RollbackArgs {
    /// The deployment (default: the project's).
    name: Option<String>,
    /// The generation to go back to (default: the one before the running one).
    #[arg(long, value_name = "GENERATION")]
    to: Option<u64>,
    /// Start empty the maps whose layout differs from the running version's,
    /// instead of refusing.
    #[arg(long)]
    reset_state: bool,
}

#[derive(Args)]
#[command(
    after_help = "Examples:\n  sudo ebpkg uninstall          the deployment of the project here\n  sudo ebpkg uninstall ddos     a deployment by name"
)]
pub struct UninstallArgs {
    /// The deployment (default: the project's).
    name: Option<String>,
}

pub fn status(ctx: &Ctx, args: StatusArgs) -> Result<ExitCode> {
    if args.generations {
        return generations(ctx, args.name);
    }
    let maps = (args.maps || args.map.is_some()).then_some(ebpkg_deploy::MapView {
        limit: args.limit,
        only: args.map,
        zero_entries: args.zero_entries,
    });
    let with_maps = maps.is_some();
    let all = deployments::status(ctx, &StatusOptions { name: args.name, maps })?;
    if ctx.ui.json {
        let mut values = Vec::new();
        for Deployment { status, maps } in &all {
            let mut v = serde_json::to_value(status)?;
            if with_maps && let Some(o) = v.as_object_mut() {
                o.insert("maps".into(), serde_json::to_value(maps)?);
            }
            values.push(v);
        }
        ctx.ui.json(&values)?;
        return Ok(ExitCode::SUCCESS);
    }
    if all.is_empty() {
        ctx.ui.out(format!("no deployments (state directory {})", ctx.config.state_dir.display()));
        return Ok(ExitCode::SUCCESS);
    }
    for Deployment { status: d, maps } in &all {
        let r = &d.record;
        ctx.ui.out(format!(
            "deployment {} (generation {}): {}",
            r.name,
            r.generation,
            if d.running { "running" } else { "NOT RUNNING" }
        ));
        for p in &d.problems {
            ctx.ui.out(format!("  problem   {p}"));
        }
        ctx.ui.out(format!(
            "  project   {} installed {} in {}{}",
            r.project,
            utc(r.installed_at),
            r.bpffs_root.display(),
            r.netns.as_ref().map(|n| format!(" (netns {n})")).unwrap_or_default()
        ));
        let pkgs: Vec<String> = r.packages.iter().map(|p| p.id().to_string()).collect();
        ctx.ui.out(format!("  packages  {}", pkgs.join(", ")));
        print_objects(ctx, &r.packages);
        let shared = if d.shared_with.is_empty() {
            String::new()
        } else {
            format!(" (shared with {})", d.shared_with.join(", "))
        };
        for (p, (_, calls)) in r.programs.iter().zip(&d.program_calls) {
            ctx.ui.out(format!(
                "  program   {:>4}  {}@{} {} ({}), {calls} call(s){shared}",
                p.id,
                p.package,
                p.version,
                p.name,
                p.hook.name()
            ));
        }
        for (c, (_, runs)) in r.chains.iter().zip(&d.chain_runs) {
            let tier = match &c.tier {
                None => String::new(),
                Some(ebpkg_deploy::Tier::Native { bpf_id, insns, verified_insns, sha256, .. }) => {
                    let sha = sha256.map(|d| format!(", sha256 {}", d.to_hex())).unwrap_or_default();
                    format!(", native (program {bpf_id}, {insns} instructions, {verified_insns} verified{sha})")
                }
                Some(ebpkg_deploy::Tier::Interpreted { reason: None }) => ", interpreted".to_owned(),
                // The first line says why; a compiler's full output is in --json.
                Some(ebpkg_deploy::Tier::Interpreted { reason: Some(r) }) => {
                    let first = r.lines().next().unwrap_or_default();
                    let more = if r.lines().nth(1).is_some() { " (more with --json)" } else { "" };
                    format!(", interpreted: {first}{more}")
                }
            };
            ctx.ui.out(format!("  chain     {:>4}  {} ({}), {runs} run(s){tier}", c.id, c.name, c.script));
        }
        for l in &r.loaders {
            let att: Vec<String> = l.attachments.iter().map(|a| format!("{} ({})", a.interface, a.mode)).collect();
            ctx.ui.out(format!(
                "  loader    {} = {}@{} {}{}",
                l.instance,
                l.package,
                l.version,
                l.loader,
                if att.is_empty() { ", not attached".to_owned() } else { format!(", attached to {}", att.join(", ")) }
            ));
        }
        for (reason, n) in &d.root_aborts {
            ctx.ui.out(format!("  aborted   {n} packet(s): {reason} (on this root, all deployments together)"));
        }
        if !r.params.is_empty() {
            let ps: Vec<String> = r.params.iter().map(|(k, v)| format!("{k}={v}")).collect();
            ctx.ui.out(format!("  params    {}", ps.join(" ")));
        }
        for m in maps {
            let count = map_count(m);
            let sharing: Vec<&str> = all
                .iter()
                .map(|o| &o.status)
                .filter(|o| o.record.name != r.name && o.record.bpffs_root == r.bpffs_root)
                .filter(|o| o.record.packages.iter().any(|p| p.name == m.package && p.version == m.version))
                .map(|o| o.record.name.as_str())
                .collect();
            let shared =
                if sharing.is_empty() { String::new() } else { format!(" (shared with {})", sharing.join(", ")) };
            ctx.ui.out(format!("  map       {}@{} {}: {count}{shared}", m.package, m.version, m.map));
            if let Some(e) = &m.error {
                ctx.ui.out(format!("            cannot read it: {e}"));
            }
            for e in &m.entries {
                let show = |o: &serde_json::Map<String, serde_json::Value>| {
                    o.iter()
                        .map(|(k, v)| format!("{k}={}", v.as_str().map_or_else(|| v.to_string(), str::to_owned)))
                        .collect::<Vec<_>>()
                        .join(" ")
                };
                ctx.ui.out(format!("            {} -> {}", show(&e.key), show(&e.value)));
            }
        }
    }
    Ok(ExitCode::SUCCESS)
}

/// How many of a map's entries are shown, of how many: "16 entries", "2 of 16 entries
/// (raise --limit for more)", "3 non-zero of 256 entries; 253 zero entries hidden (…)".
fn map_count(m: &ebpkg_deploy::MapDump) -> String {
    let word = |n: usize| if n == 1 { "entry" } else { "entries" };
    let entries = |n: usize| format!("{n} {}", word(n));
    let shown = m.entries.len();
    let (kind, hidden) = match m.zero_entries_hidden {
        0 => ("", String::new()),
        n => ("non-zero ", format!("; {n} zero {} hidden (--zero-entries shows them)", word(n))),
    };
    let more = if m.truncated { " (raise --limit for more)" } else { "" };
    if kind.is_empty() && !m.truncated {
        return entries(shown);
    }
    format!("{shown} {kind}of {}{more}{hidden}", entries(m.total))
}

/// `status --generations`.
fn generations(ctx: &Ctx, name: Option<String>) -> Result<ExitCode> {
    let (kept, running) = deployments::generations(ctx, name)?;
    if ctx.ui.json {
        let list: Vec<serde_json::Value> = kept
            .iter()
            .enumerate()
            .map(|(i, g)| {
                serde_json::json!({
                    "generation": g.record.generation,
                    "installed_at": g.record.installed_at,
                    "running": Some(g.record.generation) == running,
                    "restores": g.record.restores,
                    "changes": g.changes_from(i.checked_sub(1).map(|j| &kept[j])),
                    "packages": g.record.packages.iter().map(|p| serde_json::json!({
                        "name": p.name, "version": p.version.to_string(), "signer": p.signer,
                    })).collect::<Vec<_>>(),
                    "params": g.record.params,
                })
            })
            .collect();
        ctx.ui.json(&list)?;
        return Ok(ExitCode::SUCCESS);
    }
    for (i, g) in kept.iter().enumerate() {
        let r = &g.record;
        let mark = if Some(r.generation) == running { "  (running)" } else { "" };
        let again = r.restores.map(|n| format!(", generation {n} again")).unwrap_or_default();
        ctx.ui.out(format!("generation {}  {}{again}{mark}", r.generation, utc(r.installed_at)));
        let changes = g.changes_from(i.checked_sub(1).map(|j| &kept[j]));
        if !changes.is_empty() {
            ctx.ui.out(format!("  changed   {}", changes.join(", ")));
        }
        let pkgs: Vec<String> = r
            .packages
            .iter()
            .map(|p| match &p.signer {
                Some(key) => format!("{} (signed by {key})", p.id()),
                None => p.id().to_string(),
            })
            .collect();
        ctx.ui.out(format!("  packages  {}", pkgs.join(", ")));
        print_objects(ctx, &r.packages);
    }
    if kept.is_empty() {
        ctx.ui.out("no generations kept (they are saved from the first install made by this version of ebpkg on)");
    }
    Ok(ExitCode::SUCCESS)
}

/// One line per loaded object: what runs, where it came from and what made it.
fn print_objects(ctx: &Ctx, packages: &[ebpkg_deploy::RecordedPackage]) {
    for p in packages {
        for o in &p.objects {
            ctx.ui.out(format!(
                "  object    {}@{} {} ({}): sha256 {}, {}, {}",
                p.name,
                p.version,
                o.object,
                o.hook.name(),
                o.sha256.to_hex(),
                o.origin.map_or("origin not recorded", |o| o.describe()),
                o.compiler.as_deref().map_or_else(|| "compiler not named".to_owned(), |c| format!("by {c}"))
            ));
        }
    }
}

pub fn rollback(ctx: &Ctx, args: RollbackArgs) -> Result<ExitCode> {
    let opts = RollbackOptions { name: args.name, to: args.to, reset_state: args.reset_state };
    let outcome = deployments::rollback(ctx, opts)?;
    crate::commands::install::report(ctx, &outcome, &ebpkg::ops::install::Timings::default(), &[], false)
}

pub fn uninstall(ctx: &Ctx, args: UninstallArgs) -> Result<ExitCode> {
    let record = deployments::uninstall(ctx, UninstallOptions { name: args.name })?;
    if ctx.ui.json {
        ctx.ui.json(&serde_json::json!({ "uninstalled": record }))?;
    } else {
        ctx.ui.status("Uninstalled", format!("deployment {} (generation {})", record.name, record.generation));
    }
    Ok(ExitCode::SUCCESS)
}

/// `2026-11-22 16:04:05 UTC` from seconds since the epoch.
pub fn utc(secs: u64) -> String {
    let days = (secs / 86_400) as i64;
    let rem = secs % 86_400;
    // Howard Hinnant's days-to-civil.
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = yoe + era * 400 + i64::from(m <= 2);
    format!("{y:04}-{m:02}-{d:02} {:02}:{:02}:{:02} UTC", rem / 3600, rem % 3600 / 60, rem % 60)
}

#[cfg(test)]
mod tests {
    #[test]
    fn utc_dates() {
        assert_eq!(super::utc(0), "1970-01-01 00:00:00 UTC");
        assert_eq!(super::utc(1_795_392_245), "2026-11-23 00:04:05 UTC");
        assert_eq!(super::utc(951_782_400), "2000-02-29 00:00:00 UTC");
    }
}
