//! Compiles the runtime's own eBPF objects (the VM continuation and the test
//! entry for each hook; with the `test-objects` feature, the programs the kernel
//! tests and benchmarks use) with clang. They touch only UAPI structures, so they
//! are built against the kernel's UAPI headers (`bpf/uapi/vmlinux.h`), not against
//! the build machine's BTF: building needs clang and the UAPI headers, no kernel.

#![allow(clippy::expect_used)] // a build script reports failure by panicking

use std::env;
use std::path::{Path, PathBuf};
use std::process::Command;

fn main() {
    let manifest = PathBuf::from(env::var("CARGO_MANIFEST_DIR").expect("cargo sets CARGO_MANIFEST_DIR"));
    let bpf = manifest.parent().expect("runtime/ lives inside hike-sdk/").join("bpf");
    let out = PathBuf::from(env::var("OUT_DIR").expect("cargo sets OUT_DIR"));
    let include = hike_sdk_headers::include_dir();

    println!("cargo:rerun-if-changed={}", bpf.display());
    println!("cargo:rerun-if-env-changed=HIKE_CLANG");

    let clang = env::var("HIKE_CLANG").unwrap_or_else(|_| "clang".to_owned());
    let target_arch = env::var("CARGO_CFG_TARGET_ARCH").unwrap_or_else(|_| "x86_64".to_owned());
    let arch = match target_arch.as_str() {
        "x86_64" => "x86",
        "aarch64" => "arm64",
        "riscv64" => "riscv",
        "s390x" => "s390",
        "powerpc64" => "powerpc",
        other => panic!("no BPF target arch known for {other}"),
    };
    // <linux/types.h> includes <asm/types.h>, which Debian and Ubuntu keep under
    // the multiarch directory that `-target bpf` does not search.
    let multiarch = Path::new("/usr/include").join(format!("{target_arch}-linux-gnu"));
    let mut includes = vec![include.to_owned(), bpf.join("uapi")];
    if multiarch.is_dir() {
        includes.push(multiarch);
    }

    let mut objects: Vec<(&str, &str, &[&str])> = vec![
        ("hike_cont_xdp.o", "hike_cont.bpf.c", &[]),
        ("hike_cont_tc.o", "hike_cont.bpf.c", &["-DHIKE_HOOK_TC"]),
        ("hike_entry_xdp.o", "hike_entry.bpf.c", &[]),
        ("hike_entry_tc.o", "hike_entry.bpf.c", &["-DHIKE_HOOK_TC"]),
    ];
    if env::var_os("CARGO_FEATURE_TEST_OBJECTS").is_some() {
        objects.extend_from_slice(&[
            ("vmtest_xdp.o", "test/vmtest.bpf.c", &[]),
            ("vmtest_tc.o", "test/vmtest.bpf.c", &["-DHIKE_HOOK_TC"]),
            ("vmtest_direct16_xdp.o", "test/vmtest.bpf.c", &["-DHIKE_DIRECT_PROGS=16"]),
            ("testloader_xdp.o", "test/testloader.bpf.c", &[]),
            ("testloader_tc.o", "test/testloader.bpf.c", &["-DHIKE_HOOK_TC"]),
            ("bad.o", "test/bad.bpf.c", &[]),
            ("hostile.o", "test/hostile.bpf.c", &[]),
            ("hostile_undeclared.o", "test/hostile.bpf.c", &["-DHIKE_TEST_UNDECLARED"]),
            ("hostile_extra.o", "test/hostile.bpf.c", &["-DHIKE_TEST_EXTRA_VM_MAP"]),
            ("clocktest.o", "test/clocktest.bpf.c", &[]),
            ("mini.o", "test/mini.bpf.c", &[]),
            ("rawtail.o", "bench/rawtail.bpf.c", &[]),
        ]);
    }
    for (name, src, extra) in objects {
        compile(&clang, arch, &bpf.join(src), &out.join(name), &includes, extra);
    }
}

fn compile(clang: &str, arch: &str, src: &Path, obj: &Path, includes: &[PathBuf], extra: &[&str]) {
    let status = Command::new(clang)
        .args(hike_sdk_headers::CFLAGS)
        .args([&format!("-D__TARGET_ARCH_{arch}"), "-Wall", "-Wextra", "-Werror"])
        .args(extra)
        .args(includes.iter().flat_map(|i| [Path::new("-I"), i.as_path()]))
        .arg("-c")
        .arg(src)
        .arg("-o")
        .arg(obj)
        .status()
        .unwrap_or_else(|e| panic!("cannot run {clang} (install clang and libbpf-dev, e.g. with ci/setup): {e}"));
    if !status.success() {
        panic!("{clang} failed to compile {}", src.display());
    }
}
