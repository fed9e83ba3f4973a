//! `ebpkg test`: a package's tests (`tests/*.test.toml`) run in the kernel. The
//! package's programs are built and registered in a HIKe root of the run's own;
//! each case calls one program from a one-call chain with BPF_PROG_TEST_RUN and
//! checks the verdict, the result, the packet and map contents — once with the
//! chain interpreted by the VM, and once with it compiled natively with the
//! program's body (hike-sdk/docs/NATIVE.md), so both tiers pass the same tests.
//!
//! ```toml
//! [[case]]
//! name = "counts the packet"
//! program = "count_packets"        # a program of this package
//! args = [1]                       # up to 4 integers
//! packet = "02 00 00 00 00 02 ..." # hex (spaces allowed), or pcap = "tests/x.pcap" (+ pcap-index)
//! repeat = 3                       # run it 3 times (default 1; rewrites of the packet accumulate)
//! time-ns = 5000000000             # hike_ktime_ns() during the run (default 1000 s, frozen)
//!
//! [[case.setup]]                   # map entries written before the run
//! map = "counters"
//! key = "00000000"
//! value = "0500000000000000"
//!
//! [case.expect]
//! verdict = "pass"                 # xdp: aborted drop pass tx redirect; tc: ok shot redirect; or a number
//! returned = true                  # the program returned to the chain (false: it ended the packet)
//! result = 8                       # what it returned
//! packet = "02 00 ..."             # the packet afterwards
//!
//! [[case.expect.map]]
//! map = "counters"
//! key = "00000000"
//! value = "0800000000000000"       # or `absent = true`
//!
//! [[case.then]]                    # another run, maps kept; unset args and packet are the case's, repeat is 1
//! advance-ns = 1000000000          # or time-ns
//! [case.then.expect]
//! result = 9
//! ```

use std::path::{Path, PathBuf};

use anyhow::{Context, Result};
use hike_bytecode::Hook;
use hike_runtime::{ChainSpec, Clock, ProgramObject, Runtime};
use serde::Deserialize;

use crate::Ctx;
use crate::exit::{Failure, fail};
use crate::ops::build::{BuildInput, BuildOptions};
use crate::project::Project;

/// What the chain leaves in r9 when the program returned to it.
const RETURNED: u64 = 0x6869_6b65;

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct TestFile {
    #[serde(default, rename = "case")]
    cases: Vec<Case>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
struct Case {
    name: String,
    program: String,
    #[serde(default)]
    args: Vec<i64>,
    packet: Option<String>,
    pcap: Option<String>,
    #[serde(default)]
    pcap_index: usize,
    #[serde(default = "one")]
    repeat: u32,
    time_ns: Option<u64>,
    #[serde(default)]
    setup: Vec<MapEntry>,
    #[serde(default)]
    expect: Expect,
    /// Further runs of the same case, maps kept: `[[case.then]]`.
    #[serde(default)]
    then: Vec<Step>,
}

/// A later run of a case; what it leaves out is the case's.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
struct Step {
    args: Option<Vec<i64>>,
    packet: Option<String>,
    pcap: Option<String>,
    pcap_index: Option<usize>,
    repeat: Option<u32>,
    /// The clock for this run; or `advance-ns` past the previous run's.
    time_ns: Option<u64>,
    advance_ns: Option<u64>,
    #[serde(default)]
    setup: Vec<MapEntry>,
    #[serde(default)]
    expect: Expect,
}

/// One test run, resolved.
struct Run<'a> {
    args: &'a [i64],
    packet: Vec<u8>,
    repeat: u32,
    time_ns: u64,
    setup: &'a [MapEntry],
    expect: &'a Expect,
}

/// Largest test file read.
const MAX_TEST_FILE_BYTES: u64 = 1024 * 1024;
/// Largest packet capture a case may name.
const MAX_PCAP_BYTES: u64 = 64 * 1024 * 1024;
/// Most runs (cases and their `then` steps) one `ebpkg test` makes, and most
/// repetitions of one run and of all runs together: a test suite that would keep
/// the kernel busy for minutes is a mistake, refused before anything runs.
const MAX_RUNS: usize = 10_000;
const MAX_REPEAT: u32 = 1_000_000;
const MAX_TOTAL_REPEATS: u64 = 20_000_000;

/// Where the test clock starts when a case says nothing: a fixed instant, so runs
/// are repeatable.
const DEFAULT_TIME_NS: u64 = 1_000_000_000_000;

