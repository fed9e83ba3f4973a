//! The C SDK builds warning-free (-Wall -Wextra -Werror) with clang 14 and with the
//! newer Debian clangs, for both hooks, against a vmlinux.h from the running kernel
//! (how ebpkg builds packages) and against the UAPI headers (how build.rs builds the
//! runtime's own objects).

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::{Path, PathBuf};
use std::process::Command;

fn sdk() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).parent().unwrap().to_owned()
}

/// The include directories build.rs gives clang for the UAPI build: the UAPI
/// vmlinux.h, and the multiarch directory that holds <asm/types.h>.
fn uapi_includes() -> Vec<PathBuf> {
    let mut dirs = vec![sdk().join("bpf/uapi")];
    let multiarch = Path::new("/usr/include").join(format!("{}-linux-gnu", std::env::consts::ARCH));
    if multiarch.is_dir() {
        dirs.push(multiarch);
    }
    dirs
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
    let kernel_vmlinux = vec![dir.clone()];
    let uapi = uapi_includes();
    for cc in &compilers {
        for src in sources {
            for hook in [None, Some("-DHIKE_HOOK_TC")] {
                for (types, includes) in [("vmlinux.h", &kernel_vmlinux), ("UAPI", &uapi)] {
                    let obj = dir.join("out.o");
                    let mut cmd = Command::new(cc);
                    cmd.args(["-O2", "-g", "-target", "bpf", "-D__TARGET_ARCH_x86", "-Wall", "-Wextra", "-Werror"])
                        .args(hook)
                        .arg("-I")
                        .arg(sdk().join("include"))
                        .args(includes.iter().flat_map(|i| [Path::new("-I"), i.as_path()]))
                        .arg("-c")
                        .arg(sdk().join("bpf").join(src))
                        .arg("-o")
                        .arg(&obj);
                    let out = cmd.output().unwrap();
                    if !out.status.success() {
                        failures
                            .push(format!("{cc} {src} {hook:?} ({types}):\n{}", String::from_utf8_lossy(&out.stderr)));
                    }
                }
            }
        }
    }
    std::fs::remove_dir_all(&dir).unwrap();
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

/// The program ids `hike_cont.bpf.c` dispatches with a constant-key tail call
/// (`r3 = <id>` then `call bpf_tail_call`) when built with `defines`, or clang's
/// error when it does not build.
fn direct_ids(defines: &[&str]) -> Result<Vec<i32>, String> {
    let dir = tempfile::tempdir().unwrap();
    let obj = dir.path().join("cont.o");
    let out = Command::new("clang")
        .args(hike_sdk_headers::CFLAGS)
        .args(["-D__TARGET_ARCH_x86", "-Wall", "-Wextra", "-Werror"])
        .args(defines)
        .arg("-I")
        .arg(hike_sdk_headers::include_dir())
        .arg("-I")
        .arg(sdk().join("bpf/uapi"))
        .arg("-I/usr/include/x86_64-linux-gnu")
        .arg("-c")
        .arg(sdk().join("bpf/hike_cont.bpf.c"))
        .arg("-o")
        .arg(&obj)
        .output()
        .unwrap();
    if !out.status.success() {
        return Err(String::from_utf8_lossy(&out.stderr).into_owned());
    }
    let open = libbpf_rs::ObjectBuilder::default().open_file(&obj).unwrap();
    let mut ids = Vec::new();
    for prog in open.progs() {
        for w in prog.insns().windows(2) {
            let (set, call) = (&w[0], &w[1]);
            // BPF_ALU64 | BPF_MOV | BPF_K into r3, then BPF_JMP | BPF_CALL 12 (bpf_tail_call).
            // Id 0 is the continuation, which the VM reaches with a constant key whatever the setting.
            if set.code == 0xb7 && set.dst_reg() == 3 && call.code == 0x85 && call.imm == 12 && set.imm != 0 {
                ids.push(set.imm);
            }
        }
    }
    ids.sort();
    ids.dedup();
    Ok(ids)
}

#[test]
fn hike_direct_progs_is_the_bound_its_name_says() {
    assert_eq!(direct_ids(&[]).unwrap(), (1..32).collect::<Vec<_>>(), "default: ids 1..31");
    assert_eq!(direct_ids(&["-DHIKE_DIRECT_PROGS=16"]).unwrap(), (1..16).collect::<Vec<_>>());
    assert_eq!(direct_ids(&["-DHIKE_DIRECT_PROGS=2"]).unwrap(), vec![1]);
    assert_eq!(direct_ids(&["-DHIKE_DIRECT_PROGS=1"]).unwrap(), Vec::<i32>::new(), "1 turns it off");
    for bad in ["-DHIKE_DIRECT_PROGS=0", "-DHIKE_DIRECT_PROGS=33"] {
        let err = direct_ids(&[bad]).unwrap_err();
        assert!(err.contains("HIKE_DIRECT_PROGS must be between 1"), "{bad}: {err}");
    }
}

#[test]
fn ipv6_extension_headers_have_their_numbers_in_both_builds() {
    // Both the names packet.h defines when the kernel's headers do not (vmlinux.h
    // carries no macros) and the ones that come from the kernel's IPPROTO enum.
    let check = r#"
        #include <hike/packet.h>
        _Static_assert(IPPROTO_HOPOPTS == 0, "hop-by-hop options");
        _Static_assert(IPPROTO_ROUTING == 43, "routing");
        _Static_assert(IPPROTO_FRAGMENT == 44, "fragment");
        _Static_assert(IPPROTO_ESP == 50, "ESP");
        _Static_assert(IPPROTO_AH == 51, "AH");
        _Static_assert(IPPROTO_NONE == 59, "no next header");
        _Static_assert(IPPROTO_DSTOPTS == 60, "destination options");
        _Static_assert(IPPROTO_MH == 135, "mobility");
    "#;
    let dir = tempfile::tempdir().unwrap();
    let btf = Command::new("bpftool")
        .args(["btf", "dump", "file", "/sys/kernel/btf/vmlinux", "format", "c"])
        .output()
        .unwrap();
    assert!(btf.status.success(), "bpftool cannot dump the kernel's BTF");
    std::fs::write(dir.path().join("vmlinux.h"), btf.stdout).unwrap();
    let src = dir.path().join("names.c");
    std::fs::write(&src, check).unwrap();
    for (types, includes) in [("vmlinux.h", vec![dir.path().to_owned()]), ("UAPI", uapi_includes())] {
        let out = Command::new("clang")
            .args(hike_sdk_headers::CFLAGS)
            .args(["-D__TARGET_ARCH_x86", "-Wall", "-Wextra", "-Werror", "-fsyntax-only"])
            .arg("-I")
            .arg(hike_sdk_headers::include_dir())
            .args(includes.iter().flat_map(|i| [Path::new("-I"), i.as_path()]))
            .arg(&src)
            .output()
            .unwrap();
        assert!(out.status.success(), "{types}:\n{}", String::from_utf8_lossy(&out.stderr));
    }
}
