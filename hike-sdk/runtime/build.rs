//! Compiles the runtime's own eBPF objects (the VM continuation for each hook, and
//! the programs the kernel tests use) with clang against a vmlinux.h generated from
//! the build machine's BTF. They only touch UAPI context structures, whose layout
//! does not depend on the kernel they later run on.

#![allow(clippy::expect_used)] // a build script reports failure by panicking

use std::env;
use std::path::{Path, PathBuf};
use std::process::Command;

fn main() {
    let manifest = PathBuf::from(env::var("CARGO_MANIFEST_DIR").expect("cargo sets CARGO_MANIFEST_DIR"));
    let sdk = manifest.parent().expect("runtime/ lives inside hike-sdk/").to_path_buf();
    let out = PathBuf::from(env::var("OUT_DIR").expect("cargo sets OUT_DIR"));
    let include = sdk.join("include");
    let bpf = sdk.join("bpf");

    println!("cargo:rerun-if-changed={}", include.display());
    println!("cargo:rerun-if-changed={}", bpf.display());
    println!("cargo:rerun-if-env-changed=HIKE_CLANG");
    println!("cargo:rerun-if-env-changed=HIKE_VMLINUX_BTF");

    let vmlinux_dir = out.join("vmlinux");
    std::fs::create_dir_all(&vmlinux_dir).expect("create OUT_DIR/vmlinux");
    generate_vmlinux_h(&vmlinux_dir.join("vmlinux.h"));

    let clang = env::var("HIKE_CLANG").unwrap_or_else(|_| "clang".to_owned());
    let arch = match env::var("CARGO_CFG_TARGET_ARCH").as_deref() {
        Ok("x86_64") => "x86",
        Ok("aarch64") => "arm64",
        Ok("riscv64") => "riscv",
        Ok("s390x") => "s390",
        Ok("powerpc64") => "powerpc",
        Ok(other) => panic!("no BPF target arch known for {other}"),
        Err(_) => "x86",
    };
    let objects: &[(&str, &str, &[&str])] = &[
        ("hike_cont_xdp.o", "hike_cont.bpf.c", &[]),
        ("hike_cont_tc.o", "hike_cont.bpf.c", &["-DHIKE_HOOK_TC"]),
        ("hike_entry_xdp.o", "hike_entry.bpf.c", &[]),
        ("hike_entry_tc.o", "hike_entry.bpf.c", &["-DHIKE_HOOK_TC"]),
        ("vmtest_xdp.o", "test/vmtest.bpf.c", &[]),
        ("vmtest_tc.o", "test/vmtest.bpf.c", &["-DHIKE_HOOK_TC"]),
        ("testloader_xdp.o", "test/testloader.bpf.c", &[]),
        ("testloader_tc.o", "test/testloader.bpf.c", &["-DHIKE_HOOK_TC"]),
        ("bad.o", "test/bad.bpf.c", &[]),
        ("clocktest.o", "test/clocktest.bpf.c", &[]),
        ("mini.o", "test/mini.bpf.c", &[]),
        ("rawtail.o", "bench/rawtail.bpf.c", &[]),
    ];
    for (name, src, extra) in objects {
        compile(&clang, arch, &bpf.join(src), &out.join(name), &include, &vmlinux_dir, extra);
    }
}

fn generate_vmlinux_h(dest: &Path) {
    let btf = env::var("HIKE_VMLINUX_BTF").unwrap_or_else(|_| "/sys/kernel/btf/vmlinux".to_owned());
    let output = Command::new("bpftool")
        .args(["btf", "dump", "file", &btf, "format", "c"])
        .output()
        .unwrap_or_else(|e| panic!("cannot run bpftool (install it with ci/setup): {e}"));
    if !output.status.success() {
        panic!("bpftool could not dump the kernel's BTF from {btf}: {}", String::from_utf8_lossy(&output.stderr));
    }
    std::fs::write(dest, output.stdout).expect("write vmlinux.h");
}

fn compile(clang: &str, arch: &str, src: &Path, obj: &Path, include: &Path, vmlinux: &Path, extra: &[&str]) {
    let status = Command::new(clang)
        .args(["-O2", "-g", "-target", "bpf", &format!("-D__TARGET_ARCH_{arch}"), "-Wall", "-Wextra", "-Werror"])
        .args(extra)
        .arg("-I")
        .arg(include)
        .arg("-I")
        .arg(vmlinux)
        .arg("-c")
        .arg(src)
        .arg("-o")
        .arg(obj)
        .status()
        .unwrap_or_else(|e| panic!("cannot run {clang} (install it with ci/setup): {e}"));
    if !status.success() {
        panic!("{clang} failed to compile {}", src.display());
    }
}