fn one() -> u32 {
    1
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct MapEntry {
    map: String,
    key: String,
    value: Option<String>,
    #[serde(default)]
    absent: bool,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct Expect {
    verdict: Option<toml::Value>,
    returned: Option<bool>,
    result: Option<i64>,
    packet: Option<String>,
    #[serde(default)]
    map: Vec<MapEntry>,
}

/// The outcome of a test run.
#[derive(Debug, Default, serde::Serialize)]
pub struct Report {
    pub passed: Vec<String>,
    pub failed: Vec<(String, Vec<String>)>,
    pub filtered: usize,
}

pub fn run_tests(ctx: &Ctx, project: &Project, filter: Option<&str>) -> Result<Report> {
    crate::ops::require_privileges("test")?;
    let files = test_files(&project.dir)?;
    let m = &project.manifest;
    let id = m.package.id();
    if files.is_empty() {
        ctx.ui.warn(format!("{id} has no tests: add tests/<name>.test.toml (see `ebpkg test --help`)"));
        return Ok(Report::default());
    }
    // Every file is read and checked before anything is built or run.
    let suites = load_suites(project, &files, filter)?;
    crate::ops::kernel_fit::refuse_unmet(&crate::ops::kernel_fit::RunningKernel::current(), [m])?;
    let builder = crate::ops::build::builder(ctx, &BuildOptions::default())?;
    // (Packing the project to hash it is not free: once.)
    let digest = project.digest()?;
    let objects =
        crate::ops::build::build_with(ctx, &builder, &[BuildInput { root: &project.dir, digest, manifest: m }])?
            .pop()
            .unwrap_or_default();

    // Every run on one CPU, so per-CPU maps add up across the runs of a case.
    pin_to_current_cpu()?;
    let root = crate::ops::TempRoot::create(ctx, "test")?;
    let rt = &root.root.rt;
    let package = m.package.name.to_string();
    let version = m.package.version.to_string();
    let mut ids = std::collections::BTreeMap::new();
    for obj in objects.iter().filter(|o| !o.programs.is_empty()) {
        let elf = obj.read()?;
        let regs = rt
            .register_object(&ProgramObject {
                package: &package,
                version: &version,
                object_name: &obj.object_name,
                elf: &elf,
                hook: obj.hook,
            })
            // The runtime's error decides the exit code (ids exhausted is a limit, not the kernel).
            .map_err(|e| anyhow::Error::new(e).context(format!("registering the programs of {id}")))?;
        for r in regs {
            ids.insert(r.name.clone(), (r.id, r.hook));
        }
    }

    // The native tier: the same cases with each chain compiled with the body of
    // the program it calls, by the same builder (one toolchain, found once). A
    // chain the native compiler cannot take is said and tested in the VM alone;
    // a missing tool fails the tier.
    let native = crate::ops::native::ClangCompiler::new(builder);
    let planned = ebpkg_deploy::PlannedPackage {
        id: m.id(),
        source: ebpkg_deploy::PackageSource::Path(project.dir.clone()),
        checksum: digest,
        root: project.dir.clone(),
        manifest: m.clone(),
        objects: objects.clone(),
        signer: None,
    };
    let mut not_native = std::collections::BTreeSet::new();

    let mut report = Report::default();
    for (rel, parsed) in suites {
        for case in parsed.cases {
            let full = format!("{rel}: {}", case.name);
            if filter.is_some_and(|f| !full.contains(f)) {
                report.filtered += 1;
                continue;
            }
            rt.clear_package_maps(&package, &version)?;
            let mut problems =
                run_case(rt, project, &package, &version, &ids, &case, None).unwrap_or_else(|e| vec![format!("{e:#}")]);
            if !not_native.contains(&case.program) {
                rt.clear_package_maps(&package, &version)?;
                match run_case(rt, project, &package, &version, &ids, &case, Some((&native, &planned))) {
                    Ok(found) => problems.extend(found.into_iter().map(|p| format!("native tier: {p}"))),
                    Err(e) => match e.downcast_ref::<NotNative>() {
                        Some(NotNative(reason)) => {
                            ctx.ui.warn(format!("{id} {}: not tested natively: {reason}", case.program));
                            not_native.insert(case.program.clone());
                        }
                        None => problems.push(format!("native tier: {e:#}")),
                    },
                }
            }
            if problems.is_empty() {
                ctx.ui.status("Passed", &full);
                report.passed.push(full);
            } else {
                ctx.ui.status("FAILED", &full);
                for p in &problems {
                    crate::ui::stderr(&format!("             {p}\n"));
                }
                report.failed.push((full, problems));
            }
        }
    }
    Ok(report)
}

/// Reads and checks every test file: its size, its syntax, the paths it names and
/// the work its cases that pass `filter` ask for.
fn load_suites(project: &Project, files: &[PathBuf], filter: Option<&str>) -> Result<Vec<(String, TestFile)>> {
    let mut suites = Vec::with_capacity(files.len());
    let (mut runs, mut repeats) = (0usize, 0u64);
    for file in files {
        let rel = file.strip_prefix(&project.dir).unwrap_or(file).display().to_string();
        let text = ebpkg_fs::read_text(file, MAX_TEST_FILE_BYTES)?;
        let parsed: TestFile =
            toml::from_str(&text).map_err(|e| fail(Failure::Input, format!("{rel}: {}", e.to_string().trim_end())))?;
        for case in &parsed.cases {
            let at = |what: String| fail(Failure::Input, format!("{rel}: case `{}`: {what}", case.name));
            let steps = std::iter::once((case.repeat, case.pcap.as_deref()))
                .chain(case.then.iter().map(|s| (s.repeat.unwrap_or(1), s.pcap.as_deref())));
            for (repeat, pcap) in steps {
                if repeat > MAX_REPEAT {
                    return Err(at(format!(
                        "repeat = {repeat} is more than {MAX_REPEAT}, the most one run may repeat; \
                         lower it (a benchmark belongs in ./ci/bench, not in a test)"
                    )));
                }
                if let Some(pcap) = pcap {
                    package_file(project, pcap).map_err(|e| at(format!("pcap = {pcap:?}: {e}")))?;
                }
                // Only what the filter lets through will run.
                if filter.is_none_or(|f| format!("{rel}: {}", case.name).contains(f)) {
                    runs += 1;
                    repeats += u64::from(repeat.max(1));
                }
            }
        }
        suites.push((rel, parsed));
    }
    if runs > MAX_RUNS {
        return Err(fail(
            Failure::Input,
            format!(
                "the tests ask for {runs} runs (cases and their `then` steps), more than the {MAX_RUNS} \
                 one `ebpkg test` makes; remove cases, or run some with a filter"
            ),
        ));
    }
    if repeats > MAX_TOTAL_REPEATS {
        return Err(fail(
            Failure::Input,
            format!(
                "the tests repeat their runs {repeats} times in all, more than the {MAX_TOTAL_REPEATS} \
                 one `ebpkg test` makes; lower the `repeat` of the largest cases"
            ),
        ));
    }
    Ok(suites)
}

/// The path of a file of the package named by `rel` in a test file, by the rules
/// every path in a package follows (SPEC.md §1: relative, no `..`, no absolute or
/// home paths), and which, links resolved, is still inside the package.
fn package_file(project: &Project, rel: &str) -> Result<PathBuf> {
    let rel = ebpkg_spec::types::RelPath::new(rel).map_err(|e| anyhow::anyhow!("{e}"))?;
    let root = project.dir.canonicalize().with_context(|| format!("cannot resolve {}", project.dir.display()))?;
    let path = root.join(rel.as_str());
    let real = path.canonicalize().with_context(|| format!("cannot open {}", path.display()))?;
    if !real.starts_with(&root) {
        anyhow::bail!(
            "{} leads to {}, outside the package; a package's files must be inside its directory",
            path.display(),
            real.display()
        );
    }
    Ok(real)
}

fn pin_to_current_cpu() -> Result<()> {
    let mut only = rustix::thread::CpuSet::new();
    only.set(rustix::thread::sched_getcpu());
    rustix::thread::sched_setaffinity(None, &only).context("cannot pin the test runs to one CPU")
}

fn test_files(dir: &Path) -> Result<Vec<PathBuf>> {
    let tests = dir.join("tests");
    let mut out: Vec<PathBuf> = match std::fs::read_dir(&tests) {
        Ok(rd) => rd
            .flatten()
            .map(|e| e.path())
            .filter(|p| p.file_name().is_some_and(|n| n.to_string_lossy().ends_with(".test.toml")))
            .collect(),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Vec::new(),
        Err(e) => return Err(e).with_context(|| format!("cannot list {}", tests.display())),
    };
    out.sort();
    Ok(out)
}

/// The runs of a case, in order.
fn runs<'a>(project: &Project, case: &'a Case) -> Result<Vec<Run<'a>>> {
    let first = packet(project, case.packet.as_deref(), case.pcap.as_deref(), case.pcap_index)?;
    let mut time = case.time_ns.unwrap_or(DEFAULT_TIME_NS);
    let mut out = vec![Run {
        args: &case.args,
        packet: first.clone(),
        repeat: case.repeat,
        time_ns: time,
        setup: &case.setup,
        expect: &case.expect,
    }];
    for (i, step) in case.then.iter().enumerate() {
        time = match (step.time_ns, step.advance_ns) {
            (Some(_), Some(_)) => anyhow::bail!("then[{i}]: give `time-ns` or `advance-ns`, not both"),
            (Some(t), None) => t,
            (None, Some(d)) => time.saturating_add(d),
            (None, None) => time,
        };
        let packet = if step.packet.is_some() || step.pcap.is_some() {
            packet(project, step.packet.as_deref(), step.pcap.as_deref(), step.pcap_index.unwrap_or(0))?
        } else {
            first.clone()
        };
        out.push(Run {
            args: step.args.as_deref().unwrap_or(&case.args),
            packet,
            // Repeats are about one run, not a default for the later ones.
            repeat: step.repeat.unwrap_or(1),
            time_ns: time,
            setup: &step.setup,
            expect: &step.expect,
        });
    }
    Ok(out)
}

