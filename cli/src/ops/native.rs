//! Compiling chains to native programs for `ebpkg install` (hike-sdk/docs/NATIVE.md):
//! each package source holding a program the chain calls is compiled to LLVM IR
//! with the flags its object was built with (plus the SDK's native mode), and
//! hike-native links them with the chain's generated code into one object.

use std::collections::{BTreeMap, BTreeSet};
use std::ffi::OsString;
use std::time::Instant;

use ebpkg_build::Builder;
use ebpkg_deploy::{NativeBuild, NativeCompiler, NativeRequest, PlannedPackage};
use ebpkg_spec::digest::FieldHasher;
use ebpkg_spec::manifest::KernelBuild;
use ebpkg_spec::types::Sha256Digest;
use hike_bytecode::{Insn, Op, decode};
use hike_native::{ChainUnit, LinkInput, Tools};
use hike_runtime::NativeModule;

/// Compiles with the build's clang, against the same kernel types as the
/// packages' objects. Native objects are cached like the packages' objects (a
/// portable one by what it is made of, not by kernel or compiler), so a machine
/// without clang still runs a chain natively when its object was built before.
#[derive(Debug)]
pub struct ClangCompiler {
    builder: std::sync::Arc<Builder>,
    /// llvm-link and opt of the build's clang, found when a link is needed.
    tools: std::sync::OnceLock<std::result::Result<Tools, String>>,
}

impl ClangCompiler {
    /// Compiles with the command's builder (`ops::build::builder`): the
    /// toolchain and the kernel's BTF are found once, for packages and chains.
    pub fn new(builder: std::sync::Arc<Builder>) -> ClangCompiler {
        ClangCompiler { builder, tools: std::sync::OnceLock::new() }
    }

    fn tools(&self) -> std::result::Result<&Tools, String> {
        self.tools
            .get_or_init(|| {
                let toolchain = self.builder.toolchain().map_err(|e| e.to_string())?;
                Tools::for_clang(&toolchain.clang, toolchain.clang_major).map_err(|e| format!("{e:#}"))
            })
            .as_ref()
            .map_err(Clone::clone)
    }

    /// The cache key of the native object for `req` made of `modules`: the chains'
    /// bytecode, the program symbols, and each module's own key (its package,
    /// source, flags, SDK and kernel types). Reading it needs no compiler for
    /// portable packages.
    fn native_key(
        &self,
        req: &NativeRequest<'_>,
        modules: &[(&PlannedPackage, String)],
        symbols: &BTreeMap<u32, String>,
        kernel: KernelBuild,
    ) -> std::result::Result<Sha256Digest, String> {
        let mut h = FieldHasher::new();
        h.field("native-format", &NATIVE_FORMAT.to_le_bytes());
        h.field("hook", req.hook.name().as_bytes());
        h.field("chain", &req.chain.0.to_le_bytes());
        for (id, insns) in req.chains {
            h.field("chain-id", &id.to_le_bytes());
            h.field("chain-insns", &Insn::encode_all(insns));
        }
        for (id, symbol) in symbols {
            h.field("program-id", &id.to_le_bytes());
            h.field("symbol", symbol.as_bytes());
        }
        // The code hike-native generates for the chain (its license aside, which
        // the modules' sources decide): a change to the generator is a new key.
        let unit = ChainUnit { hook: req.hook, chain: req.chain.0, chains: req.chains, programs: symbols, license: "" };
        let generated = hike_native::generate(&unit).map_err(|e| e.to_string())?;
        h.field("generated", generated.source.as_bytes());
        h.field("entry", generated.entry.as_bytes());
        for (pkg, source) in modules {
            let key = self
                .builder
                .cache_key_with(
                    pkg.checksum,
                    source,
                    req.hook,
                    pkg.manifest.package.kernel.build,
                    &hike_native::MODULE_FLAGS,
                )
                .map_err(|e| e.to_string())?;
            h.field("module", &key.0);
        }
        // The chain's own module: compiled with the flags of `kernel` units.
        let own = self
            .builder
            .cache_key_with(Sha256Digest([0; 32]), "<chain>", req.hook, kernel, &hike_native::MODULE_FLAGS)
            .map_err(|e| e.to_string())?;
        h.field("chain-module", &own.0);
        Ok(h.finish())
    }
}

