//! `ebpkg new` and `ebpkg init`: a package to start from — a chain project by
//! default, or a package of HIKe programs with a test.

use std::path::{Path, PathBuf};

use anyhow::{Context, Result};
use ebpkg_spec::PackageName;
use ebpkg_spec::manifest::MANIFEST_FILE;

use crate::Ctx;
use crate::exit::{Failure, fail};

/// What a new package is.
pub struct NewOptions {
    /// A package of HIKe programs (C, with a test) instead of a chain project.
    pub program: bool,
    /// The package's name (default: the directory's name).
    pub name: Option<String>,
}

/// Creates a package in `path`, which must not exist yet.
pub fn new(ctx: &Ctx, path: &Path, opts: &NewOptions) -> Result<Created> {
    if path.exists() {
        return Err(fail(
            Failure::Usage,
            format!("{} already exists; use `ebpkg init` inside it instead", path.display()),
        ));
    }
    let name = package_name(path, opts.name.as_deref())?;
    std::fs::create_dir_all(path).with_context(|| format!("cannot create {}", path.display()))?;
    create(ctx, path, name, opts.program)
}

/// Creates a package in the current directory, which must have no manifest yet.
pub fn init(ctx: &Ctx, opts: &NewOptions) -> Result<Created> {
    let dir = std::env::current_dir().context("cannot read the current directory")?;
    if dir.join(MANIFEST_FILE).exists() {
        return Err(fail(Failure::Usage, format!("{} already has an {MANIFEST_FILE}", dir.display())));
    }
    let name = package_name(&dir, opts.name.as_deref())?;
    create(ctx, &dir, name, opts.program)
}

/// A package just created.
pub struct Created {
    pub name: PackageName,
    pub dir: PathBuf,
    pub program: bool,
    /// The registry remembered in the project's config file, when one was.
    pub remembered_registry: Option<ebpkg_spec::RegistryId>,
}

fn create(ctx: &Ctx, dir: &Path, name: PackageName, program: bool) -> Result<Created> {
    if program {
        let item = name.as_str().replace('-', "_");
        write_new(&dir.join(MANIFEST_FILE), &program_manifest(name.as_str(), &item))?;
        write_new(&dir.join(format!("src/{item}.bpf.c")), &program_source(&item))?;
        write_new(&dir.join(format!("tests/{item}.test.toml")), &program_test(&item))?;
    } else {
        write_new(&dir.join(MANIFEST_FILE), &chain_manifest(name.as_str()))?;
        write_new(&dir.join("chains/main.eclat"), CHAIN_TEMPLATE)?;
    }
    // The manifest must be valid as written: check it like any other.
    ebpkg_spec::Manifest::load(&dir.join(MANIFEST_FILE)).map_err(crate::project::manifest_error)?;
    // A registry given for this command (or by the environment) is remembered
    // with the project, so that it works in a new shell and on other machines.
    let mut remembered_registry = None;
    let builtin = crate::config::builtin_registry()?;
    if ctx.config.registry != builtin && ctx.config.project_file.is_none() {
        let text = format!(
            "# The registry this project's dependencies come from (commit this file; tokens stay in `ebpkg login`).\n\
             [registry]\ndefault = {}\n",
            toml::Value::String(ctx.config.registry.to_string())
        );
        write_new(&dir.join(crate::config::PROJECT_CONFIG), &text)?;
        remembered_registry = Some(ctx.config.registry.clone());
    }
    Ok(Created { name, dir: dir.to_path_buf(), program, remembered_registry })
}

fn package_name(dir: &Path, name: Option<&str>) -> Result<PackageName> {
    let raw = match name {
        Some(n) => n.to_owned(),
        None => dir
            .canonicalize()
            .unwrap_or_else(|_| dir.to_owned())
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default(),
    };
    PackageName::new(&raw).map_err(|e| {
        fail(
            Failure::Usage,
            format!(
                "`{raw}` cannot be a package name: {e}{}{}",
                e.help().map(|h| format!("; {h}")).unwrap_or_default(),
                if name.is_none() { "; give one with --name" } else { "" }
            ),
        )
    })
}

/// Writes a file that must not exist yet.
fn write_new(path: &Path, text: &str) -> Result<()> {
    if path.exists() {
        return Err(fail(Failure::Usage, format!("{} already exists; not overwriting it", path.display())));
    }
    if let Some(parent) = path.parent() {
        std::fs::create_dir_all(parent).with_context(|| format!("cannot create {}", parent.display()))?;
    }
    std::fs::write(path, text).with_context(|| format!("cannot write {}", path.display()))
}

fn chain_manifest(name: &str) -> String {
    format!(
        r#"[package]
name = "{name}"
version = "0.1.0"

[dependencies]

[[chain]]
name = "main"
source = "chains/main.eclat"
"#
    )
}

const CHAIN_TEMPLATE: &str = "\
# The chains this project installs. Import programs and loaders of its
# dependencies (`ebpkg add <package>`), write chains that call them, and say how
# packets reach the chains. The language: hike-sdk/docs/CHAINS.md.
#
# from prog.net import hike_drop, hike_pass
# from loaders.basic import ip6_sc
#
# ip6_sc[ip6_sc_map] = { (0): (main) }
# ip6_sc.attach('DEVNAME', 'xdp')       # sudo ebpkg install --set DEVNAME=eth0
#
# def main():
#     hike_pass()
#     return 0
";

fn program_manifest(name: &str, item: &str) -> String {
    format!(
        r#"[package]
name = "{name}"
version = "0.1.0"
description = "Counts packets per CPU"

[[program]]
name = "{item}"
source = "src/{item}.bpf.c"
hook = "xdp"
ends-packet = "never"
description = "Adds `step` to this CPU's packet counter and returns the new count"
returns = {{ type = "u64", doc = "the count on this CPU after this packet" }}

[[program.arg]]
name = "step"
type = "u64"
doc = "how much to add"

[[program.map]]
name = "{item}_count"
doc = "the count, per CPU"
"#
    )
}

fn program_source(item: &str) -> String {
    format!(
        r#"// SPDX-License-Identifier: GPL-2.0-only
/* A HIKe program: chains call it like a function, `{item}(1)`. */
#include <hike/program.h>

struct {{
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, __u64);
}} {item}_count SEC(".maps");

HIKE_PROGRAM({item}, HIKE_ARG(u64, step))
{{
	__u32 zero = 0;
	__u64 *n = bpf_map_lookup_elem(&{item}_count, &zero);

	if (!n)
		return hike_result(0);
	*n += step;
	return hike_result(*n);
}}

char LICENSE[] SEC("license") = "GPL";
"#
    )
}

fn program_test(item: &str) -> String {
    format!(
        r#"# Run with `sudo ebpkg test`; the format is in `ebpkg test --help`.

[[case]]
name = "adds the step to the count"
program = "{item}"
args = [3]
packet = "02 00 00 00 00 02 02 00 00 00 00 01 08 00 45 00 00 14 00 00 00 00 40 11 00 00 0a 00 00 01 0a 00 00 02"

[[case.setup]]
map = "{item}_count"
key = "00000000"
value = "0400000000000000"

[case.expect]
returned = true
result = 7
verdict = "pass"

[[case.expect.map]]
map = "{item}_count"
key = "00000000"
value = "0700000000000000"
"#
    )
}
