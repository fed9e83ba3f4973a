//! The C SDK builds warning-free (-Wall -Wextra -Werror) with clang 14 and with the
//! newer Debian clangs, for both hooks, against a vmlinux.h from the running kernel.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::{Path, PathBuf};
use std::process::Command;

fn sdk() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).parent().unwrap().to_owned()
}

fn have(tool: &str) -> bool {
    Command::new(tool).arg("--version").output().is_ok_and(|o| o.status.success())
}

#[test]
fn sdk_builds_warning_free_with_each_clang() {
    let compilers: Vec<&str> = ["clang-14", "clang-16", "clang-19"].into_iter().filter(|c| have(c)).collect();
    assert!(compilers.contains(&"clang-14"), "clang-14 is missing; ci/setup installs it (package clang)");
    assert!(
        compilers.len() >= 2,
        "a newer clang than 14 is missing; ci/setup installs clang-16 and clang-19 (found {compilers:?})"
    );
    let dir = std::env::temp_dir().join(format!("hike-sdk-build-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let out = Command::new("bpftool")
        .args(["btf", "dump", "file", "/sys/kernel/btf/vmlinux", "format", "c"])
        .output()
        .unwrap();
    assert!(out.status.success(), "bpftool cannot dump the kernel's BTF");
    std::fs::write(dir.join("vmlinux.h"), out.stdout).unwrap();

    let sources =
        ["hike_cont.bpf.c", "hike_entry.bpf.c", "test/vmtest.bpf.c", "test/testloader.bpf.c", "test/clocktest.bpf.c"];
    let mut failures = Vec::new();
    for cc in &compilers {
        for src in sources {
            for hook in [None, Some("-DHIKE_HOOK_TC")] {
                let obj = dir.join("out.o");
                let mut cmd = Command::new(cc);
                cmd.args(["-O2", "-g", "-target", "bpf", "-D__TARGET_ARCH_x86", "-Wall", "-Wextra", "-Werror"])
                    .args(hook)
                    .arg("-I")
                    .arg(sdk().join("include"))
                    .arg("-I")
                    .arg(&dir)
                    .arg("-c")
                    .arg(sdk().join("bpf").join(src))
                    .arg("-o")
                    .arg(&obj);
                let out = cmd.output().unwrap();
                if !out.status.success() {
                    failures.push(format!("{cc} {src} {hook:?}:\n{}", String::from_utf8_lossy(&out.stderr)));
                }
            }
        }
    }
    std::fs::remove_dir_all(&dir).unwrap();
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}