/// Bumped when what a cached native object is made of changes in a way its key
/// does not show (hike-native's generated code, the link steps).
const NATIVE_FORMAT: u32 = 1;

/// Largest native object read back from the cache.
const MAX_NATIVE_BYTES: u64 = ebpkg_spec::MAX_OBJECT_BYTES;

/// A cached native object and what its build said: the entry symbol and the
/// steps budget of its longest path (`<key>.native.meta` beside `<key>.native.o`),
/// each only when it matches its digest record (a mismatch is a miss and a
/// warning: the chain is linked again, or stays interpreted without clang).
fn cached_native(records: &ebpkg_build::CacheRecords, object: &std::path::Path) -> Option<(Vec<u8>, String, u32)> {
    let verified = |path: &std::path::Path, max| {
        records.lookup(path, max, |miss| tracing::warn!("{miss}; the native chain is built again")).map(|v| v.bytes)
    };
    let meta = String::from_utf8(verified(&object.with_extension("meta"), 4096)?).ok()?;
    let (entry, steps) = meta.trim_end().split_once('\n')?;
    let worst_steps = steps.parse().ok()?;
    let elf = verified(object, MAX_NATIVE_BYTES)?;
    ebpkg_build::check_bpf_object(&elf).ok()?;
    Some((elf, entry.to_owned(), worst_steps))
}

/// Writes a native object and its description into the cache, each with its
/// digest record: the description first, so a reader that finds the object
/// finds it too.
fn store_native(
    records: &ebpkg_build::CacheRecords,
    object: &std::path::Path,
    elf: &[u8],
    meta: &str,
) -> std::io::Result<()> {
    records.write(&object.with_extension("meta"), meta.as_bytes())?;
    records.write(object, elf)?;
    Ok(())
}

/// A cached IR module, when it matches its digest record.
fn cached_module(records: &ebpkg_build::CacheRecords, path: &std::path::Path) -> Option<String> {
    records
        .lookup(path, MAX_MODULE_BYTES, |miss| tracing::warn!("{miss}; the module is compiled again"))
        .and_then(|v| String::from_utf8(v.bytes).ok())
}

/// Writes an IR module into the cache with its digest record.
fn store_module(records: &ebpkg_build::CacheRecords, path: &std::path::Path, ir: &str) -> std::io::Result<()> {
    records.write(path, ir.as_bytes()).map(|_| ())
}

/// The kernel's GPL-compatible license strings (`license_is_gpl_compatible`).
const GPL_COMPATIBLE: [&str; 6] =
    ["GPL", "GPL v2", "GPL and additional rights", "Dual BSD/GPL", "Dual MIT/GPL", "Dual MPL/GPL"];

/// The string a module's `SEC("license")` variable holds, from its IR.
fn module_license(ir: &str) -> Option<String> {
    let line = ir.lines().find(|l| l.starts_with('@') && l.contains("section \"license\""))?;
    let start = line.find("c\"")? + 2;
    let rest = &line[start..];
    let end = rest.find("\\00\"").or_else(|| rest.find('"'))?;
    Some(rest[..end].to_owned())
}

/// One license for the combined program: the modules' own when they agree,
/// "GPL" when they are all GPL-compatible; otherwise none.
fn combined_license(licenses: &[String]) -> std::result::Result<String, String> {
    let distinct: BTreeSet<&str> = licenses.iter().map(String::as_str).collect();
    match distinct.len() {
        0 => Ok("GPL".into()),
        1 => Ok(licenses[0].clone()),
        _ if distinct.iter().all(|l| GPL_COMPATIBLE.contains(l)) => Ok("GPL".into()),
        _ => Err(format!(
            "its programs declare licenses ({}) that one program cannot declare together",
            distinct.into_iter().collect::<Vec<_>>().join(", ")
        )),
    }
}

