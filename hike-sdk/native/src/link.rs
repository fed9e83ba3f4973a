//! From package sources and a generated chain to one object: every package
//! source is compiled to LLVM IR with `-DHIKE_NATIVE_BUILD` (program bodies
//! become `__hike_native_<name>` functions), the external symbols of module `i`
//! are prefixed `__hike_m<i>_` so that packages cannot clash (two packages may
//! both have a map called `counters`), the modules are linked with `llvm-link`,
//! everything but the entry program and the maps is internalized, and clang
//! optimizes the whole (inlining every program body) and emits the object.
//!
//! The prefix is also how the runtime finds each map's pinned instance:
//! `__hike_m3_ip6_hset` is package module 3's map `ip6_hset`.

use std::collections::BTreeSet;
use std::ffi::{OsStr, OsString};
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

use crate::error::{NativeError, Result};

/// Flags that make clang emit a module for linking: the SDK's native mode, IR
/// text, and no optimization yet (it runs once, on the linked whole, where it
/// can inline across packages).
pub const MODULE_FLAGS: [&str; 5] = ["-DHIKE_NATIVE_BUILD", "-Xclang", "-disable-llvm-passes", "-S", "-emit-llvm"];

/// The LLVM tools matching a clang.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Tools {
    pub clang: PathBuf,
    pub llvm_link: PathBuf,
    pub opt: PathBuf,
}

impl Tools {
    /// The tools matching `clang` (a path, or a name on `PATH`), whose major
    /// version is read from `clang --version`.
    pub fn detect(clang: &Path) -> Result<Tools> {
        let out = run_tool(Command::new(clang).arg("--version"), "clang", "--version")?;
        let text = String::from_utf8_lossy(&out.stdout);
        let major = text
            .split("version ")
            .nth(1)
            .and_then(|v| v.split('.').next())
            .and_then(|m| m.trim().parse().ok())
            .ok_or_else(|| NativeError::Tool {
                tool: "clang".into(),
                status: "no version".into(),
                what: "--version".into(),
                stderr: text.lines().next().unwrap_or("").to_owned(),
            })?;
        Tools::for_clang(clang, major)
    }

    /// `llvm-link` and `opt` of clang's major version: `llvm-link-<major>` or,
    /// when that is not on `PATH`, `llvm-link` if it reports the same major
    /// version (IR text is only read by the LLVM that wrote it).
    pub fn for_clang(clang: &Path, major: u32) -> Result<Tools> {
        let find = |tool: &str| -> Result<PathBuf> {
            let versioned = format!("{tool}-{major}");
            if let Some(p) = on_path(&versioned) {
                return Ok(p);
            }
            if let Some(p) = on_path(tool) {
                let out = run_tool(Command::new(&p).arg("--version"), tool, "--version")?;
                let text = String::from_utf8_lossy(&out.stdout);
                if text.contains(&format!("LLVM version {major}.")) {
                    return Ok(p);
                }
            }
            Err(NativeError::Spawn {
                tool: versioned.clone(),
                cause: std::io::Error::new(
                    std::io::ErrorKind::NotFound,
                    format!(
                        "no {versioned} (or {tool} of LLVM {major}) on PATH; install the `llvm` package matching clang {major}"
                    ),
                ),
            })
        };
        Ok(Tools { clang: clang.to_owned(), llvm_link: find("llvm-link")?, opt: find("opt")? })
    }
}

fn on_path(name: &str) -> Option<PathBuf> {
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path).map(|d| d.join(name)).find(|p| p.is_file())
}

/// The symbol of program `name`'s native body in package module `module` (≥ 1).
pub fn program_symbol(module: usize, name: &str) -> String {
    format!("{}__hike_native_{name}", module_prefix(module))
}

fn module_prefix(module: usize) -> String {
    format!("__hike_m{module}_")
}

/// Which package module a map of the linked object came from, and its name
/// there; `None` for the chain's own maps (module 0: the VM's).
pub fn map_origin(name: &str) -> Option<(usize, &str)> {
    let rest = name.strip_prefix("__hike_m")?;
    let (digits, tail) = rest.split_once('_')?;
    let module = digits.parse().ok()?;
    Some((module, tail))
}

/// Runs clang on one source in `dir` with `args` and [`MODULE_FLAGS`], and
/// returns the module's IR text.
pub fn compile_module(tools: &Tools, args: &[OsString], dir: &Path, source: &str, out: &Path) -> Result<String> {
    let mut cmd = Command::new(&tools.clang);
    cmd.args(args).args(MODULE_FLAGS).arg("-c").arg(source).arg("-o").arg(out).current_dir(dir).env("PWD", dir);
    run_tool(&mut cmd, "clang", source)?;
    read_text(out)
}

/// Largest intermediate file read back (IR text, the object): a package's
/// sources decide their size, so reads are bounded like every other read.
pub const MAX_INTERMEDIATE_BYTES: u64 = 256 << 20;