/// Why a case's chain has no native program (the program cannot be inlined):
/// a warning, not a failure.
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
struct NotNative(String);

/// How a case's chains run: interpreted (`None`), or compiled natively.
type NativeTier<'a> = Option<(&'a crate::ops::native::ClangCompiler, &'a ebpkg_deploy::PlannedPackage)>;

/// Runs one case (every run of it); returns what did not match, each prefixed
/// with the run it comes from when there are several.
fn run_case(
    rt: &Runtime,
    project: &Project,
    package: &str,
    version: &str,
    ids: &std::collections::BTreeMap<String, (hike_runtime::ProgId, Hook)>,
    case: &Case,
    native: NativeTier<'_>,
) -> Result<Vec<String>> {
    let (id, hook) = *ids.get(&case.program).ok_or_else(|| {
        anyhow::anyhow!(
            "no program `{}` in this package (it has: {})",
            case.program,
            ids.keys().cloned().collect::<Vec<_>>().join(", ")
        )
    })?;
    let runs = runs(project, case)?;
    let several = runs.len() > 1;
    let mut problems = Vec::new();
    for (i, run) in runs.iter().enumerate() {
        let found = run_once(rt, package, version, (id, &case.program), hook, run, native)?;
        problems.extend(found.into_iter().map(|p| if several { format!("run {}: {p}", i + 1) } else { p }));
    }
    Ok(problems)
}