/// Program ids the chain (and the chains it calls) may call.
fn called_programs(top: u32, chains: &BTreeMap<u32, Vec<Insn>>) -> BTreeSet<u32> {
    let mut seen = BTreeSet::new();
    let mut todo = vec![top];
    let mut out = BTreeSet::new();
    while let Some(c) = todo.pop() {
        if !seen.insert(c) {
            continue;
        }
        let Some(insns) = chains.get(&c) else { continue };
        let mut pc = 0;
        while pc < insns.len() {
            let Ok(op) = decode(insns, pc) else { break };
            match op {
                Op::CallProg { id, .. } => {
                    out.insert(id);
                }
                Op::CallChain { id, .. } => todo.push(id),
                _ => {}
            }
            pc += op.width();
        }
    }
    out
}

/// Largest module IR read back from the cache.
const MAX_MODULE_BYTES: u64 = 256 << 20;

impl ClangCompiler {
    /// The IR of one package source in the SDK's native mode, from the build
    /// cache or compiled into it.
    fn module(
        &self,
        hook: hike_bytecode::Hook,
        pkg: &PlannedPackage,
        source: &str,
        n: usize,
        work: &std::path::Path,
    ) -> std::result::Result<String, String> {
        let kernel = pkg.manifest.package.kernel.build;
        // IR text is only read by the LLVM that wrote it: unlike objects, a
        // module is cached per compiler, named as an extra key input.
        let toolchain = self.builder.toolchain().map_err(|e| e.to_string())?;
        let compiler = format!("<ir of {} at {}>", toolchain.clang_version, toolchain.clang.display());
        let mut extra: Vec<&str> = hike_native::MODULE_FLAGS.to_vec();
        extra.push(&compiler);
        let key = self.builder.cache_key_with(pkg.checksum, source, hook, kernel, &extra).map_err(|e| e.to_string())?;
        let cached = ebpkg_build::object_path(self.builder.cache_dir(), &key).with_extension("ll");
        if let Some(text) = cached_module(self.builder.records(), &cached) {
            return Ok(text);
        }
        let root = pkg.root.canonicalize().map_err(|e| format!("{}: {e}", pkg.root.display()))?;
        let args = self.builder.resolved_args(hook, kernel, &root).map_err(|e| e.to_string())?;
        let out = work.join(format!("src{n}.ll"));
        let ir = hike_native::compile_module(self.tools()?, &args, &root, source, &out)
            .map_err(|e| format!("{source} of {}: {e}", pkg.id))?;
        // A cache that cannot be written only costs the next install a compile.
        if let Err(e) = store_module(self.builder.records(), &cached, &ir) {
            tracing::debug!(path = %cached.display(), "not cached: {e}");
        }
        Ok(ir)
    }
}