fn read_bytes(path: &Path) -> Result<Vec<u8>> {
    let io = |cause| NativeError::Io { action: "read", path: path.to_owned(), cause };
    let len = std::fs::metadata(path).map_err(io)?.len();
    if len > MAX_INTERMEDIATE_BYTES {
        return Err(io(std::io::Error::other(format!(
            "{len} bytes, more than the {MAX_INTERMEDIATE_BYTES} a native chain's intermediate file may have"
        ))));
    }
    std::fs::read(path).map_err(io)
}

fn read_text(path: &Path) -> Result<String> {
    String::from_utf8(read_bytes(path)?).map_err(|_| NativeError::Io {
        action: "read",
        path: path.to_owned(),
        cause: std::io::Error::other("not UTF-8"),
    })
}

/// Prefixes every external symbol module `module` defines, in its IR text and
/// in the debug info names BTF is made from.
pub fn prefix_module(ir: &str, module: usize) -> String {
    let prefix = module_prefix(module);
    let defined = external_definitions(ir);
    let mut out = String::with_capacity(ir.len() + ir.len() / 8);
    let mut rest = ir;
    // Quoted text (string constants, metadata strings, section names) is copied
    // as it is: IR escapes a quote inside one as \22, so quotes pair up.
    while let Some(at) = rest.find(['@', '"']) {
        out.push_str(&rest[..=at]);
        let quote = rest.as_bytes()[at] == b'"';
        rest = &rest[at + 1..];
        if quote {
            let end = rest.find('"').map_or(rest.len(), |e| e + 1);
            out.push_str(&rest[..end]);
            rest = &rest[end..];
            continue;
        }
        let len = rest.find(|c: char| !is_ident_char(c)).unwrap_or(rest.len());
        let ident = &rest[..len];
        if defined.contains(ident) {
            out.push_str(&prefix);
        }
        out.push_str(ident);
        rest = &rest[len..];
    }
    out.push_str(rest);
    for name in &defined {
        out = out.replace(
            &format!("DIGlobalVariable(name: \"{name}\","),
            &format!("DIGlobalVariable(name: \"{prefix}{name}\","),
        );
    }
    out
}

fn is_ident_char(c: char) -> bool {
    c.is_ascii_alphanumeric() || matches!(c, '_' | '.' | '$' | '-')
}

/// Names of the global variables and functions a module defines with external
/// linkage (what another module could clash with).
fn external_definitions(ir: &str) -> BTreeSet<String> {
    let mut out = BTreeSet::new();
    for line in ir.lines() {
        let name = if let Some(rest) = line.strip_prefix('@') {
            let Some((name, def)) = rest.split_once(" = ") else { continue };
            let linkage = def.split_whitespace().next().unwrap_or("");
            if matches!(linkage, "internal" | "private" | "appending") || name.starts_with("llvm.") {
                continue;
            }
            name
        } else if let Some(rest) = line.strip_prefix("define ") {
            let first = rest.split_whitespace().next().unwrap_or("");
            if matches!(first, "internal" | "private") {
                continue;
            }
            let Some(at) = rest.find('@') else { continue };
            let tail = &rest[at + 1..];
            &tail[..tail.find('(').unwrap_or(tail.len())]
        } else {
            continue;
        };
        if !name.is_empty() && !name.starts_with('"') {
            out.insert(name.to_owned());
        }
    }
    out
}

/// Names of the globals the object must keep: the maps and the license.
fn kept_globals(ir: &str) -> Vec<String> {
    ir.lines()
        .filter(|l| l.starts_with('@') && (l.contains("section \".maps\"") || l.contains("section \"license\"")))
        .filter_map(|l| l[1..].split_once(" = ").map(|(n, _)| n.to_owned()))
        .collect()
}

/// What to link.
pub struct LinkInput<'a> {
    /// The generated chain source (module 0).
    pub chain_source: &'a str,
    /// The entry program's name.
    pub entry: &'a str,
    /// IR text of package modules 1, 2, …, already prefixed.
    pub modules: &'a [String],
    /// Compiler arguments for the chain's source: the SDK's flags, target arch,
    /// include directories for the SDK and `vmlinux.h`.
    pub args: &'a [OsString],
    /// A directory of one's own for the intermediate files.
    pub workdir: &'a Path,
}

