//! How much work the verifier does for each runtime program: the kernel's
//! `verified_insns` and the wall time of `init` and of registering the test
//! programs. `cargo run --release -p hike-runtime --example verifycost`
use std::time::Instant;

use hike_bytecode::Hook;
use hike_runtime::{InitOptions, ProgramObject, Runtime, objects};

fn main() -> anyhow::Result<()> {
    let root = std::path::PathBuf::from(format!("/sys/fs/bpf/hike-verifycost-{}", std::process::id()));
    let t = Instant::now();
    let rt = Runtime::init(&root, InitOptions::default())?;
    let init = t.elapsed();
    let t = Instant::now();
    let regs = rt.register_object(&ProgramObject {
        package: "v",
        version: "0",
        object_name: "vmtest",
        elf: objects::vmtest(Hook::Xdp),
        hook: Hook::Xdp,
    })?;
    let reg = t.elapsed();
    let mut total = 0u64;
    for info in libbpf_rs::query::ProgInfoIter::default() {
        if regs.iter().any(|r| r.bpf_id == info.id) {
            total += u64::from(info.verified_insns);
            println!("{:<20} verified_insns {:>7}", info.name.to_string_lossy(), info.verified_insns);
        }
    }
    println!("init {init:?}; register {} programs {reg:?}; verified insns total {total}", regs.len());
    Runtime::destroy(&root)?;
    Ok(())
}
