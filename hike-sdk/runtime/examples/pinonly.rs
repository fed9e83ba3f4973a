//! Registers the test programs under a root and leaves them pinned (for inspecting
//! the VM's code with bpftool). `cargo run -p hike-runtime --example pinonly -- ROOT`
use hike_bytecode::Hook;
use hike_runtime::{InitOptions, ProgramObject, Runtime, objects};

fn main() -> anyhow::Result<()> {
    let root = std::env::args().nth(1).ok_or_else(|| anyhow::anyhow!("usage: pinonly ROOT"))?;
    let rt = Runtime::init(std::path::Path::new(&root), InitOptions::default())?;
    for r in rt.register_object(&ProgramObject {
        package: "t",
        version: "0",
        object_name: "vmtest",
        elf: objects::vmtest(Hook::Xdp),
        hook: Hook::Xdp,
    })? {
        println!("{} {} {}", r.id, r.name, r.pin.display());
    }
    Ok(())
}
