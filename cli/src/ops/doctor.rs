//! `ebpkg doctor`: can this machine build and load HIKe packages? Each check says
//! what it found and, when it fails, what to do.

use std::path::Path;

use serde::Serialize;

use crate::Ctx;

/// What `doctor` looks at.
pub struct DoctorOptions {
    /// Also repair what no other command would.
    pub fix: bool,
}

/// One finding.
#[derive(Serialize)]
pub struct Check {
    pub name: &'static str,
    /// "ok", "warn" or "fail".
    pub status: &'static str,
    pub found: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub fix: Option<String>,
}

fn check(name: &'static str, ok: bool, found: String, fix: &str) -> Check {
    Check { name, status: if ok { "ok" } else { "fail" }, found, fix: (!ok).then(|| fix.to_owned()) }
}

/// The oldest kernel HIKe is proven on (`ci/test-kernels --all`: Debian 11's
/// 5.10; docs/KERNELS.md), and the first with tcx links, which TC attachments need.
const MIN_KERNEL: (u32, u32) = (5, 10);
const TCX_KERNEL: (u32, u32) = (6, 6);

/// Every check, repairs first with `opts.fix`.
pub fn doctor(ctx: &Ctx, opts: &DoctorOptions) -> Vec<Check> {
    let mut checks = Vec::new();

    let kernel = crate::ops::kernel_fit::RunningKernel::current();
    let (release, version) = (kernel.release, kernel.version);
    let v = version.as_ref().map(|v| (u32::from(v.major), u32::from(v.minor)));
    let new_enough = v.is_some_and(|v| v >= MIN_KERNEL);
    if new_enough && v.is_some_and(|v| v < TCX_KERNEL) {
        checks.push(Check {
            name: "kernel",
            status: "warn",
            found: format!("Linux {release}"),
            fix: Some(format!(
                "XDP loaders work here; attaching a loader to TC needs Linux {}.{} or newer (tcx links)",
                TCX_KERNEL.0, TCX_KERNEL.1
            )),
        });
    } else {
        checks.push(check(
            "kernel",
            new_enough,
            format!("Linux {release}"),
            &format!("HIKe needs Linux {}.{} or newer", MIN_KERNEL.0, MIN_KERNEL.1),
        ));
    }

    let btf = std::path::Path::new(ebpkg_build::KERNEL_BTF);
    checks.push(check(
        "BTF",
        btf.exists(),
        if btf.exists() { format!("{} present", btf.display()) } else { format!("{} missing", btf.display()) },
        "boot a kernel built with CONFIG_DEBUG_INFO_BTF=y, or build with `--btf FILE`",
    ));

    let jit = std::fs::read_to_string("/proc/sys/net/core/bpf_jit_enable").unwrap_or_default().trim().to_owned();
    checks.push(Check {
        name: "JIT",
        status: if jit == "1" || jit == "2" { "ok" } else { "warn" },
        found: format!("net.core.bpf_jit_enable = {}", if jit.is_empty() { "unknown" } else { &jit }),
        fix: (jit != "1" && jit != "2")
            .then(|| "`sysctl -w net.core.bpf_jit_enable=1`: interpreted eBPF is much slower".to_owned()),
    });

    let mounts = std::fs::read_to_string("/proc/mounts").unwrap_or_default();
    let root = &ctx.config.bpffs_root;
    let bpffs: Vec<&str> = mounts
        .lines()
        .filter(|l| l.split_whitespace().nth(2) == Some("bpf"))
        .filter_map(|l| l.split_whitespace().nth(1))
        .collect();
    let under = bpffs.iter().any(|m| root.starts_with(m));
    checks.push(check(
        "bpffs",
        under,
        if under {
            format!("{} is on bpffs", root.display())
        } else {
            format!("no bpffs mounted above {}", root.display())
        },
        "`mount -t bpf -o mode=0700 bpf /sys/fs/bpf` (or choose a root on bpffs with --bpffs-root)",
    ));

    let caps = crate::ops::effective_caps();
    let privileged = crate::ops::require_privileges("install").is_ok();
    checks.push(check(
        "privileges",
        privileged,
        format!("effective capabilities {caps:#x}"),
        "run `ebpkg install`, `uninstall` and `test` as root (CAP_BPF and CAP_NET_ADMIN)",
    ));

    let tools = ebpkg_build::Toolchain::detect(&ctx.config.tools);
    match &tools {
        Ok(t) => {
            checks.push(check("clang", true, format!("{} ({})", t.clang_version, t.clang.display()), ""));
            checks.push(check("bpftool", true, format!("{} ({})", t.bpftool_version, t.bpftool.display()), ""));
        }
        // Not a failure: packages that ship their portable objects, or whose
        // objects are in the cache, install without a compiler.
        Err(e) => checks.push(Check {
            name: "toolchain",
            status: "warn",
            found: e.to_string(),
            fix: Some(
                "installs need packages that ship their objects (`ebpkg publish --with-objects`) or a warm build \
                 cache; to compile, `apt-get install clang llvm libbpf-dev bpftool`"
                    .into(),
            ),
        }),
    }

    let state = &ctx.config.state_dir;
    let state_ok = std::fs::create_dir_all(state).is_ok() && tempfile_in(state);
    checks.push(check(
        "state directory",
        state_ok,
        format!("{}{}", state.display(), if state_ok { " is writable" } else { " is not writable" }),
        "run as root, or choose another with --state-dir / EBPKG_STATE_DIR",
    ));
    checks.extend(cache_check(ctx, opts.fix));

    let registry = ctx.registries().and_then(|r| {
        let reg = r.open(&r.default)?;
        let n = reg.names().map_err(|e| anyhow::anyhow!("{e}"))?.len();
        Ok(format!("{} ({n} package(s))", r.default))
    });
    checks.push(match registry {
        Ok(found) => check("registry", true, found, ""),
        Err(e) => Check {
            name: "registry",
            status: "warn",
            found: format!("{e:#}"),
            fix: Some(
                "set the registry with --registry, EBPKG_REGISTRY or [registry] default in the config file".into(),
            ),
        },
    });

    checks.extend(tuf_clock(ctx, opts.fix));
    checks.extend(host_state(ctx, opts.fix));

    checks
}

