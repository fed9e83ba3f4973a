//! Native programs of chains over the runtime's own test programs
//! (`bpf/test/*.bpf.c`), for kernel tests and benchmarks (feature
//! `test-objects`): the sources are compiled to modules as ebpkg compiles a
//! package's, against the UAPI headers the test objects are built with.

use std::collections::BTreeMap;
use std::ffi::OsString;
use std::path::{Path, PathBuf};

use hike_bytecode::{Hook, Insn};
use hike_native::{ChainUnit, Generated, LinkInput, Tools};

use crate::{ChainId, NativeInstalled, NativeModule, NativeObject, Runtime};

/// Compiles chains over test-program modules into native programs.
pub struct TestNative {
    tools: Tools,
    args: Vec<OsString>,
    hook: Hook,
    work: PathBuf,
    modules: Vec<String>,
    packages: Vec<NativeModule>,
}

fn bpf_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../bpf")
}

impl TestNative {
    /// A builder for `hook`, with clang from `PATH` (or `HIKE_CLANG`).
    pub fn new(hook: Hook) -> Result<TestNative, String> {
        let clang = std::env::var_os("HIKE_CLANG").unwrap_or_else(|| "clang".into());
        let tools = Tools::detect(Path::new(&clang)).map_err(|e| e.to_string())?;
        let mut args: Vec<OsString> = hike_sdk_headers::CFLAGS.iter().map(OsString::from).collect();
        args.push(format!("-D__TARGET_ARCH_{}", target_arch()).into());
        if hook == Hook::Tc {
            args.push("-DHIKE_HOOK_TC".into());
        }
        let multiarch = Path::new("/usr/include").join(format!("{}-linux-gnu", std::env::consts::ARCH));
        let mut includes = vec![hike_sdk_headers::include_dir().to_owned(), bpf_dir().join("uapi")];
        if multiarch.is_dir() {
            includes.push(multiarch);
        }
        for dir in includes {
            args.push("-I".into());
            args.push(dir.into());
        }
        let work = std::env::temp_dir().join(format!(
            "hike-native-test-{}-{}",
            std::process::id(),
            std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_nanos())
        ));
        std::fs::create_dir_all(&work).map_err(|e| format!("{}: {e}", work.display()))?;
        Ok(TestNative { tools, args, hook, work, modules: Vec::new(), packages: Vec::new() })
    }

    /// Adds `bpf/<source>` as the module of the programs registered as
    /// `package@version`; returns its module number.
    pub fn add_module(&mut self, source: &str, package: &str, version: &str) -> Result<usize, String> {
        let n = self.modules.len() + 1;
        let ir = hike_native::compile_module(
            &self.tools,
            &self.args,
            &bpf_dir(),
            source,
            &self.work.join(format!("m{n}.ll")),
        )
        .map_err(|e| e.to_string())?;
        self.modules.push(hike_native::prefix_module(&ir, n));
        self.packages.push(NativeModule { package: package.to_owned(), version: version.to_owned() });
        Ok(n)
    }

    /// Generates the chain's code; `programs` gives each program id's (module, name).
    pub fn generate(
        &self,
        chain: ChainId,
        chains: &BTreeMap<u32, Vec<Insn>>,
        programs: &BTreeMap<u32, (usize, String)>,
    ) -> Result<Generated, String> {
        let symbols = programs.iter().map(|(id, (m, name))| (*id, hike_native::program_symbol(*m, name))).collect();
        let unit = ChainUnit { hook: self.hook, chain: chain.0, chains, programs: &symbols, license: "GPL" };
        hike_native::generate(&unit).map_err(|e| e.to_string())
    }

    /// The package version of each module, module 1 first.
    pub fn modules(&self) -> &[NativeModule] {
        &self.packages
    }

    /// Compiles chain `chain`: the object and what generating it found.
    pub fn build(
        &self,
        chain: ChainId,
        chains: &BTreeMap<u32, Vec<Insn>>,
        programs: &BTreeMap<u32, (usize, String)>,
    ) -> Result<(Vec<u8>, Generated), String> {
        let generated = self.generate(chain, chains, programs)?;
        let dir = self.work.join(format!("chain{}", chain.0));
        std::fs::create_dir_all(&dir).map_err(|e| format!("{}: {e}", dir.display()))?;
        let elf = hike_native::link(
            &self.tools,
            &LinkInput {
                chain_source: &generated.source,
                entry: &generated.entry,
                modules: &self.modules,
                args: &self.args,
                workdir: &dir,
            },
        )
        .map_err(|e| format!("{e}\n{}", generated.source))?;
        Ok((elf, generated))
    }

    /// Compiles chain `chain` and puts it in its slot.
    pub fn install(
        &self,
        rt: &Runtime,
        chain: ChainId,
        chains: &BTreeMap<u32, Vec<Insn>>,
        programs: &BTreeMap<u32, (usize, String)>,
    ) -> Result<NativeInstalled, String> {
        let (elf, generated) = self.build(chain, chains, programs)?;
        rt.install_native(&NativeObject { chain, entry: &generated.entry, elf: &elf, modules: &self.packages })
            .map_err(|e| format!("{e}\n{}", generated.source))
    }
}

impl Drop for TestNative {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.work);
    }
}

fn target_arch() -> &'static str {
    match std::env::consts::ARCH {
        "aarch64" => "arm64",
        "riscv64" => "riscv",
        "s390x" => "s390",
        "powerpc64" => "powerpc",
        _ => "x86",
    }
}