/// One run: a chain calling the program with the run's arguments, the clock
/// set, map setup written, the packet run, expectations checked.
fn run_once(
    rt: &Runtime,
    package: &str,
    version: &str,
    (id, program): (hike_runtime::ProgId, &str),
    hook: Hook,
    run: &Run<'_>,
    native: NativeTier<'_>,
) -> Result<Vec<String>> {
    if run.args.len() > 4 {
        anyhow::bail!("a program takes at most 4 arguments, not {}", run.args.len());
    }
    let mut asm = String::from("r9 = 0\n");
    for (i, a) in run.args.iter().enumerate() {
        asm.push_str(&format!("r{} = {a} ll\n", i + 1));
    }
    asm.push_str(&format!("call prog {id}, {}\nr9 = {RETURNED}\nexit\n", run.args.len()));
    let insns = hike_bytecode::asm::assemble(&asm).map_err(|e| anyhow::anyhow!("test chain: {e}"))?;
    let chain =
        rt.install_chain(&ChainSpec { name: "ebpkg_test", owner: "ebpkg test", hook, insns: &insns, nargs: 0 })?;
    let result = (|| -> Result<Vec<String>> {
        if let Some((compiler, planned)) = native {
            let chains = [(chain.0, insns.clone())].into_iter().collect();
            let programs = [(id.0, (planned, program))].into_iter().collect();
            let request =
                ebpkg_deploy::NativeRequest { hook, chain, name: "ebpkg_test", chains: &chains, programs: &programs };
            let build = ebpkg_deploy::NativeCompiler::compile(compiler, &request).map_err(NotNative)?;
            rt.install_native(&hike_runtime::NativeObject {
                chain,
                entry: &build.entry,
                elf: &build.elf,
                modules: &build.modules,
            })
            .map_err(|e| NotNative(e.to_string()))?;
        }
        rt.set_clock(Clock::Frozen(run.time_ns))?;
        for s in run.setup {
            let map = rt.package_map(package, version, &s.map)?;
            let value = s.value.as_deref().ok_or_else(|| anyhow::anyhow!("setup of map `{}` needs a value", s.map))?;
            map.write(&hex(&s.key, "setup key")?, &hex(value, "setup value")?)?;
        }
        let out = rt.test_run_chain(hook, chain, &run.packet, run.repeat.max(1))?;
        check(rt, package, version, hook, run.expect, &out)
    })();
    rt.remove_chain(chain)?;
    result
}

