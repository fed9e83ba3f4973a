//! Compiling chains to native programs for `ebpkg install` (hike-sdk/docs/NATIVE.md):
//! each package source holding a program the chain calls is compiled to LLVM IR
//! with the flags its object was built with (plus the SDK's native mode), and
//! hike-native links them with the chain's generated code into one object.

use std::collections::{BTreeMap, BTreeSet};
use std::ffi::OsString;
use std::num::NonZeroUsize;
use std::time::Instant;

use anyhow::Result;
use ebpkg_build::{Btf, Builder, Toolchain};
use ebpkg_deploy::{NativeBuild, NativeCompiler, NativeRequest, PlannedPackage};
use hike_bytecode::{Insn, Op, decode};
use hike_native::{ChainUnit, LinkInput, Tools};
use hike_runtime::NativeModule;

use crate::Ctx;
use crate::ops::build::BuildOptions;

/// Compiles with the build's clang, against the same BTF as the packages' objects.
#[derive(Debug)]
pub struct ClangCompiler {
    builder: Builder,
    tools: Tools,
}

/// What stands in when the tools are missing: every chain stays interpreted
/// and says why.
#[derive(Debug)]
pub struct Unavailable(pub String);

impl NativeCompiler for Unavailable {
    fn compile(&self, _: &NativeRequest<'_>) -> std::result::Result<NativeBuild, String> {
        Err(self.0.clone())
    }
}

impl ClangCompiler {
    pub fn new(ctx: &Ctx, opts: &BuildOptions) -> Result<ClangCompiler> {
        let toolchain = Toolchain::detect(&ctx.config.tools)?;
        let tools = Tools::for_clang(&toolchain.clang, toolchain.clang_major)?;
        let btf = match &opts.btf {
            Some(p) => Btf::from_file(p),
            None => Btf::kernel(),
        }?;
        let jobs = ctx.config.jobs.and_then(NonZeroUsize::new);
        Ok(ClangCompiler { builder: Builder::new(ctx.config.cache_dir.clone(), toolchain, btf, jobs), tools })
    }
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
        let key = self.builder.cache_key_with(pkg.checksum, source, hook, &hike_native::MODULE_FLAGS);
        let cached = ebpkg_build::object_path(self.builder.cache_dir(), &key).with_extension("ll");
        if let Ok(bytes) = ebpkg_fs::read(&cached, MAX_MODULE_BYTES)
            && let Ok(text) = String::from_utf8(bytes)
        {
            return Ok(text);
        }
        let root = pkg.root.canonicalize().map_err(|e| format!("{}: {e}", pkg.root.display()))?;
        let args = self.builder.resolved_args(hook, &root).map_err(|e| e.to_string())?;
        let out = work.join(format!("src{n}.ll"));
        let ir = hike_native::compile_module(&self.tools, &args, &root, source, &out)
            .map_err(|e| format!("{source} of {}: {e}", pkg.id))?;
        if let Some(dir) = cached.parent() {
            let _ = std::fs::create_dir_all(dir);
        }
        // A cache that cannot be written only costs the next install a compile.
        if let Err(e) = ebpkg_fs::write_atomic(&cached, ir.as_bytes(), 0o644) {
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
            let index = match modules.iter().position(|(p, s)| p.id == pkg.id && *s == source) {
                Some(i) => i + 1,
                None => {
                    modules.push((pkg, source));
                    modules.len()
                }
            };
            symbols.insert(id, hike_native::program_symbol(index, program));
        }
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
        // The chain's own module needs the SDK and vmlinux.h like any source.
        let args: Vec<OsString> = self.builder.resolved_args(req.hook, work.path()).map_err(|e| e.to_string())?;
        let elf = hike_native::link(
            &self.tools,
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
        Ok(NativeBuild {
            elf,
            entry: generated.entry,
            modules: modules
                .iter()
                .map(|(p, _)| NativeModule { package: p.name().to_owned(), version: p.version() })
                .collect(),
            worst_steps: generated.worst.steps,
            build_time: started.elapsed(),
        })
    }
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