/// The cache: private (`cache_safety::check`) and writable. With `fix`, what
/// can be repaired is: a directory of the caller's that others can write is made
/// `go-w`, and everything in it that someone else made or others could write is
/// removed, at any depth (it is a cache: removing is safe; a planted entry is
/// never taken over by a chown); an entry of the cache another user owns is
/// removed. The cache root itself, when someone else owns it, is only reported.
fn cache_check(ctx: &Ctx, fix: bool) -> Vec<Check> {
    let cache = &ctx.config.cache_dir;
    let real_root = std::fs::canonicalize(cache).unwrap_or_else(|_| cache.clone());
    let inside = |p: &Path| p != real_root && p.starts_with(&real_root);
    let mut checks = Vec::new();
    // Each repair may reveal the next entry to repair (a sweep repairs a whole
    // subtree at once, so few rounds are needed).
    for _ in 0..256 {
        match crate::cache_safety::check(cache) {
            Err(e) if fix && (e.cause.chmod_repairs() || inside(&e.cause.path)) => match repair(&e.cause) {
                Ok(done) => checks.extend(done),
                Err(err) => {
                    checks.push(check("cache", false, format!("{e}; cannot repair it: {err}"), "repair it by hand"));
                    return checks;
                }
            },
            Err(e) => {
                let fix = if e.cause.chmod_repairs() || inside(&e.cause.path) {
                    format!("{}; `ebpkg doctor --fix` does it", e.cause.fix())
                } else {
                    format!("{}; or set EBPKG_CACHE_DIR to a directory of your own", e.cause.fix())
                };
                checks.push(Check { name: "cache", status: "fail", found: e.to_string(), fix: Some(fix) });
                return checks;
            }
            Ok(()) => break,
        }
    }
    let cache_ok = tempfile_in(cache);
    checks.push(check(
        "cache",
        cache_ok,
        format!("{}{}", cache.display(), if cache_ok { " is private and writable" } else { " is not writable" }),
        "set EBPKG_CACHE_DIR to a writable directory",
    ));
    checks
}

/// Repairs one entry of the cache the privacy check refused (see `cache_check`).
fn repair(cause: &ebpkg_fs::private::NotPrivate) -> std::io::Result<Vec<Check>> {
    use ebpkg_fs::private::{Problem, Swept};
    use std::os::unix::fs::PermissionsExt;
    let repaired = |found: String| Check { name: "repaired", status: "ok", found, fix: None };
    let path = &cause.path;
    let meta = std::fs::symlink_metadata(path)?;
    if meta.is_dir() && cause.chmod_repairs() {
        let mode = meta.permissions().mode() & 0o7777 & !0o022;
        std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode))?;
        let mut done = vec![repaired(format!("made {} writable only by its owner (`chmod go-w`)", path.display()))];
        for swept in ebpkg_fs::private::remove_foreign(path)? {
            done.push(repaired(match swept {
                Swept::Removed { path, problem: Problem::Owner { uid, .. } } => {
                    format!("removed {}: uid {uid} made it in the cache", path.display())
                }
                Swept::Removed { path, .. } => format!("removed {}: others could write it", path.display()),
                Swept::Restricted { path, mode } => {
                    format!("made {} writable only by its owner (mode {mode:o})", path.display())
                }
            }));
        }
        return Ok(done);
    }
    if meta.is_dir() {
        std::fs::remove_dir_all(path)?
    } else {
        std::fs::remove_file(path)?
    }
    Ok(vec![repaired(format!("removed {}: {}", path.display(), cause.reason()))])
}