/// What of `expect` the run did not do.
fn check(
    rt: &Runtime,
    package: &str,
    version: &str,
    hook: Hook,
    expect: &Expect,
    run: &hike_runtime::TestRun,
) -> Result<Vec<String>> {
    let mut problems = Vec::new();
    let returned = run.regs[9] == RETURNED;
    if let Some(v) = &expect.verdict {
        let want = verdict_code(v, hook)?;
        if want != run.verdict {
            problems.push(format!(
                "verdict: expected {} ({want}), got {} ({})",
                verdict_name(want, hook),
                verdict_name(run.verdict, hook),
                run.verdict
            ));
        }
    }
    if let Some(want) = expect.returned
        && want != returned
    {
        problems.push(if want {
            "the program was expected to return to the chain, but it ended the packet".to_owned()
        } else {
            "the program was expected to end the packet, but it returned to the chain".to_owned()
        });
    }
    if let Some(want) = expect.result {
        if !returned {
            problems.push(format!("result: expected {want}, but the program ended the packet"));
        } else if run.regs[0] != want as u64 {
            problems.push(format!("result: expected {want}, got {}", run.regs[0] as i64));
        }
    }
    if let Some(want) = &expect.packet {
        let want = hex(want, "expected packet")?;
        if want != run.packet {
            problems.push(format!(
                "packet: expected\n               {}\n             got\n               {}",
                to_hex(&want),
                to_hex(&run.packet)
            ));
        }
    }
    for e in &expect.map {
        let map = rt.package_map(package, version, &e.map)?;
        let key = hex(&e.key, "expected map key")?;
        let got = map.read(&key, run.cpu)?;
        match (&e.value, e.absent, got) {
            (_, true, Some(v)) => {
                problems.push(format!("map {}[{}]: expected no entry, got {}", e.map, e.key, to_hex(&v)))
            }
            (Some(want), false, got) => {
                let want = hex(want, "expected map value")?;
                if got.as_deref() != Some(want.as_slice()) {
                    problems.push(format!(
                        "map {}[{}]: expected {}, got {}",
                        e.map,
                        e.key,
                        to_hex(&want),
                        got.map_or("no entry".to_owned(), |g| to_hex(&g))
                    ));
                }
            }
            (None, false, _) => {
                anyhow::bail!("expected map entry {}[{}] needs `value` or `absent = true`", e.map, e.key)
            }
            _ => {}
        }
    }
    Ok(problems)
}

fn hex(s: &str, what: &str) -> Result<Vec<u8>> {
    let digits: String = s.chars().filter(|c| !c.is_whitespace() && *c != ':').collect();
    ::hex::decode(&digits).map_err(|e| anyhow::anyhow!("{what} `{s}`: {e}"))
}

fn to_hex(b: &[u8]) -> String {
    b.iter().map(|x| format!("{x:02x}")).collect::<Vec<_>>().join(" ")
}

fn packet(project: &Project, hex_packet: Option<&str>, pcap: Option<&str>, index: usize) -> Result<Vec<u8>> {
    match (hex_packet, pcap) {
        (Some(h), None) => hex(h, "packet"),
        (None, Some(p)) => {
            let path = package_file(project, p)?;
            let bytes = ebpkg_fs::read(&path, MAX_PCAP_BYTES)?;
            pcap_packet(&bytes, index).with_context(|| p.to_owned())
        }
        _ => anyhow::bail!("give the packet as `packet = \"<hex>\"` or `pcap = \"<file>\"` (one of them)"),
    }
}