/// Links and optimizes; returns the object.
pub fn link(tools: &Tools, input: &LinkInput<'_>) -> Result<Vec<u8>> {
    let dir = input.workdir;
    let write = |name: &str, text: &str| -> Result<PathBuf> {
        let path = dir.join(name);
        std::fs::write(&path, text).map_err(|cause| NativeError::Io { action: "write", path: path.clone(), cause })?;
        Ok(path)
    };
    write("chain.c", input.chain_source)?;
    compile_module(tools, input.args, dir, "chain.c", &dir.join("m0.ll"))?;
    let mut files = vec![OsString::from("m0.ll")];
    for (i, ir) in input.modules.iter().enumerate() {
        let name = format!("m{}.ll", i + 1);
        write(&name, ir)?;
        files.push(name.into());
    }
    run_tool(
        Command::new(&tools.llvm_link).args(&files).args(["-S", "-o", "linked.ll"]).current_dir(dir),
        "llvm-link",
        "the chain's modules",
    )?;
    let text = read_text(&dir.join("linked.ll"))?;
    let mut public = vec![input.entry.to_owned()];
    public.extend(kept_globals(&text));
    run_tool(
        Command::new(&tools.opt)
            .args(["-S", "-passes=internalize"])
            .arg(format!("-internalize-public-api-list={}", public.join(",")))
            .args(["linked.ll", "-o", "internal.ll"])
            .current_dir(dir),
        "opt",
        "the linked chain",
    )?;
    run_tool(
        Command::new(&tools.clang)
            .args(hike_sdk_headers::CFLAGS)
            .args(["-c", "internal.ll", "-o", "native.o"])
            .current_dir(dir),
        "clang",
        "the linked chain",
    )?;
    read_bytes(&dir.join("native.o"))
}

fn run_tool(cmd: &mut Command, tool: &str, what: &str) -> Result<Output> {
    let out = cmd.stdin(Stdio::null()).output().map_err(|cause| NativeError::Spawn { tool: tool.to_owned(), cause })?;
    if !out.status.success() {
        let stderr = String::from_utf8_lossy(&out.stderr);
        // The first errors say what is wrong; thousands of lines do not help.
        let stderr: String = stderr.lines().take(40).collect::<Vec<_>>().join("\n");
        return Err(NativeError::Tool {
            tool: tool.to_owned(),
            status: out.status.to_string(),
            what: what.to_owned(),
            stderr,
        });
    }
    Ok(out)
}

/// `OsStr` of a path argument, for callers building `args`.
pub fn arg(s: impl AsRef<OsStr>) -> OsString {
    s.as_ref().to_owned()
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    const IR: &str = r#"@LICENSE = dso_local global [4 x i8] c"GPL\00", section "license", align 1, !dbg !0
@.str = private constant [11 x i8] c"@hike_state", align 1
@hike_state = dso_local global %struct.anon.1 zeroinitializer, section ".maps", align 8, !dbg !81
@helper.x = internal global i32 0
@bpf_map_lookup_elem = internal global i8* (i8*, i8*)* inttoptr (i64 1 to i8* (i8*, i8*)*), align 8
@llvm.compiler.used = appending global [2 x i8*] [i8* @LICENSE, i8* bitcast (%struct.anon.1* @hike_state to i8*)], section "llvm.metadata"
define dso_local i32 @__hike_native_monitor(%struct.xdp_md* %0) #0 !dbg !184 {
  %x = load i8* (i8*, i8*)*, i8* (i8*, i8*)** @bpf_map_lookup_elem
  %y = call i8* %x(i8* bitcast (%struct.anon.1* @hike_state to i8*), i8* null)
  ret i32 0
}
define internal i32 @__hike_body_monitor(%struct.xdp_md* %0) {
  ret i32 0
}
!82 = distinct !DIGlobalVariable(name: "hike_state", scope: !2, file: !20, line: 54, type: !83, isLocal: false, isDefinition: true)
!83 = distinct !DIGlobalVariable(name: "hike_state_other", scope: !2)
"#;

    #[test]
    fn prefixes_external_definitions_only() {
        let out = prefix_module(IR, 3);
        assert!(out.contains("@__hike_m3_LICENSE = dso_local global"));
        assert!(out.contains("@__hike_m3_hike_state = dso_local"));
        assert!(out.contains("bitcast (%struct.anon.1* @__hike_m3_hike_state to i8*), i8* null"));
        assert!(out.contains("define dso_local i32 @__hike_m3___hike_native_monitor("));
        assert!(out.contains("@helper.x = internal"), "internal symbols keep their names: llvm-link renames clashes");
        assert!(out.contains("@bpf_map_lookup_elem = internal"));
        assert!(out.contains("define internal i32 @__hike_body_monitor("));
        assert!(out.contains("@llvm.compiler.used = appending"));
        assert!(out.contains("c\"@hike_state\""), "strings are left alone");
        assert!(out.contains("DIGlobalVariable(name: \"__hike_m3_hike_state\","));
        assert!(out.contains("DIGlobalVariable(name: \"hike_state_other\""), "only whole names are renamed");
        assert_eq!(program_symbol(3, "monitor"), "__hike_m3___hike_native_monitor");
    }

    #[test]
    fn map_origins() {
        assert_eq!(map_origin("__hike_m3_ip6_hset"), Some((3, "ip6_hset")));
        assert_eq!(map_origin("__hike_m12_hike_state"), Some((12, "hike_state")));
        assert_eq!(map_origin("hike_state"), None);
        assert_eq!(map_origin("__hike_mx_y"), None);
        assert_eq!(kept_globals(IR), vec!["LICENSE".to_owned(), "hike_state".to_owned()]);
    }
}