/// A recorded "latest known time" of a registry's TUF datastore that is ahead of
/// the clock: every command reading that registry is refused until the clock
/// passes it. With `fix`, it is forgotten (the next load records the time anew).
fn tuf_clock(ctx: &Ctx, fix: bool) -> Vec<Check> {
    let mut checks = Vec::new();
    let Ok(dirs) = std::fs::read_dir(ctx.config.cache_dir.join("tuf")) else { return checks };
    for dir in dirs.flatten().map(|e| e.path()) {
        let Some(recorded) = ebpkg_tuf::recorded_time_ahead(&dir) else { continue };
        let file = dir.join(ebpkg_tuf::LATEST_KNOWN_TIME);
        let found = format!("{} records {recorded}, ahead of this machine's clock", file.display());
        if fix {
            match std::fs::remove_file(&file) {
                Ok(()) => {
                    checks.push(Check { name: "repaired", status: "ok", found: format!("forgot: {found}"), fix: None })
                }
                Err(e) => checks.push(check(
                    "TUF clock",
                    false,
                    format!("{found}; cannot remove it: {e}"),
                    "remove it by hand",
                )),
            }
        } else {
            checks.push(check(
                "TUF clock",
                false,
                found,
                "if the clock is right (`timedatectl`), `ebpkg doctor --fix` forgets the recorded time",
            ));
        }
    }
    checks
}

/// What the state directory, the roots and the cache hold that does not agree
/// with the records, each with its fix; with `fix`, the repairs done first.
fn host_state(ctx: &Ctx, fix: bool) -> Vec<Check> {
    let mut checks = Vec::new();
    let warn = |name: &'static str, found: String, fix: Option<String>| Check { name, status: "warn", found, fix };
    if fix {
        for root in crate::ops::stale_temp_roots(&ctx.config.bpffs_root) {
            let found = match hike_runtime::Runtime::destroy(&root) {
                Ok(()) => format!("removed {}, a temporary root of a process that died", root.display()),
                Err(e) => format!("cannot remove {}: {e}", root.display()),
            };
            checks.push(Check { name: "repaired", status: "ok", found, fix: None });
        }
        for p in ebpkg_build::temps::remove_stale(&ctx.config.cache_dir) {
            checks.push(Check {
                name: "repaired",
                status: "ok",
                found: format!("removed {}, left by a build that died", p.display()),
                fix: None,
            });
        }
    }
    for root in crate::ops::stale_temp_roots(&ctx.config.bpffs_root) {
        checks.push(warn(
            "temporary root",
            format!("{} was left by a process that died (ebpkg test or build --verify)", root.display()),
            Some("`ebpkg doctor --fix` (or the next `ebpkg test`) removes it".into()),
        ));
    }
    if let Some((found, fix)) = crate::ops::writable_vm_tables(&ctx.config.bpffs_root) {
        checks.push(warn("vm tables", found, Some(fix.into())));
    }
    for p in ebpkg_build::temps::stale(&ctx.config.cache_dir) {
        checks.push(warn(
            "cache",
            format!("{} was left by a build that died", p.display()),
            Some("`ebpkg doctor --fix` (or the next build) removes it".into()),
        ));
    }
    let deployer = match ebpkg_deploy::Deployer::new(&ctx.config.state_dir, &ctx.config.bpffs_root, None) {
        Ok(d) => d,
        Err(e) => {
            checks.push(Check {
                name: "deployments",
                status: "fail",
                found: e.to_string(),
                fix: Some("repair the state directory as said, then run `ebpkg doctor` again".into()),
            });
            return checks;
        }
    };
    if fix {
        match deployer.repair(&|e| crate::ops::install::print_event(ctx, e)) {
            Ok(ebpkg_deploy::audit::Repaired { done, failed }) => {
                for f in done {
                    checks.push(Check { name: "repaired", status: "ok", found: f.what, fix: None });
                }
                for (f, e) in failed {
                    checks.push(warn("repair failed", format!("{}: {e}", f.what), None));
                }
            }
            Err(e) => checks.push(warn("repair failed", e.to_string(), None)),
        }
    }
    match deployer.audit() {
        Ok(findings) if findings.is_empty() => checks.push(Check {
            name: "deployments",
            status: "ok",
            found: format!(
                "{} deployment(s), consistent with the kernel",
                deployer.store().records().map(|r| r.len()).unwrap_or(0)
            ),
            fix: None,
        }),
        Ok(findings) => {
            for f in findings {
                let how = match &f.fix {
                    ebpkg_deploy::Fix::NextCommand => {
                        "any `ebpkg install`, `uninstall` or `status` finishes or undoes it".to_owned()
                    }
                    ebpkg_deploy::Fix::Reinstall { deployment } => {
                        format!("run `ebpkg install` in the project of deployment {deployment}")
                    }
                    ebpkg_deploy::Fix::Inspect { path } => {
                        format!("look at {} and remove it when done", path.display())
                    }
                    _ => "`ebpkg doctor --fix` removes it".to_owned(),
                };
                checks.push(warn("deployments", f.what, Some(how)));
            }
        }
        Err(e) => checks.push(Check {
            name: "deployments",
            status: "fail",
            found: e.to_string(),
            fix: Some("repair what it says, then run `ebpkg doctor` again".into()),
        }),
    }
    checks
}

fn tempfile_in(dir: &std::path::Path) -> bool {
    let p = dir.join(format!(".ebpkg-doctor-{}", std::process::id()));
    let ok = std::fs::write(&p, b"").is_ok();
    let _ = std::fs::remove_file(&p);
    ok
}