impl NativeCompiler for ClangCompiler {
    fn compile(&self, req: &NativeRequest<'_>) -> std::result::Result<NativeBuild, String> {
        let started = Instant::now();
        let work = tempfile::Builder::new()
            .prefix(&ebpkg_build::temps::prefix())
            .tempdir()
            .map_err(|e| format!("cannot create a temporary directory: {e}"))?;
        // One module per package source, numbered from 1 in order of first use.
        let mut modules: Vec<(&PlannedPackage, String)> = Vec::new();
        let mut symbols = BTreeMap::new();
        for id in called_programs(req.chain.0, req.chains) {
            let (pkg, program) =
                req.programs.get(&id).ok_or_else(|| format!("program id {id} is not one of the deployment's"))?;
            let source = pkg
                .manifest
                .programs
                .iter()
                .find(|p| p.name.as_str() == *program && p.hook == req.hook)
                .and_then(|p| p.source.as_ref())
                .ok_or_else(|| {
                    format!("{} {program} ships only a prebuilt object; native chains need its C source", pkg.id)
                })?
                .to_string();
            // Before the native cache: a cached native object is the source's too.
            crate::ops::shipped::native_may_use_source(&self.builder, pkg, program, req.hook)?;
            let index = match modules.iter().position(|(p, s)| p.id == pkg.id && *s == source) {
                Some(i) => i + 1,
                None => {
                    modules.push((pkg, source));
                    modules.len()
                }
            };
            symbols.insert(id, hike_native::program_symbol(index, program));
        }
        let kernel = if modules.iter().any(|(p, _)| p.manifest.package.kernel.build == KernelBuild::Local) {
            KernelBuild::Local
        } else {
            KernelBuild::Portable
        };
        let key = self.native_key(req, &modules, &symbols, kernel)?;
        let cached = ebpkg_build::object_path(self.builder.cache_dir(), &key).with_extension("native.o");
        if let Some((elf, entry, worst_steps)) = cached_native(self.builder.records(), &cached) {
            tracing::debug!(chain = req.name, object = %cached.display(), "native object from the build cache");
            return Ok(NativeBuild {
                elf,
                entry,
                modules: native_modules(&modules),
                worst_steps,
                build_time: started.elapsed(),
            });
        }
        let tools = self.tools()?;
        // The modules compile in parallel, each at most once per cache key.
        let dir = work.path();
        let irs: Vec<std::result::Result<String, String>> = std::thread::scope(|scope| {
            let handles: Vec<_> = modules
                .iter()
                .enumerate()
                .map(|(i, (pkg, source))| scope.spawn(move || self.module(req.hook, pkg, source, i + 1, dir)))
                .collect();
            handles.into_iter().map(|h| h.join().unwrap_or_else(|_| Err("a module compile panicked".into()))).collect()
        });
        let irs: Vec<String> = irs.into_iter().collect::<std::result::Result<_, _>>()?;
        let licenses: Vec<String> = irs.iter().filter_map(|ir| module_license(ir)).collect();
        let irs: Vec<String> = irs.iter().enumerate().map(|(i, ir)| hike_native::prefix_module(ir, i + 1)).collect();
        let license = combined_license(&licenses)?;
        let unit =
            ChainUnit { hook: req.hook, chain: req.chain.0, chains: req.chains, programs: &symbols, license: &license };
        let generated = hike_native::generate(&unit).map_err(|e| e.to_string())?;
        // The chain's own module needs the SDK and kernel types like any source:
        // the kernel's own when a package it links asks for them.
        let args: Vec<OsString> =
            self.builder.resolved_args(req.hook, kernel, work.path()).map_err(|e| e.to_string())?;
        let elf = hike_native::link(
            tools,
            &LinkInput {
                chain_source: &generated.source,
                entry: &generated.entry,
                modules: &irs,
                args: &args,
                workdir: work.path(),
            },
        )
        .map_err(|e| e.to_string())?;
        tracing::debug!(chain = req.name, modules = modules.len(), "compiled natively");
        // A cache that cannot be written only costs the next install a link.
        let meta = format!("{}\n{}\n", generated.entry, generated.worst.steps);
        if let Err(e) = store_native(self.builder.records(), &cached, &elf, &meta) {
            tracing::debug!(path = %cached.display(), "not cached: {e}");
        }
        Ok(NativeBuild {
            elf,
            entry: generated.entry,
            modules: native_modules(&modules),
            worst_steps: generated.worst.steps,
            build_time: started.elapsed(),
        })
    }
}

fn native_modules(modules: &[(&PlannedPackage, String)]) -> Vec<NativeModule> {
    modules.iter().map(|(p, _)| NativeModule { package: p.name().to_owned(), version: p.version() }).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn licenses_combine_like_the_kernel_reads_them() {
        let l = |v: &[&str]| v.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        assert_eq!(combined_license(&l(&["GPL", "GPL"])), Ok("GPL".into()));
        assert_eq!(combined_license(&l(&["Dual BSD/GPL", "GPL"])), Ok("GPL".into()));
        assert_eq!(combined_license(&l(&["Proprietary"])), Ok("Proprietary".into()));
        assert!(combined_license(&l(&["Proprietary", "GPL"])).is_err());
        assert_eq!(
            module_license("@LICENSE = dso_local global [4 x i8] c\"GPL\\00\", section \"license\", align 1"),
            Some("GPL".into())
        );
    }
}