/// Packet `index` of a classic pcap file (either byte order, micro- or nanosecond).
fn pcap_packet(bytes: &[u8], index: usize) -> Result<Vec<u8>> {
    let magic = bytes.get(..4).ok_or_else(|| anyhow::anyhow!("not a pcap file: too short"))?;
    let le = match magic {
        [0xd4, 0xc3, 0xb2, 0xa1] | [0x4d, 0x3c, 0xb2, 0xa1] => true,
        [0xa1, 0xb2, 0xc3, 0xd4] | [0xa1, 0xb2, 0x3c, 0x4d] => false,
        _ => anyhow::bail!("not a pcap file (pcapng is not supported; convert with `editcap -F pcap`)"),
    };
    let u32_at = |at: usize| -> Result<u32> {
        let b: [u8; 4] = bytes
            .get(at..at + 4)
            .and_then(|s| s.try_into().ok())
            .ok_or_else(|| anyhow::anyhow!("truncated pcap file"))?;
        Ok(if le { u32::from_le_bytes(b) } else { u32::from_be_bytes(b) })
    };
    let mut at = 24;
    let mut i = 0;
    while at + 16 <= bytes.len() {
        let len = u32_at(at + 8)? as usize;
        let data = bytes.get(at + 16..at + 16 + len).ok_or_else(|| anyhow::anyhow!("truncated pcap record {i}"))?;
        if i == index {
            return Ok(data.to_vec());
        }
        at += 16 + len;
        i += 1;
    }
    anyhow::bail!("it has {i} packet(s); there is no packet {index}")
}

fn verdict_code(v: &toml::Value, hook: Hook) -> Result<u32> {
    if let Some(n) = v.as_integer() {
        return u32::try_from(n).map_err(|_| anyhow::anyhow!("verdict {n} is out of range"));
    }
    let s = v.as_str().unwrap_or_default();
    hook.verdict_code(s).ok_or_else(|| {
        anyhow::anyhow!(
            "unknown verdict `{s}` for {}: use {}",
            hook.name(),
            hook.verdict_names().collect::<Vec<_>>().join(", ")
        )
    })
}

fn verdict_name(code: u32, hook: Hook) -> &'static str {
    hook.verdict_name(code).unwrap_or("other")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pcap_records_in_both_byte_orders() {
        let mut f = vec![0xd4, 0xc3, 0xb2, 0xa1];
        f.extend([0u8; 20]);
        for p in [&[1u8, 2, 3][..], &[4, 5]] {
            f.extend([0u8; 8]);
            f.extend((p.len() as u32).to_le_bytes());
            f.extend((p.len() as u32).to_le_bytes());
            f.extend(p);
        }
        assert_eq!(pcap_packet(&f, 1).unwrap(), vec![4, 5]);
        assert!(pcap_packet(&f, 2).unwrap_err().to_string().contains("it has 2 packet(s)"));
        assert!(pcap_packet(&f[..30], 0).is_err());
        assert!(pcap_packet(b"garbage!", 0).is_err());
    }

    /// The pcap reader takes files from packages: any bytes, and any mangling of a
    /// valid file (lengths that lie, truncation, huge indexes), give a packet or an
    /// error, never a panic or an allocation the file does not back.
    #[test]
    fn pcap_reader_never_panics_on_mangled_files() {
        let mut valid = vec![0xa1, 0xb2, 0xc3, 0xd4];
        valid.extend([0u8; 20]);
        for len in [3u32, 60] {
            valid.extend([0u8; 8]);
            valid.extend(len.to_be_bytes());
            valid.extend(len.to_be_bytes());
            valid.extend(std::iter::repeat_n(7u8, len as usize));
        }
        let mut state = 0x9e37_79b9_7f4a_7c15u64;
        let mut next = move || {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            state
        };
        for _ in 0..20_000 {
            let mut f = valid.clone();
            for _ in 0..(next() % 4) {
                let at = (next() as usize) % f.len();
                f[at] = next() as u8;
            }
            f.truncate((next() as usize) % (f.len() + 1));
            let index = if next() % 8 == 0 { usize::MAX - (next() % 3) as usize } else { (next() % 4) as usize };
            if let Ok(packet) = pcap_packet(&f, index) {
                assert!(packet.len() <= f.len());
            }
        }
    }

    #[test]
    fn hex_allows_spaces_and_colons() {
        assert_eq!(hex("02:00 0a", "x").unwrap(), vec![2, 0, 10]);
        assert!(hex("0", "x").is_err());
        assert!(hex("zz", "x").is_err());
    }
}
